"""Tests of the search (SPEC sections 3, 5, 7, 8): DCMAP against breadth-first search
and brute force on random graphs, the paper's example, generatecombos, the lower
bound, the expansion tree, limits and the anytime trace, disconnected networks,
the result JSON, determinism.

Random graphs and user costs come from tests/search_costs.py (seeded, and hashed
with zlib.crc32, so every run sees the same graphs and costs).
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import sys
import time
from collections import Counter

import pytest

from dcmap_dist.search.combinations import generatecombos
from dcmap_dist.cost.base import evaluate_mapping
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import load_cost
from dcmap_dist.search.problem import Branch, Problem, joins_to_clusters
from dcmap_dist.search.explorer import BranchQueue, Explorer
from dcmap_dist.search.linking import LinkShard, trail_joins
from dcmap_dist.search.limits import Limits, Stopwatch, memory_mb
from dcmap_dist.io.load import load_network
from dcmap_dist.model.mappings import check_mapping, enumerate_mappings
from dcmap_dist.model.network import Network
from dcmap_dist.run import serial as search_module
from dcmap_dist.solve import solve
from dcmap_dist.model.topology import Topology

from search_costs import (
    COST_MODELS,
    has_long_arc,
    hash_cost,
    partition,
    random_network,
    same_cluster_cost,
    tie_cost,
    trace_problem,
)

REL = 1e-9
SCHEMES = ("merge", "single")
METHODS = ("dcmap", "bfs", "brute")

N_GRAPHS = 300
CHUNK = 30
CHUNKS = [range(start, start + CHUNK) for start in range(0, N_GRAPHS, CHUNK)]

PAPER_OPTIMAL = {
    partition([["A"], ["F"], ["D", "G"], ["E"], ["B"], ["C"]]),
    partition([["A", "F"], ["D", "G"], ["E"], ["B"], ["C"]]),
    partition([["A", "D", "G"], ["F"], ["E"], ["B"], ["C"]]),
}


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=0.0)


def total_cost(network, clusters, model) -> float:
    if not hasattr(model, "evaluate"):
        from dcmap_dist.cost.user import FunctionCost
        model = FunctionCost(model)
    return sum(c.cost for c in evaluate_mapping(network, clusters, model))


def check_result(network, cost, result, label: str) -> list[str]:
    """Internal consistency of one SolveResult; returns the problems found."""
    problems = []
    parts = [partition(s.clusters) for s in result.solutions]
    if not result.proven_optimal:
        problems.append(f"{label}: not proven ({result.stop_reason})")
    if len(parts) != len(set(parts)):
        dupes = [p for p, k in Counter(parts).items() if k > 1]
        problems.append(f"{label}: {len(dupes)} partition(s) reported more than once, e.g. "
                        f"{sorted(map(sorted, dupes[0]))}")
    if not parts:
        problems.append(f"{label}: no solutions")
    for s in result.solutions:
        evaluated = total_cost(network, s.clusters, cost)
        if not (close(evaluated, s.cost) and close(s.cost, result.optimal_cost)):
            problems.append(f"{label}: solution {s.clusters} says {s.cost}, evaluates to {evaluated}, "
                            f"optimum {result.optimal_cost}")
    return problems


def compare_methods(network, cost, scheme, methods=METHODS, **kwargs) -> list[str]:
    """Solve with every method; return the disagreements (empty if all agree)."""
    results = {m: solve(network, cost, scheme, m, **kwargs) for m in methods}
    problems = []
    for m, r in results.items():
        problems += check_result(network, cost, r, f"{network.name}/{scheme}/{m}")
    reference = results[methods[-1]]
    ref_set = {partition(s.clusters) for s in reference.solutions}
    for m, r in results.items():
        got = {partition(s.clusters) for s in r.solutions}
        if not close(r.optimal_cost, reference.optimal_cost):
            problems.append(f"{network.name}/{scheme}: {m} optimum {r.optimal_cost} != "
                            f"{methods[-1]} {reference.optimal_cost}")
        elif got != ref_set:
            problems.append(f"{network.name}/{scheme}: {m} found {len(got)} optimal partitions, "
                            f"{methods[-1]} {len(ref_set)}; missing {[sorted(map(sorted, p)) for p in ref_set - got][:2]}, "
                            f"extra {[sorted(map(sorted, p)) for p in got - ref_set][:2]}")
    return problems


# =========================================================================== 1. randomized exactness


def test_random_graph_family_is_varied():
    """The 300 graphs cover 5..10 nodes, 1..4 states, observed nodes, and long arcs."""
    sizes, states, long_count, observed = Counter(), Counter(), 0, 0
    for seed in range(N_GRAPHS):
        net = random_network(seed)
        assert len(net.components()) == 1, f"random graph {seed} is not connected"
        sizes[len(net.nodes)] += 1
        states.update(net.states.values())
        long_count += has_long_arc(net)
        observed += bool(net.observed)
    assert set(sizes) == set(range(5, 11))
    assert set(states) == {1, 2, 3, 4}
    assert observed >= 50
    print(f"\n{long_count}/{N_GRAPHS} random graphs have an arc that skips layers; "
          f"{observed} have observed nodes; sizes {dict(sorted(sizes.items()))}")
    assert long_count >= 100
    # and the random graphs are reproducible
    a, b = random_network(17), random_network(17)
    assert (a.nodes, a.edges, a.states, a.observed) == (b.nodes, b.edges, b.states, b.observed)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", CHUNKS, ids=lambda r: f"seeds{r.start}-{r.stop - 1}")
def test_dcmap_bfs_and_brute_force_agree(seeds):
    """SPEC 3 and 5: same optimum and same SET of optimal partitions, each reported
    once, proven, every solution's cost as evaluated; for both schemes and four cost
    models (dcmap cpt/paper, an arbitrary context hash, small tied integers)."""
    problems = []
    for seed in seeds:
        network = random_network(seed)
        for scheme in SCHEMES:
            for name, cost in COST_MODELS.items():
                found = compare_methods(network, cost, scheme)
                problems += [f"[seed {seed}, cost {name}] {p}" for p in found]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("seeds", [range(0, 20), range(150, 170)], ids=["seeds0-19", "seeds150-169"])
def test_alpha_and_seed_do_not_change_the_result(seeds):
    problems = []
    for seed in seeds:
        network = random_network(seed)
        for scheme in SCHEMES:
            for name in ("dcmap-cpt", "hash", "tie"):
                cost = COST_MODELS[name]
                base = solve(network, cost, scheme)
                base_set = {partition(s.clusters) for s in base.solutions}
                for alpha, rseed in [(0.0, 0), (1.0, 0), (0.3, 7), (0.9, 123), (0.6, 99)]:
                    r = solve(network, cost, scheme, alpha=alpha, seed=rseed)
                    got = {partition(s.clusters) for s in r.solutions}
                    if not (r.proven_optimal and close(r.optimal_cost, base.optimal_cost)
                            and got == base_set and len(got) == len(r.solutions)):
                        problems.append(f"seed {seed} {scheme} {name} alpha={alpha} seed={rseed}: "
                                        f"{r.optimal_cost} ({len(got)}) vs {base.optimal_cost} ({len(base_set)})")
    assert not problems, "\n".join(problems[:20])


def test_exactness_on_a_cost_that_rewards_merging():
    """A bare-cost function (message = node set) that rewards big clusters."""
    problems = []
    for seed in range(300, 330):
        network = random_network(seed)
        for scheme in SCHEMES:
            problems += compare_methods(network, same_cluster_cost, scheme)
    assert not problems, "\n".join(problems[:20])


# =========================================================================== 2. the paper's example


@pytest.fixture(scope="module")
def paper() -> Network:
    return load_network("paper-example")


@pytest.mark.parametrize("order", ["cpt", "paper"])
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("method", METHODS)
def test_paper_example_optimum(paper, order, scheme, method):
    r = solve(paper, "dcmap", scheme, method, order=order)
    assert r.proven_optimal and r.stop_reason == "finished"
    assert r.optimal_cost == pytest.approx(54.0, rel=REL)
    parts = [partition(s.clusters) for s in r.solutions]
    assert len(parts) == 3 and set(parts) == PAPER_OPTIMAL
    for s in r.solutions:
        assert s.cost == pytest.approx(54.0, rel=REL)
        assert s.clusters == sorted(sorted(c) for c in s.clusters)  # canonical form


# Iteration counts on the paper example, recorded so that a change is noticed. The
# paper's own figures (315 for DCMAP, optimal mappings at 54/84/86 for BFS) count
# differently: here one iteration is one expanded proposal of the corrected search.
PAPER_ITERATIONS = {
    # (scheme, method): (iterations, first_optimal_iteration)
    ("merge", "dcmap"): (9, 8),
    ("single", "dcmap"): (9, 8),
    ("merge", "bfs"): (29, 23),
    ("single", "bfs"): (29, 23),
}


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_paper_example_iteration_counts(paper, order):
    got = {}
    for scheme, method in PAPER_ITERATIONS:
        r = solve(paper, "dcmap", scheme, method, order=order)
        got[scheme, method] = (r.iterations, r.first_optimal_iteration)
    print(f"\npaper example, order {order}: (iterations, first optimal iteration) = {got}")
    assert got == PAPER_ITERATIONS


def test_paper_example_single_scheme_is_a_subset_of_merge(paper):
    topo = Topology(paper)
    merge = set(enumerate_mappings(paper, "merge"))
    single = set(enumerate_mappings(paper, "single"))
    assert len(merge) == 56 and len(single) == 48
    assert single <= merge
    # and the search tree of each scheme reaches exactly those
    for scheme, expected in (("merge", merge), ("single", single)):
        leaves = Counter(leaf_clusters(Problem(paper, DcmapCost(), scheme), leaf)
                         for leaf in walk_tree(Problem(paper, DcmapCost(), scheme))[1])
        assert set(leaves) == {tuple(sorted(m)) for m in expected}
        assert set(leaves.values()) == {1}
    assert topo.n == 7


# =========================================================================== 3. generatecombos


def test_generatecombos_paper_example():
    """Equation egUhat: proposals {2: X2, X3; 3: X1, X2, X3}. X1 is proposed only by
    cluster 3 (Z1 = {X1}); nothing is mapped yet (Z3 = {})."""
    proposals = {2: ["X2", "X3"], 3: ["X1", "X2", "X3"]}
    only = {x for x in proposals[3] if all(x not in proposals[k] for k in proposals if k != 3)}
    assert only == {"X1"}
    combos = generatecombos(proposals[3], only, set())
    assert len(combos) == len(set(combos)) == 4
    assert set(combos) == {frozenset({"X1"}), frozenset({"X1", "X2"}), frozenset({"X1", "X3"}),
                           frozenset({"X1", "X2", "X3"})}
    # as cluster vectors u(X1, X2, X3): a node not taken by cluster 3 goes to cluster 2
    u = sorted(tuple(3 if x in c else 2 for x in ("X1", "X2", "X3")) for c in combos)
    assert u == [(3, 2, 2), (3, 2, 3), (3, 3, 2), (3, 3, 3)]
    # the first combination is Z1 alone
    assert combos[0] == frozenset({"X1"})


def test_generatecombos_with_nodes_mapped_elsewhere():
    # X2 already mapped elsewhere (Z3): only X3 is optional
    combos = generatecombos(["X1", "X2", "X3"], {"X1"}, {"X2"})
    assert sorted(map(sorted, combos)) == [["X1"], ["X1", "X3"]]
    # everything already decided: one combination, Z1 itself
    assert generatecombos(["X1", "X2"], {"X1"}, {"X2"}) == [frozenset({"X1"})]
    # nothing forced: the empty combination is included (the cluster takes no node)
    combos = generatecombos(["a", "b", "c"], set(), {"c"})
    assert set(combos) == {frozenset(), frozenset("a"), frozenset("b"), frozenset("ab")}
    # subsets of size k for every k: 2^|Z2| combinations, no duplicates
    z = [f"x{i}" for i in range(6)]
    combos = generatecombos(z, {"x0"}, {"x5"})
    assert len(combos) == len(set(combos)) == 2 ** 4
    assert all("x0" in c and "x5" not in c for c in combos)


# =========================================================================== 4./5. expansion tree


def walk_tree(problem: Problem):
    """The whole expansion tree (no pruning), as the search builds it.

    Returns (records, leaves): ``records`` holds (branch, lower bound, min complete
    descendant cost) for every branch, ``leaves`` every complete branch.
    """
    records = []
    leaves = []

    def rec(branch) -> float:
        if problem.is_complete(branch):
            leaves.append(branch)
            records.append((branch, problem.lower_bound(branch), branch.cost))
            return branch.cost
        best = math.inf
        if branch.layer_done:
            advanced = branch.advanced()
            best = rec(advanced)
        else:
            proposal = problem.next_proposal(branch)
            assert proposal >= 0, "an incomplete branch has no proposal"
            children = problem.expand(branch, proposal)
            assert children, "an incomplete branch has no children"
            for child in children:
                best = min(best, rec(child))
        records.append((branch, problem.lower_bound(branch), best))
        return best

    rec(problem.root())
    return records, leaves


def leaf_clusters(problem: Problem, leaf) -> tuple[int, ...]:
    histories = list(trail_joins(leaf.trail, {}))
    assert len(histories) == 1
    return joins_to_clusters(problem.topo, histories[0][0])


class BoundedSameCluster:
    """A user model with its own admissible node_lower_bounds: cost 1 + 0.5 per node
    + 2 per child cluster-layer in another cluster; every node pays at least 0.5."""

    name = "bounded"

    def params(self):
        return {}

    def evaluate(self, ctx):
        return same_cluster_cost(ctx), ctx.nodes

    def node_lower_bounds(self, graph):
        return {x: 0.5 for x in graph.nodes}


LB_MODELS = {
    "cpt": DcmapCost("cpt"),
    "paper": DcmapCost("paper"),
    "cpt-add0": DcmapCost("cpt", addition=0.0),
    "paper-add1.5": DcmapCost("paper", addition=1.5),
    "user": BoundedSameCluster(),
}


def bound_violations(model, seeds) -> tuple[list[str], int, int]:
    """Walk every branch of random networks: the branches whose bound exceeds their true
    cheapest completion, and how many branches had a positive bound, of how many."""
    violations = []
    positive = 0
    branches = 0
    for seed in seeds:
        network = random_network(seed, 5, 8)
        if seed % 2:  # more observed nodes
            network = network.with_observed(network.nodes[:2])
        for scheme in SCHEMES:
            problem = Problem(network, model, scheme)
            records, leaves = walk_tree(problem)
            for branch, bound, best in records:
                branches += 1
                # the remembered bound is the bound computed afresh
                assert bound == problem.bound._compute(branch.layer, branch.assigned, branch.frontier)
                assert best < math.inf
                rest = best - branch.cost
                if bound > rest + 1e-9 * max(1.0, abs(best)):
                    violations.append(f"seed {seed} {scheme}: bound {bound} > true rest {rest} "
                                      f"(layer {branch.layer}, assigned {branch.assigned})")
                if bound > 0:
                    positive += 1
                # the branch's stored bound is its cost plus the lower bound
                if not problem.is_complete(branch):
                    assert branch.bound == pytest.approx(branch.cost + bound, rel=1e-12)
                    if isinstance(model, DcmapCost):
                        assert bound > 0  # every unplaced node pays at least its CPT
    return violations, positive, branches


@pytest.mark.parametrize("model_name", list(LB_MODELS))
def test_lower_bound_is_admissible(model_name):
    violations, positive, branches = bound_violations(LB_MODELS[model_name], range(400, 430))
    assert not violations, "\n".join(violations[:20])
    assert positive > branches // 4


class RaisedAbsorptions(DcmapCost):
    """The dcmap model with its absorption bound raised by 2%: no longer admissible."""

    def absorption_lower_bound(self, graph, absorber, children):
        return 1.02 * super().absorption_lower_bound(graph, absorber, children)


class RaisedGroupings(DcmapCost):
    """The dcmap model with its grouping bound raised by half: no longer admissible. (The
    grouping part is the largest over the frontier and binds a whole branch's bound less
    often than the others; raised by 2% it is caught by the oracle test in test_cost.py.)"""

    def grouping_lower_bound(self, graph, nodes, message, parents, layer_nodes):
        return 1.5 * super().grouping_lower_bound(graph, nodes, message, parents, layer_nodes)


@pytest.mark.parametrize("model, seeds", [(RaisedAbsorptions(), range(400, 430)), (RaisedGroupings(), range(400, 500))],
                         ids=["absorptions", "groupings"])
def test_the_admissibility_walk_catches_a_bound_part_raised(model, seeds):
    violations, _, _ = bound_violations(model, seeds)
    assert violations


def test_the_bound_charges_every_absorbing_layer_and_the_absorptions_to_come():
    # the leaf c has parents b (layer 1) and a (layer 2): both cluster-layers absorb
    # c's message; b (parents a and r) is absorbed by the cluster-layer(s) of layer 2
    states = {"a": 2, "r": 3, "b": 3, "c": 2}
    network = Network("skip", list(states), states, [("a", "b"), ("r", "b"), ("b", "c"), ("a", "c")])
    model = DcmapCost()
    problem = Problem(network, model)
    root = problem.root()  # layer 0 placed: {c}
    (members, message), = root.frontier
    own = model.node_lower_bounds(network)
    absorber = model.absorber_lower_bounds(network)
    absorbed = model.absorbed_lower_bounds(network)
    assert absorber == {"a": 2.0, "r": 3.0, "b": 3.0, "c": 2.0}
    # b: its parents a and r together (0.6 (6 - 5), and cpt(r) (2 - 1) = 3 more: r, eliminated
    # first, with a multiplied in) or apart (0.6 (6 - 2) + 0.6 (6 - 3)); c: b just above, a further up
    assert absorbed == {"b": pytest.approx(0.6 + 3.0), "c": pytest.approx(0.6 * 3 + 0.6 * 4)}
    # c's message {a, b} (6 entries) is absorbed in layer 1 by b's cluster-layer, which
    # keeps all of it (6 to multiply in), and in layer 2 by a's, which keeps {a}
    assert message == frozenset("ab")
    by_b = model.absorption_lower_bound(network, "b", ((frozenset("c"), message),))
    by_a = model.absorption_lower_bound(network, "a", ((frozenset("c"), message),))
    assert (by_b, by_a) == (pytest.approx(6.0), pytest.approx(0.6 * (6 - 2) + 2))
    expected = (own["a"] + own["r"] + own["b"]
                + by_b + by_a  # layers 1 and 2
                + absorber["a"] + absorber["r"]  # each absorbs b's layer (c's is placed)
                + absorbed["b"])  # layer 1's largest; layer 2 has roots only
    assert problem.lower_bound(root) == pytest.approx(expected, rel=1e-12)
    # switched off, the bound is 0
    assert Problem(network, model, lower_bound=False).lower_bound(root) == 0.0


class PerMessage:
    """A user model with only a per-message bound: 1 for every absorption."""

    name = "per-message"

    def evaluate(self, ctx):
        return 1.0 + len(ctx.children), ctx.nodes

    def message_lower_bound(self, graph, nodes, message):
        return 1.0


def test_a_per_message_bound_is_charged_once_per_absorbing_layer():
    # c (placed at the root) has parents in layers 1 (b) and 2 (a): two absorptions;
    # b (unplaced) is charged nothing by this model
    states = {"a": 2, "r": 3, "b": 3, "c": 2}
    network = Network("skip", list(states), states, [("a", "b"), ("r", "b"), ("b", "c"), ("a", "c")])
    problem = Problem(network, load_cost(PerMessage()))
    assert problem.lower_bound(problem.root()) == 2.0


@pytest.mark.parametrize("scheme", SCHEMES)
def test_expansion_tree_generates_every_mapping_once(scheme):
    problems = []
    for seed in range(500, 540):
        network = random_network(seed, 5, 9)
        problem = Problem(network, hash_cost_model(), scheme)
        _, leaves = walk_tree(problem)
        got = Counter(leaf_clusters(problem, leaf) for leaf in leaves)
        expected = {tuple(sorted(m)) for m in enumerate_mappings(network, scheme)}
        dupes = [c for c, k in got.items() if k > 1]
        if dupes or set(got) != expected:
            problems.append(f"seed {seed}: {len(got)} distinct leaves ({len(dupes)} repeated), "
                            f"{len(expected)} feasible mappings")
            continue
        # the incremental cost of each leaf is the cost of its mapping
        topo = problem.topo
        for leaf in leaves:
            clusters = [topo.names(c) for c in leaf_clusters(problem, leaf)]
            evaluated = total_cost(network, clusters, hash_cost)
            if not close(evaluated, leaf.cost):
                problems.append(f"seed {seed}: leaf cost {leaf.cost} != evaluated {evaluated}")
    assert not problems, "\n".join(problems[:20])


def hash_cost_model():
    from dcmap_dist.cost.user import FunctionCost
    return FunctionCost(hash_cost)


# =========================================================================== 6. limits and anytime


def assert_feasible_and_priced(network, result, model):
    assert result.solutions
    for s in result.solutions:
        check_mapping(network, s.clusters)
        assert total_cost(network, s.clusters, model) == pytest.approx(s.cost, rel=REL)
        assert s.cost == pytest.approx(result.optimal_cost, rel=REL)


def assert_trace_ok(trace):
    assert trace
    costs = [t["cost"] for t in trace]
    iterations = [t["iteration"] for t in trace]
    seconds = [t["seconds"] for t in trace]
    assert all(a > b for a, b in zip(costs, costs[1:])), f"trace cost not strictly decreasing: {costs}"
    # two complete mappings found by one expansion may both improve: non-decreasing
    assert all(a <= b for a, b in zip(iterations, iterations[1:])), iterations
    assert all(a <= b for a, b in zip(seconds, seconds[1:])), seconds


def assert_anytime_record(network, result, model, scheme="merge"):
    """The trace's mappings and the bound samples are right, and there are samples."""
    assert_trace_ok(result.trace)
    assert trace_problem(network, result, model, scheme) is None, trace_problem(network, result, model, scheme)
    assert result.bounds, "no lower bound samples"
    assert result.bounds[-1]["lower_bound"] == pytest.approx(result.lower_bound, rel=REL)
    assert [b["seconds"] for b in result.bounds] == sorted(b["seconds"] for b in result.bounds)


@pytest.fixture(scope="module")
def child() -> Network:
    return load_network("child")


def test_max_iterations_stops_unproven(child):
    r = solve(child, max_iterations=50)
    assert not r.proven_optimal
    assert r.stop_reason == "max_iterations"
    assert math.isfinite(r.optimal_cost)
    assert_feasible_and_priced(child, r, DcmapCost())
    assert_trace_ok(r.trace)
    assert r.trace[-1]["cost"] == pytest.approx(r.optimal_cost, rel=REL)
    # the proven optimum (639.4, found by a full run) is no higher
    assert r.optimal_cost >= 639.4 - 1e-6


def test_max_iterations_is_not_exceeded(child, paper):
    r = solve(child, max_iterations=50)
    assert r.iterations <= 50
    r = solve(paper, max_iterations=5)
    assert r.iterations <= 5 and not r.proven_optimal


def test_time_limit_on_two_slice_seagrass():
    network = load_network("seagrass-2tbn", slices=2)
    assert len(network.nodes) == 50
    improvements = []
    start = time.perf_counter()
    r = solve(network, order="paper", time_limit=0.5,
              on_improvement=lambda c, i, s, m: improvements.append((c, i, s, m)))
    elapsed = time.perf_counter() - start
    assert not r.proven_optimal
    assert r.stop_reason == "time_limit"
    assert elapsed < 5.0
    assert math.isfinite(r.optimal_cost)
    assert_feasible_and_priced(network, r, DcmapCost("paper"))
    assert_trace_ok(r.trace)
    # on_improvement heard exactly the trace
    assert [(c, i, m) for c, i, _, m in improvements] == [(t["cost"], t["iteration"], t["clusters"]) for t in r.trace]
    assert_anytime_record(network, r, DcmapCost("paper"))
    assert r.trace[-1]["cost"] == pytest.approx(r.optimal_cost, rel=REL)
    assert r.first_optimal_iteration is not None
    assert r.first_optimal_iteration <= r.iterations


def test_on_progress_on_a_long_run():
    network = load_network("seagrass-2tbn", slices=2)
    calls = []
    r = solve(network, order="paper", time_limit=2.5, on_progress=calls.append)
    assert r.stop_reason == "time_limit"
    assert len(calls) >= 2
    for stats in calls:
        assert {"iterations", "best", "open", "elapsed", "rate"} <= set(stats)
        assert stats["iterations"] >= 0 and stats["elapsed"] >= 0 and stats["rate"] >= 0
        assert math.isfinite(stats["best"])
    iterations = [s["iterations"] for s in calls]
    assert iterations == sorted(iterations)
    assert calls[-1]["iterations"] == r.iterations
    # the bound shown, rescanned or not, never passes the optimum (5332.4, proven elsewhere)
    assert all(s["lower_bound"] <= 5332.4 * (1 + REL) for s in calls)


def test_open_bound_rescans_only_when_due(monkeypatch):
    """A progress report's bound scans the open branches at first, then only once
    SCAN_SHARE times the last scan's time has passed; in between the last value stands."""
    scans = []

    class Open:
        def least_bound(self):
            scans.append(None)
            time.sleep(0.005)
            return float(len(scans))

    bound = search_module.OpenBound(Open())
    assert [bound(), bound(), bound()] == [1.0, 1.0, 1.0]  # the next scan is due in about 0.5 s
    monkeypatch.setattr(search_module, "SCAN_SHARE", 0)
    bound.due = 0.0
    assert [bound(), bound()] == [2.0, 3.0]


@pytest.mark.parametrize("method", ["dcmap", "bfs"])
def test_on_improvement_matches_trace(child, method):
    heard = []
    network = child if method == "dcmap" else random_network(7)
    r = solve(network, method=method, max_iterations=2000 if method == "dcmap" else None,
              on_improvement=lambda c, i, s, m: heard.append((c, i, m)))
    assert heard == [(t["cost"], t["iteration"], t["clusters"]) for t in r.trace]
    assert_trace_ok(r.trace)
    assert trace_problem(network, r) is None


@pytest.mark.parametrize("seed", range(12))
def test_anytime_record_on_random_graphs(seed):
    """Random graphs of several components, both schemes, every method: the trace's
    mappings and the bound samples (DCMAP) are right."""
    a, b = random_network(seed, 4, 6), random_network(seed + 100, 2, 5)
    network = Network(f"two-{seed}", [f"a{x}" for x in a.nodes] + [f"b{x}" for x in b.nodes],
                      {**{f"a{x}": k for x, k in a.states.items()}, **{f"b{x}": k for x, k in b.states.items()}},
                      [(f"a{u}", f"a{v}") for u, v in a.edges] + [(f"b{u}", f"b{v}") for u, v in b.edges],
                      [f"a{x}" for x in a.observed] + [f"b{x}" for x in b.observed])
    assert len(network.components()) == 2
    scheme = ("merge", "single")[seed % 2]
    for method in ("dcmap", "bfs", "brute"):
        r = solve(network, scheme=scheme, method=method)
        if method == "dcmap":
            assert_anytime_record(network, r, DcmapCost(), scheme)
        else:
            assert_trace_ok(r.trace)
            assert trace_problem(network, r, DcmapCost(), scheme) is None


def test_memory_limit_below_process_size_stops_at_once(child):
    limit = max(1.0, memory_mb() / 2)
    r = solve(child, memory_limit_mb=limit)
    assert not r.proven_optimal
    assert r.stop_reason == "memory_limit"
    # the limits are checked every 128 loop turns (see test_max_iterations_is_not_exceeded)
    assert r.iterations <= 128
    assert_feasible_and_priced(child, r, DcmapCost())


def test_bfs_limits(child):
    r = solve(child, method="bfs", max_iterations=200)
    assert not r.proven_optimal and r.stop_reason == "max_iterations"


# =========================================================================== 7. disconnected networks


def two_components() -> Network:
    """The paper's example and a 4-node diamond with a long arc, input order interleaved."""
    nodes = ["P", "A", "B", "Q", "C", "D", "R", "E", "F", "S", "G"]
    states = {x: 2 for x in nodes} | {"P": 3, "R": 4, "S": 1}
    edges = [("A", "F"), ("A", "D"), ("B", "D"), ("C", "E"), ("D", "G"), ("E", "G"),
             ("P", "Q"), ("Q", "R"), ("P", "R"), ("R", "S"), ("P", "S")]
    return Network("two-parts", nodes, states, edges)


def per_component(network, cost, scheme="merge", **kw):
    parts = network.components()
    results = [solve(part, cost, scheme, **kw) for part in parts]
    return parts, results


@pytest.mark.parametrize("cost_name", ["dcmap-cpt", "hash", "tie"])
@pytest.mark.parametrize("name", ["sachs", "two-parts"])
def test_disconnected_network_combines_components(name, cost_name):
    network = two_components() if name == "two-parts" else load_network(name)
    cost = COST_MODELS[cost_name]
    assert len(network.components()) == 2
    whole = solve(network, cost)
    parts, results = per_component(network, cost)
    assert whole.proven_optimal
    assert whole.optimal_cost == pytest.approx(sum(r.optimal_cost for r in results), rel=REL)
    product = {
        frozenset().union(*(partition(s.clusters) for s in combo))
        for combo in itertools.product(*(r.solutions for r in results))
    }
    got = [partition(s.clusters) for s in whole.solutions]
    assert len(got) == len(set(got)) == math.prod(len(r.solutions) for r in results)
    assert set(got) == product
    assert [c["optimal_cost"] for c in whole.components] == pytest.approx([r.optimal_cost for r in results])
    for s in whole.solutions:
        assert total_cost(network, s.clusters, cost) == pytest.approx(s.cost, rel=REL)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("cost_name", list(COST_MODELS))
def test_disconnected_network_agrees_with_whole_brute_force(scheme, cost_name):
    """Brute force over the WHOLE network (not split into components)."""
    network = two_components()
    cost = COST_MODELS[cost_name]
    topo = Topology(network)
    costs = {}
    for mapping in enumerate_mappings(network, scheme):
        clusters = [topo.names(c) for c in mapping]
        costs[partition(clusters)] = total_cost(network, clusters, cost)
    best = min(costs.values())
    optimal = {p for p, v in costs.items() if close(v, best)}
    for method in METHODS:
        r = solve(network, cost, scheme, method)
        assert r.proven_optimal
        assert r.optimal_cost == pytest.approx(best, rel=REL)
        got = [partition(s.clusters) for s in r.solutions]
        assert len(got) == len(set(got))
        assert set(got) == optimal, method


def test_disconnected_network_under_a_limit_keeps_a_best_mapping():
    network = load_network("sachs")
    r = solve(network, max_iterations=3)
    assert not r.proven_optimal
    assert all(c["stop_reason"] == "max_iterations" for c in r.components if c["stop_reason"] != "finished")
    assert math.isfinite(r.optimal_cost)
    assert r.solutions


# =========================================================================== 8. result JSON


def test_result_json_has_the_spec_keys(paper):
    r = solve(paper)
    text = r.to_json()
    data = json.loads(text)
    for key in ("network", "network_hash", "cost_model", "scheme", "optimal_cost", "proven_optimal",
                "solutions", "iterations", "first_optimal_iteration", "elapsed_seconds", "trace"):
        assert key in data, key
    assert data["network"] == "paper-example"
    assert data["network_hash"] == paper.content_hash() and len(data["network_hash"]) == 64
    assert data["cost_model"] == {"name": "dcmap", "order": "cpt", "addition": 0.6}
    assert data["scheme"] == "merge"
    assert data["optimal_cost"] == pytest.approx(54.0)
    assert data["proven_optimal"] is True
    assert len(data["solutions"]) == 3
    for s in data["solutions"]:
        assert set(s) >= {"clusters", "cost", "iteration"}
        assert all(c == sorted(c) for c in s["clusters"])
        assert s["cost"] == pytest.approx(54.0)
    assert {partition(s["clusters"]) for s in data["solutions"]} == PAPER_OPTIMAL
    assert data["iterations"] == r.iterations
    assert data["first_optimal_iteration"] == min(s["iteration"] for s in data["solutions"])
    assert data["elapsed_seconds"] >= 0
    for entry in data["trace"]:
        assert set(entry) >= {"iteration", "seconds", "cost"}
    assert data["trace"][-1]["cost"] == pytest.approx(54.0)
    # round trip
    assert json.loads(json.dumps(data)) == data
    assert json.loads(r.to_json(indent=None)) == data


def test_result_json_user_cost_and_order(paper):
    r = solve(paper, hash_cost, scheme="single")
    data = json.loads(r.to_json())
    assert data["scheme"] == "single"
    assert data["cost_model"]["name"] == "hash_cost"
    data = json.loads(solve(paper, order="paper").to_json())
    assert data["cost_model"]["order"] == "paper"


# =========================================================================== 9. determinism


def test_same_seed_same_run(child):
    runs = [solve(child, alpha=0.5, seed=3, max_iterations=3000) for _ in range(2)]
    a, b = runs
    assert a.iterations == b.iterations
    assert [t["iteration"] for t in a.trace] == [t["iteration"] for t in b.trace]
    assert [t["cost"] for t in a.trace] == [t["cost"] for t in b.trace]
    assert [(s.clusters, s.iteration) for s in a.solutions] == [(s.clusters, s.iteration) for s in b.solutions]


def test_same_seed_same_run_on_random_graphs():
    for seed in range(20):
        network = random_network(seed)
        a = solve(network, tie_cost, alpha=0.3, seed=11)
        b = solve(network, tie_cost, alpha=0.3, seed=11)
        assert a.iterations == b.iterations
        assert a.first_optimal_iteration == b.first_optimal_iteration
        assert [t["iteration"] for t in a.trace] == [t["iteration"] for t in b.trace]
        assert [(s.clusters, s.iteration) for s in a.solutions] == [(s.clusters, s.iteration) for s in b.solutions]


def test_a_serial_search_hands_its_objects_back_to_the_garbage_collector(child):
    # every step freezes what is alive (Explorer.step); the search unfreezes it at the
    # end, also when stopped by a limit, so a long-lived caller loses no collection
    assert gc.get_freeze_count() == 0
    assert solve(child, time_limit=30).proven_optimal
    assert gc.get_freeze_count() == 0
    assert not solve(child, max_iterations=50).proven_optimal
    assert gc.get_freeze_count() == 0


def one_step(problem: Problem, iterations: int) -> None:
    """One step of the serial loop from the root, of at most ``iterations`` expansions."""
    explorer = Explorer(problem, 0.6, 0, LinkShard(1))
    root = problem.root()
    explorer.receive([(problem.link_key(root), root)])
    explorer.step(Stopwatch(Limits()), max_iterations=iterations)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_expansion_makes_no_reference_cycles(child, scheme):
    # with the built-in model a step pauses the garbage collector and freezes what it
    # made (Explorer.step): sound only if the search itself makes no cyclic garbage,
    # which would otherwise be frozen for good (a recursive closure in the combination
    # enumeration made one cycle per expansion)
    networks = [child] + [random_network(seed, 8, 12) for seed in range(20)]
    gc.collect()
    gc.disable()
    try:
        for network in networks:
            one_step(Problem(network, DcmapCost(), scheme), 3000)
            assert gc.collect() == 0, network.name
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_user_models_cycles_are_left_to_the_collector(child):
    # a user model may make cycles: its steps keep the collector running and freeze
    # nothing at their end, so the cycles are still found
    made = []

    def cyclic(ctx):
        loop = []
        loop.append(loop)
        made.append(1)
        return same_cluster_cost(ctx)

    problem = Problem(child, load_cost(cyclic), "merge")
    collected = []

    def count(phase, info):
        if phase == "stop":
            collected.append(info["collected"])

    gc.callbacks.append(count)
    try:
        one_step(problem, 300)
        gc.collect()
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
    assert made and sum(collected) > 0  # (cycles made before the step are frozen at its start)


def test_a_missing_link_record_is_an_error_unless_records_may_be_lost(child):
    # a distributed search may lose records with a worker and then reports an improvement
    # without its mapping; in any other search a missing record is a bug, not a None
    from dcmap_dist.search.linking import MissingRecord
    from dcmap_dist.search.outcome import improvement_clusters

    problem = Problem(child, DcmapCost(), "merge")
    with pytest.raises(MissingRecord):
        improvement_clusters(problem, (7, 1), lambda records: {})
    assert improvement_clusters(problem, (7, 1), lambda records: {}, lost=True) is None


def test_a_branch_queued_again_is_listed_and_popped_once():
    # popped by layer, a branch leaves its entry by cost behind; queued again (a limit
    # interrupted its expansion, and the search pushes it back before a checkpoint),
    # it must be saved once and expanded once, or a resumed search repeats its subtree
    queue = BranchQueue()
    branch = Branch(1, 0, (), (), 5.0, estimate=5.0, bound=5.0)
    other = Branch(2, 0, (), (), 7.0, estimate=7.0, bound=7.0)
    queue.push(branch)
    queue.push(other)
    assert queue.pop(cheapest=False) is branch
    queue.push(branch)
    assert queue.branches() == [branch, other] and queue.size == 2
    assert [queue.pop(cheapest=True), queue.pop(cheapest=True), queue.pop(cheapest=True)] == [branch, other, None]
    assert queue.pop(cheapest=False) is None and queue.size == 0


def test_the_listing_of_optimal_mappings_stops_at_the_memory_limit(monkeypatch):
    # a proven search may have astronomically many tied optima (hepar2's listing grew to
    # 24 GB after its proof); the listing stops at the memory limit after one mapping,
    # and the count stays exact
    network = random_network(3)
    full = solve(network, COST_MODELS["tie"], max_solutions=None, memory_limit_mb=1e9)
    assert full.proven_optimal and full.solutions_complete and full.solution_count > 1
    monkeypatch.setattr(sys.modules["dcmap_dist.solve"], "memory_mb", lambda: 2e9)  # past it once listing
    cut = solve(network, COST_MODELS["tie"], max_solutions=None, memory_limit_mb=1e9)
    assert cut.proven_optimal and cut.optimal_cost == full.optimal_cost
    assert cut.solution_count == full.solution_count and not cut.solutions_complete
    assert len(cut.solutions) == 1 and cut.solutions[0].clusters in [s.clusters for s in full.solutions]
