"""The native engine's decoders, fuzzed: what a damaged checkpoint or Ray batch could hand
it (branches, link keys, states: real ones from a search, mutated at random) is refused
with a Python exception or taken in, and a taken one is searched from for a few steps;
the process never crashes. Seeded, for a bounded time: ``DCMAP_FUZZ_SECONDS`` (5 s by
default; CI runs it longer on the build with the sanitizers, docs/engine.md)."""

from __future__ import annotations

import os
import random
import struct
import time

import pytest

from dcmap_dist.compiled import native_built
from dcmap_dist.cost.user import load_cost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.search.branch import Branch
from dcmap_dist.search.heuristics import incumbent
from dcmap_dist.search.problem import Problem
from dcmap_dist.search.state import SearchState

from search_costs import COST_MODELS, random_network

pytestmark = pytest.mark.skipif(not native_built(), reason="the native engine is not built")
SECONDS = float(os.environ.get("DCMAP_FUZZ_SECONDS", "5"))


def mutated(value, rng: random.Random, depth: int = 0):
    """``value`` with one random change somewhere inside (or a wholly strange value)."""
    strange = [-1, -(1 << 70), 1 << 70, 1 << 600, 0, None, 1.5, float("nan"), float("inf"), "x", (), (0, 0, 0),
               b"\x00", True]
    if depth > 4 or rng.random() < 0.15:
        return rng.choice(strange)
    if isinstance(value, Branch):
        fields = list(value.fields())
        k = rng.randrange(len(fields))
        fields[k] = mutated(fields[k], rng, depth + 1)
        return Branch(*fields)
    if isinstance(value, tuple) and value:
        items = list(value)
        choice = rng.random()
        if choice < 0.15:
            items.pop(rng.randrange(len(items)))
        elif choice < 0.3:
            items.insert(rng.randrange(len(items) + 1), rng.choice(items))
        else:
            k = rng.randrange(len(items))
            items[k] = mutated(items[k], rng, depth + 1)
        return tuple(items)
    if isinstance(value, int) and not isinstance(value, bool):
        return rng.choice([value ^ (1 << rng.randrange(80)), value + rng.choice([-1, 1]), -value, value << 40])
    if isinstance(value, float):
        return rng.choice([-value, value * 1e300, float("nan"), 0.0])
    return rng.choice(strange)


def material(seed: int):
    """A problem, and the branches and keyed arrivals of a short search of it."""
    from dcmap_dist.search.native_engine import NativeEngine

    network = random_network(seed, 9, 14)
    model = load_cost(COST_MODELS[["dcmap-cpt", "tie", "varied"][seed % 3]])
    part = max(network.components(), key=len)
    problem = Problem(part, model, "merge", graph=network, link_key=["lean", "full"][seed % 2])
    engine = NativeEngine(problem, 0.6, seed, 0, 0, 2)
    watch = Stopwatch(Limits(max_iterations=200))
    engine.start(incumbent(problem, watch), watch)
    engine.step(watch)
    state = engine.export()
    arrivals = [arrival for batch in engine.take_outbox().values() for arrival in batch]
    arrivals += [(key, branch) for key, branch in zip(state.entries, state.branches)]
    return problem, state.branches, arrivals, list(state.entries.items())


def test_damaged_inputs_are_refused_or_searched_never_a_crash():
    from dcmap_dist.search.native_engine import NativeEngine

    rng = random.Random(2026)
    end = time.monotonic() + SECONDS
    tried = refused = 0
    sources = [material(seed) for seed in range(6)]
    while time.monotonic() < end or tried < 200:
        problem, branches, arrivals, entries = rng.choice(sources)
        engine = NativeEngine(problem, 0.6, 0, 1)
        kind = rng.randrange(4)
        try:
            if kind == 0 and branches:
                engine.adopt([mutated(rng.choice(branches), rng)])
            elif kind == 1 and arrivals:
                key, branch = rng.choice(arrivals)
                engine.receive([(mutated(key, rng), branch) if rng.random() < 0.5 else (key, mutated(branch, rng))])
            elif kind == 2 and entries:
                key, entry = rng.choice(entries)
                entry.record = mutated(entry.record, rng)
                engine.load(SearchState(entries={mutated(key, rng): entry}))
            else:
                engine.load(SearchState(dominated={mutated(rng.getrandbits(40), rng)},
                                        histories={rng.getrandbits(20): bytes(rng.getrandbits(8) for _ in range(9))}))
            engine.step(Stopwatch(Limits(max_iterations=5)))  # what was taken in is searched from
        except Exception:  # refused (by name), or failed in the search: never a crash
            refused += 1
        tried += 1
    assert tried >= 200 and 0 < refused < tried


def tail_length(share: bytes) -> int:
    """The bytes of a (coded) share's tail, its length included (batch.hpp's layout)."""
    width, rows, masks, messages, items, *counts, longs, long_pool = struct.unpack_from("<11I", share, 12)
    at = 56 + 8 * (masks * width + long_pool) + 88 * rows + 4 * messages + 8 * items + 4 * (sum(counts) + longs)
    return len(share) - at


def test_damaged_batches_are_refused_or_searched_never_a_crash():
    """Real batches (search/batches.py's format, as the core writes it) and shares of a
    search (a worker's snapshot: the same format, written by the core) with bytes changed,
    cut, repeated or overwritten with strange numbers, their CRC made to agree again most
    of the time so that the core's reader, not the CRC, is what is tried. A share's tail
    is left whole: its record ids are values no reader can bound (a serial of 2^28 is
    2 GiB of table to make), held by the CRC alone, as a share never leaves the
    coordinator's memory; its counts and lengths are tried in tests/test_shares.py."""
    from dcmap_dist.search import batches
    from dcmap_dist.search.native_engine import NativeEngine

    rng = random.Random(51)
    sources = []
    for seed in range(6):
        problem, _, arrivals, _ = material(seed)
        batch = batches.encode(arrivals, problem.topo.n, batches.codes_fit(problem))
        sources.append((problem, batch, "receive_batch", len(batch)))
        if batches.codes_fit(problem):  # (a damaged pickle may take seconds to refuse: batches try those)
            writer, watch = NativeEngine(problem, 0.6, 0, 0), Stopwatch(Limits())
            writer.start(incumbent(problem, watch), watch)
            writer.step(watch, max_iterations=100)
            share = writer.take_share()
            sources.append((problem, share, "load_share", len(share) - tail_length(share)))
    strange = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 1 << 20, 3]
    end = time.monotonic() + SECONDS
    tried = refused = 0
    assert any(take == "load_share" for _, _, take, _ in sources)
    while time.monotonic() < end or tried < 300:
        problem, data, take, end_of_change = rng.choice(sources)
        body = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            kind, at = rng.randrange(4), rng.randrange(12, min(end_of_change, len(body)))
            if kind == 0:
                body[at] ^= 1 << rng.randrange(8)
            elif kind == 1:
                body[at:at + 4] = rng.choice(strange).to_bytes(4, "little")
            elif kind == 2:
                del body[at:at + rng.randint(1, 64)]
            else:
                body[at:at] = body[rng.randrange(len(body)):][:rng.randint(1, 64)]
        bad = batches.sealed(body[:8] + b"\0\0\0\0" + body[12:]) if rng.random() < 0.9 else bytes(body)
        engine = NativeEngine(problem, 0.6, 0, 1)
        try:
            getattr(engine, take)(bad)
            engine.step(Stopwatch(Limits(max_iterations=5)))  # what was taken in is searched from
        except Exception:  # refused (by name), or failed in the search: never a crash
            refused += 1
        tried += 1
    assert tried >= 300 and 0 < refused < tried
