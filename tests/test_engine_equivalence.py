"""The native engine replicates the Python engine step for step (docs/engine.md): both run
a search from the same incumbent for a fixed number of iterations, and everything the
search is made of must be equal: the stop, the iterations, G_min, the improvements
(iteration, cost, trail), the link entries, the history bytes, the dominated records, the
open branches in order, the outbox and the notices, the random generator's state, the log
of its work (each expansion's cost, bound and link record; each record dominated). A
state exported by one engine and restored into the other goes on as the first would.

In the quick subset: 56 random graphs of 12 to 18 nodes (both schemes, both keys, the
``dcmap`` model's two orders, the tie and hash models, and a user model whose messages are
of its own class), five small bnlearn networks, a search split over two shards. Slow: whole
proofs of insurance, water, hailfinder and seagrass two slices by both engines."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dcmap_dist.compiled import native_built
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import load_cost
from dcmap_dist.io.load import load_network
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.model.network import Network
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.heuristics import incumbent
from dcmap_dist.search.linking import route
from dcmap_dist.search.problem import Problem

from search_costs import COST_MODELS, random_network, wide_network

pytestmark = pytest.mark.skipif(not native_built(), reason="the native engine is not built")

NETWORKS = Path(__file__).resolve().parents[1].parent / "shared" / "networks"


def engines():
    from dcmap_dist.search.native_engine import NativeEngine

    return Explorer, NativeEngine


def trajectory(engine, stop: str) -> dict:
    """Everything a run of ``engine`` is made of (each engine's own values as Python values)."""
    state = engine.export()
    return {
        "stop": stop, "iterations": engine.iterations, "g_min": engine.g_min, "open": engine.open_count(),
        "least_bound": engine.least_bound(), "link_records": engine.link_records,
        "improvements": [(found.iteration, found.cost, found.trail) for found in engine.take_improvements()],
        "entries": state.entries, "histories": dict(state.histories.items()), "dominated": state.dominated,
        "branches": state.branches, "outbox": engine.take_outbox(), "notices": engine.take_notices(),
        "random": engine.random_state(), "final": engine.final_entry(), "log": engine.take_log(),
    }


def problem_of(network, model, scheme: str = "merge", link_key: str = "lean", use_bound: bool = True) -> Problem:
    part = max(network.components(), key=len)
    return Problem(part, model, scheme, graph=network, link_key=link_key, use_bound=use_bound)


def run(cls, network, model, iterations: int, scheme: str = "merge", link_key: str = "lean", seed: int = 0,
        shards: int = 1, notify: bool = False, use_bound: bool = True) -> tuple:
    """A search of ``network`` by engine class ``cls`` for ``iterations`` (its problem, its engine)."""
    problem = problem_of(network, model, scheme, link_key, use_bound)
    engine = cls(problem, 0.6, seed, 0, 0, shards, notify)
    engine.keep_log()  # its work, expansion by expansion (trajectory compares the logs)
    watch = Stopwatch(Limits(max_iterations=iterations))
    engine.start(incumbent(problem, watch), watch)
    return engine, engine.step(watch)


def compare(network, model, iterations: int, **options) -> object:
    """Runs both engines; returns the native one."""
    python, native = engines()
    expected = trajectory(*run(python, network, model, iterations, **options))
    engine, stop = run(native, network, model, iterations, **options)
    got = trajectory(engine, stop)
    differ = [name for name in expected if expected[name] != got[name]]
    assert not differ, f"{network.name} {options}: the engines differ in {differ}"
    return engine


def case(seed: int) -> tuple:
    """The graph, model and settings of random case ``seed``: every combination comes up."""
    rng = random.Random(seed)
    network = (wide_network if seed % 2 else random_network)(seed, 12, 18)
    model = load_cost(COST_MODELS[["dcmap-cpt", "dcmap-paper", "tie", "hash", "varied"][seed % 5]])
    options = {"scheme": ["merge", "single"][seed // 2 % 2], "link_key": ["lean", "full"][seed // 4 % 2],
               "seed": rng.randrange(100)}
    return network, model, options


@pytest.mark.parametrize("seeds", [range(0, 28), range(28, 56)], ids=["0-27", "28-55"])
def test_random_graphs_run_the_same_trajectory_on_both_engines(seeds):
    for seed in seeds:
        network, model, options = case(seed)
        compare(network, model, 1500, **options)


@pytest.mark.parametrize("name,iterations", [("asia", 100), ("sachs", 400), ("child", 14000), ("alarm", 4000),
                                             ("water", 20000)])
def test_bnlearn_networks_run_the_same_trajectory_on_both_engines(name, iterations):
    """Long enough for the gates of linking inside a layer to close and open again."""
    path = NETWORKS / f"{name}.bif.gz"
    if name in ("alarm", "water") and not path.exists():
        pytest.skip(f"{path} is not here")
    network = load_network(str(path) if name in ("alarm", "water") else name)
    compare(network, load_cost("dcmap"), iterations)
    compare(network, load_cost("dcmap"), iterations // 2, link_key="full")


def test_the_bounds_caps_reach_the_core(monkeypatch):
    """cost/dcmap.py's caps on the bound's every-way searches are the core's too: with
    them lowered, water's bound changes (fewer groupings, orders and splits tried) and
    the engines still run the same trajectory."""
    from dcmap_dist.cost import dcmap

    network = load_network(str(NETWORKS / "water.bif.gz"))
    engine = compare(network, load_cost("dcmap"), 3000)
    uncapped = (engine.least_bound(), engine.open_count())
    for name in ("MOST_GROUPED_PARENTS", "MOST_ORDERED_ABSORPTIONS", "MOST_PARTITIONED"):
        monkeypatch.setattr(dcmap, name, 1)
    engine = compare(network, load_cost("dcmap"), 3000)
    assert (engine.least_bound(), engine.open_count()) != uncapped


def test_collecting_the_store_changes_nothing_of_the_search():
    """The core drops the sequences nothing holds (and renumbers the rest) as its store
    grows: a search collected every 250 iterations (child's proof takes 3,236) runs the Python
    engine's trajectory."""
    python, native = engines()
    network = load_network("child")
    expected = trajectory(*run(python, network, load_cost("dcmap"), 6000))
    engine, stop = run(native, network, load_cost("dcmap"), 1)
    watch = Stopwatch(Limits(max_iterations=6000))
    while stop == "max_iterations" and engine.iterations < 6000:
        engine.collect()
        stop = engine.step(watch, max_iterations=engine.iterations + 250)
    assert engine.collections() >= 12
    got = trajectory(engine, stop)
    differ = [name for name in expected if expected[name] != got[name]]
    assert not differ, f"a collected search differs in {differ}"


def with_cards(network: Network, scale: int) -> Network:
    """``network`` with every node's states times ``scale``."""
    states = {x: network.states[x] * scale for x in network.nodes}
    return Network(f"{network.name}-x{scale}", network.nodes, states, network.edges, network.observed)


def apart(first: Network, second: Network) -> Network:
    """Two networks side by side, one network of two components."""
    rename = lambda x: f"{x}'"
    return Network(f"{first.name}+{second.name}", [*first.nodes, *map(rename, second.nodes)],
                   {**first.states, **{rename(x): s for x, s in second.states.items()}},
                   [*first.edges, *((rename(u), rename(v)) for u, v in second.edges)],
                   [*first.observed, *map(rename, second.observed)])


@pytest.mark.parametrize("variant", ["canonical", "paper-whole-addition", "no-addition", "quarter-addition",
                                     "no-bound", "huge-cards", "two-components"])
def test_the_dcmap_model_in_the_core_prices_as_python_does(variant):
    """The built-in model runs in the core (its counts, floats and bound, message masks)
    for a network of one component; past 2^53 entries a table is priced by Python, and a
    network of several components stays with Python's model: the same trajectories."""
    models = {"canonical": DcmapCost("canonical"), "paper-whole-addition": DcmapCost("paper", 1),
              "no-addition": DcmapCost(addition=0), "quarter-addition": DcmapCost("canonical", 0.25)}
    for seed in (0, 1, 5, 6):  # connected graphs, both shapes
        network, _, options = case(seed)
        model, use_bound = models.get(variant, DcmapCost()), variant != "no-bound"
        if variant == "huge-cards":
            network = with_cards(network, 1 << 13)  # a few nodes together pass 2^53 entries
        if variant == "two-components":
            network = apart(network, case(seed + 10)[0])
            options["scheme"] = "merge"  # the largest component is searched; both kinds come up
        engine = compare(network, model, 1500, use_bound=use_bound, **options)
        assert engine.native_model == (variant != "two-components")


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_a_shard_of_two_sends_and_notifies_as_the_python_engine_does(seed):
    """Shard 0 of 2: completions whose keys the other shard owns go to the outbox (routed
    by CPython's hashes, computed natively), and dominated records are noticed."""
    network, model, options = case(seed)
    compare(network, model, 300, shards=2, notify=True, **options)


def test_the_core_routes_every_key_as_python_does():
    python, native = engines()
    network, model, _ = case(5)
    engine, _ = run(native, network, model, 400)
    keys = list(engine.export().entries)
    assert len(keys) > 100
    for shards in (2, 3, 5, 8, 64):
        assert [engine.route(key, shards) for key in keys] == [route(key, shards) for key in keys]


def test_the_core_makes_the_python_engines_keys():
    python, native = engines()
    for seed in (1, 6):
        network, model, options = case(seed)
        for link_key in ("lean", "full"):
            reference, _ = run(python, network, model, 300, link_key=link_key)
            engine = native(problem_of(network, model, link_key=link_key))
            problem = reference.problem
            branches = reference.open_branches()
            assert branches
            assert [engine.link_key(b) for b in branches] == [problem.link_key(b) for b in branches]


@pytest.mark.parametrize("first,second", [("python", "native"), ("native", "python")])
def test_a_state_exported_by_one_engine_goes_on_in_the_other(first, second):
    """Run 600 iterations, export, restore into a fresh engine of the other kind (with the
    counters and the random generator's state) and go on to 1,500: the trajectory of the
    engine that went on by itself."""
    python, native = engines()
    kinds = {"python": python, "native": native}
    network, model, options = case(11)

    def resumed(cls_before, cls_after):
        engine, _ = run(cls_before, network, model, 600, **options)
        state, iterations, g_min, rng = engine.export(), engine.iterations, engine.g_min, engine.random_state()
        problem = problem_of(network, model, options["scheme"], options["link_key"])
        after = cls_after(problem, 0.6, options["seed"], 1)
        after.keep_log()
        after.restore(state, iterations, g_min, rng)
        watch = Stopwatch(Limits(max_iterations=1500))
        return trajectory(after, after.step(watch))

    straight = resumed(kinds[first], kinds[first])
    crossed = resumed(kinds[first], kinds[second])
    differ = [name for name in straight if straight[name] != crossed[name]]
    assert not differ, f"the engines differ after a crossing in {differ}"


def test_the_random_stream_is_pythons():
    python, native = engines()
    network, model, _ = case(2)
    engine = native(problem_of(network, model), 0.6, 12345)
    assert engine.random_state() == random.Random(12345).getstate()


def test_a_malformed_state_is_refused_with_a_message():
    """What a damaged checkpoint or batch could hold is refused by name, never crashes."""
    from dcmap_dist.search.branch import Branch
    from dcmap_dist.search.state import SearchState

    python, native = engines()
    network, model, _ = case(4)
    engine = native(problem_of(network, model), 0.6, 0, 0)
    n = len(max(network.components(), key=len).nodes)
    bad = [
        Branch(0, 0, (1 << n,), ((1, 0),), 1.0),  # a mask past the network
        Branch(0, 0, (0,), ((1, 0),), 1.0),  # an empty component
        Branch(99, 0, (1,), ((1, 0),), 1.0),  # a layer past the last
        Branch(0, 0, (1,), ((0, 0),), 1.0),  # an empty cluster-layer
        Branch(0, 0, (1,), (1,), 1.0),  # a frontier item that is not a pair
        Branch(0, 0, (1,), ((1, 0),), float("nan")),  # a cost that is not a number
        Branch(0, -5, (1,), ((1, 0),), 1.0),  # a negative mask
        Branch(0, 0, (1,), ((1, 0),), 1.0, (), -7),  # a negative link record
    ]
    for branch in bad:
        with pytest.raises((ValueError, OverflowError, IndexError)):
            engine.adopt([branch])
    with pytest.raises(ValueError, match="link record"):
        engine.load(SearchState(dominated={-3}))
    with pytest.raises(ValueError, match="link key"):
        engine.receive([((1, 2), Branch(0, 0, (1,), ((1, 0),), 1.0))])
    assert engine.open_count() == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["insurance", "water", "hailfinder", "seagrass-2slices"])
def test_whole_proofs_are_the_same_on_both_engines(name):
    """The proof to its end on both engines: the same trajectory (every link entry, history
    and improvement) and so the same optimum, count and partitions."""
    if name.startswith("seagrass"):
        network, model = load_network("seagrass-2tbn", slices=2), load_cost("dcmap", order="paper")
    else:
        path = NETWORKS / f"{name}.bif.gz"
        if not path.exists():
            pytest.skip(f"{path} is not here")
        network, model = load_network(str(path)), load_cost("dcmap")
    python, native = engines()
    expected = trajectory(*run(python, network, model, None))
    got = trajectory(*run(native, network, model, None))
    assert expected["stop"] == "idle"
    differ = [key for key in expected if expected[key] != got[key]]
    assert not differ, f"{name}: the engines differ in {differ}"
