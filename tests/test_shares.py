"""An engine's share of a search as one buffer (``Engine.take_share``, ``load_share``;
docs/distributed.md, "Batches"): what a worker's snapshot holds. An engine that takes
over a share goes on exactly as the engine that wrote it; ``share_state`` reads a share
as the engine's ``export``; the native core's share (a batch of the share's kind) is
refused by name when damaged or given where completions are expected, and the other way
round; a native engine pickles as its share."""

from __future__ import annotations

import pickle
import struct

import pytest

from dcmap_dist.compiled import native_built
from dcmap_dist.cost.user import load_cost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.search import batches
from dcmap_dist.search.engine import share_state
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.heuristics import incumbent
from dcmap_dist.search.problem import Problem
from dcmap_dist.search.state import SearchState

from search_costs import COST_MODELS, random_network
from test_batches import damaged

native = pytest.mark.skipif(not native_built(), reason="the native engine is not built")
ENGINES = ["python", pytest.param("native", marks=native)]


def engine_class(kind: str):
    if kind == "python":
        return Explorer
    from dcmap_dist.search.native_engine import NativeEngine

    return NativeEngine


def problem_of(seed: int, model: str, scheme: str, link_key: str) -> Problem:
    network = random_network(seed, 12, 16)
    part = max(network.components(), key=len)
    return Problem(part, load_cost(COST_MODELS[model]), scheme, graph=network, link_key=link_key)


def started(cls, problem: Problem, iterations: int):
    """A serial search of ``problem`` (shard 0 of 1) after ``iterations`` expansions."""
    engine = cls(problem, 0.6, 3, 0, 0, 1)
    watch = Stopwatch(Limits())
    engine.start(incumbent(problem, watch), watch)
    engine.step(watch, max_iterations=iterations)
    return engine


def finished(engine) -> tuple:
    """Run ``engine`` to its end: its counters, improvements and what is left of its share."""
    engine.step(Stopwatch(Limits()))
    state = engine.export()
    return (engine.iterations, engine.g_min, engine.link_records,
            [(f.iteration, f.cost, f.trail) for f in engine.take_improvements()], len(state.entries),
            sorted(state.dominated))


def plain(state: SearchState) -> tuple:
    """A state's parts, its open branches in a fixed order (a queue's own order is its heap's)."""
    return (sorted(state.branches, key=repr), state.arrivals, state.entries, dict(state.histories.items()),
            set(state.dominated))


CASES = [(seed, ["dcmap-cpt", "tie", "varied", "hash", "dcmap-paper"][seed % 5], ["merge", "single"][seed // 2 % 2],
          ["lean", "full"][seed % 2]) for seed in range(10)]


@pytest.mark.parametrize("kind", ENGINES)
@pytest.mark.parametrize("seed,model,scheme,link_key", CASES)
def test_an_engine_that_takes_over_a_share_goes_on_as_one_that_loads_the_export(kind, seed, model, scheme, link_key):
    """Midway through a search, a share taken and loaded by a fresh engine (with the
    counters and random state a worker's snapshot keeps) reads back as the writer's
    export, and runs to the same end (iterations, G_min, link records, improvements) as
    an engine that loads the export, as recoveries did before shares."""
    cls = engine_class(kind)
    writer = started(cls, problem_of(seed, model, scheme, link_key), 30)
    assert writer.open_count() > 0, "the search ended before its share was taken"
    share, state = writer.take_share(), writer.export()
    assert plain(share_state(problem_of(seed, model, scheme, link_key), share)) == plain(state)
    ends = []
    for load in ("load_share", "load"):
        reader = cls(problem_of(seed, model, scheme, link_key), 0.6, 3, 0, 0, 1)
        reader.restore(SearchState(), writer.iterations, writer.g_min, writer.random_state())
        getattr(reader, load)(share if load == "load_share" else pickle.loads(pickle.dumps(state)))
        assert plain(reader.export()) == plain(state)
        ends.append(finished(reader))
    assert ends[0] == ends[1]


@native
def test_a_native_share_is_one_batch_of_the_shares_kind():
    """The core writes the share as a batch (flag 2) of its link entries and open branches,
    its dominated records and histories in the tail; the binding pickles a user model's
    messages after it, as for completions."""
    for model, flags in (("dcmap-cpt", 2), ("hash", 3)):
        engine = started(engine_class("native"), problem_of(3, model, "merge", "lean"), 200)
        share = engine.take_share()
        _, version, got, *_ = struct.unpack_from("<4sHHI", share)
        assert share[:4] == batches.MAGIC and version == batches.VERSION and got == flags
        assert batches.rows_in(share) == engine.open_count() + engine.link_records


@native
def test_a_damaged_or_misplaced_share_is_refused_by_name():
    problem = problem_of(3, "dcmap-cpt", "merge", "lean")
    NativeEngine = engine_class("native")
    writer = started(NativeEngine, problem, 200)
    share = writer.take_share()
    cases = [
        (share[:-1] + bytes([share[-1] ^ 1]), "CRC does not match"),
        (share[:len(share) // 2], "CRC does not match"),
        (damaged(share, 6, struct.pack("<H", 6)), "unknown flags 6"),
        (damaged(share, 6, struct.pack("<H", 0)), "past its end|another kind"),
        (batches.sealed(bytearray(share[:-4])), "share's tail|shorter than its counts"),
    ]
    for bad, why in cases:
        with pytest.raises(ValueError, match=f"a damaged batch: .*({why})"):
            NativeEngine(problem, 0.6, 3, 0, 0, 1).load_share(bad)
    with pytest.raises(ValueError, match="a worker's share of a snapshot, not completions"):
        NativeEngine(problem, 0.6, 3, 0, 0, 1).receive_batch(share)
    with pytest.raises(ValueError, match="runs the Python engine"):
        Explorer(problem, 0.6, 3, 0, 0, 1).load_share(share)
    root = problem.root()
    sender = NativeEngine(problem, 0.6, 3, 1, 1, 2)
    sender.receive([(problem.link_key(root), root)])
    sender.step(Stopwatch(Limits()), max_iterations=50)
    completions = next(b for b in sender.take_batches(2) if b)
    with pytest.raises(ValueError, match="not a worker's share"):
        NativeEngine(problem, 0.6, 3, 0, 0, 1).load_share(completions)


@native
@pytest.mark.parametrize("model", ["dcmap-cpt", "hash"])
def test_a_native_engine_pickles_as_its_share_and_goes_on(model):
    engine = started(engine_class("native"), problem_of(5, model, "merge", "full"), 100)
    copy = pickle.loads(pickle.dumps(engine))
    assert plain(copy.export()) == plain(engine.export())
    assert (copy.iterations, copy.g_min, copy.random_state()) == (engine.iterations, engine.g_min,
                                                                   engine.random_state())
    assert finished(copy)[:3] == finished(engine)[:3]
