"""Tests of the serial search (run/serial.py, limits.py): limits, progress and the
anytime trace, determinism, memory handed back to the collector, missing link records."""

from __future__ import annotations

import gc
import math
import time

import pytest
from search_costs import random_network, tie_cost, trace_problem
from search_helpers import REL, total_cost

from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.io.load import load_network
from dcmap_dist.limits import memory_mb
from dcmap_dist.model.mappings import check_mapping
from dcmap_dist.model.network import Network
from dcmap_dist import progress
from dcmap_dist.search.problem import Problem
from dcmap_dist.solve import solve


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


def test_on_progress_on_a_long_run(python_engine):
    network = load_network("seagrass-2tbn", slices=2)
    calls = []
    r = solve(network, order="paper", time_limit=2.5, on_progress=calls.append)
    assert r.stop_reason == "time_limit"
    assert len(calls) >= 2
    for stats in calls:
        assert isinstance(stats, progress.Progress)
        assert stats.iterations >= 0 and stats.elapsed_seconds >= 0 and stats.rate >= 0
        assert math.isfinite(stats.best_cost)
    iterations = [s.iterations for s in calls]
    assert iterations == sorted(iterations)
    assert calls[-1].iterations == r.iterations
    # the bound shown, rescanned or not, never passes the optimum (5332.4, proven elsewhere)
    assert all(s.lower_bound <= 5332.4 * (1 + REL) for s in calls)


def test_open_bound_rescans_only_when_due(monkeypatch):
    """A progress report's bound scans the open branches at first, then only once
    SCAN_SHARE times the last scan's time has passed; in between the last value stands."""
    scans = []

    class Open:
        def least_bound(self):
            scans.append(None)
            time.sleep(0.005)
            return float(len(scans))

    bound = progress.Rescanned(Open().least_bound)
    assert [bound(), bound(), bound()] == [1.0, 1.0, 1.0]  # the next scan is due in about 0.5 s
    monkeypatch.setattr(progress, "SCAN_SHARE", 0)
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


def frozen() -> int:
    """The objects in the collector's permanent generation after a collection: on Python
    3.12 a collection moves the interpreter's immortal objects there (375 on 3.12.1, 0 on
    3.11 and 3.13), which gc.unfreeze() does not keep out."""
    gc.collect()
    return gc.get_freeze_count()


def test_a_serial_search_hands_its_objects_back_to_the_garbage_collector(child):
    # every step freezes what is alive (Explorer.step); the search unfreezes it at the
    # end, also when stopped by a limit, so a long-lived caller loses no collection
    gc.unfreeze()
    own = frozen()
    assert solve(child, time_limit=30).proven_optimal
    assert frozen() == own
    assert not solve(child, max_iterations=50).proven_optimal
    assert frozen() == own


def test_a_missing_link_record_is_an_error_unless_records_may_be_lost(child):
    # a distributed search may lose records with a worker and then reports an improvement
    # without its mapping; in any other search a missing record is a bug, not a None
    from dcmap_dist.search.histories import MissingRecord
    from dcmap_dist.search.outcome import improvement_clusters

    problem = Problem(child, DcmapCost(), "merge")
    with pytest.raises(MissingRecord):
        improvement_clusters(problem, (7, 1), lambda records: {})
    assert improvement_clusters(problem, (7, 1), lambda records: {}, lost=True) is None
