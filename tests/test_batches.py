"""The batches of completions between actors (search/batches.py, native/batch.hpp;
docs/distributed.md, "Batches"): two shards of a search that exchange batches run as two
that hand each other Python objects, on either engine and mixed; both engines write the
same bytes for the same arrivals; messages arrive as the receiving process holds them; a
damaged, foreign or other network's batch is refused by name."""

from __future__ import annotations

import pickle
import struct
import zlib

import numpy
import pytest

from dcmap_dist.compiled import native_built
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import FunctionCost, load_cost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.search import batches
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.heuristics import incumbent
from dcmap_dist.search.problem import Problem

from search_costs import COST_MODELS, hash_cost, random_network

native = pytest.mark.skipif(not native_built(), reason="the native engine is not built")


def native_engine():
    from dcmap_dist.search.native_engine import NativeEngine

    return NativeEngine


def shards(classes, network, model, scheme: str, link_key: str, exchange: str, log: list | None = None) -> list:
    """Two shards of a search of ``network`` (engines of ``classes``), each with its own
    problem as in its own process, run in turns of 40 iterations, exchanging their
    completions as ``exchange`` (objects or batches) and their G_min; each one's counters."""
    part = max(network.components(), key=len)
    engines = [cls(Problem(part, model, scheme, graph=network, link_key=link_key), 0.6, i, i + 1, i, 2)
               for i, cls in enumerate(classes)]
    watch = Stopwatch(Limits())
    # from the dive's first mapping (budget 0): the beam's many cost calls leave the Python
    # problem holding messages that share parts (one frozenset in two messages, written
    # once by pickle) where the native engine's copies do not, so the pickled messages of
    # a user model differ in bytes, not in value (issue 57's report)
    engines[0].start(incumbent(engines[0].problem, watch, budget=0), watch)
    for _ in range(500):
        for engine in engines:
            engine.step(watch, max_iterations=engine.iterations + 40)
            if exchange == "objects":
                for j, arrivals in engine.take_outbox().items():
                    engines[j].receive(arrivals)
            else:
                out = engine.take_batches(2)
                if log is not None:
                    log.append(out)
                for j, batch in enumerate(out):
                    engines[j].receive_batch(batch)
        best = min(engine.g_min for engine in engines)
        for engine in engines:
            engine.hear(best)
        if not any(engine.open_count() for engine in engines):
            break
    return [(e.iterations, e.g_min, e.link_records, [(f.iteration, f.cost) for f in e.take_improvements()])
            for e in engines]


CASES = [(seed, ["dcmap-cpt", "tie", "varied", "hash", "dcmap-paper"][seed % 5], ["merge", "single"][seed // 2 % 2],
          ["lean", "full"][seed % 2]) for seed in range(10)]


@pytest.mark.parametrize("seed,model,scheme,link_key", CASES)
def test_shards_exchanging_batches_search_as_shards_exchanging_objects(seed, model, scheme, link_key):
    network, cost = random_network(seed, 12, 16), load_cost(COST_MODELS[model])
    expected = shards([Explorer, Explorer], network, cost, scheme, link_key, "objects")
    written = []
    assert shards([Explorer, Explorer], network, cost, scheme, link_key, "batches", written) == expected
    assert sum(batches.rows_in(b) for out in written for b in out) > 0
    if native_built():
        NativeEngine = native_engine()
        natively = []
        assert shards([NativeEngine, NativeEngine], network, cost, scheme, link_key, "batches", natively) == expected
        n = len(network.nodes)
        assert [[same_batch(x, y, n) for x, y in zip(*pair)] for pair in zip(natively, written)] == \
            [[True] * len(out) for out in written]
        assert shards([NativeEngine, Explorer], network, cost, scheme, link_key, "batches") == expected


def same_batch(native: bytes, python: bytes, n: int) -> bool:
    """Whether two batches are the same bytes, but for a user model's pickled messages,
    which need only be equal values: a Python problem may hold messages that share parts
    (one frozenset in two of them), which pickle writes once where the native engine's
    copies are written twice (the CRC differs with them)."""
    if native == python:
        return True
    a, b = batches._Reader(native, n), batches._Reader(python, n)
    if not (a.pickled and b.pickled and a.end == b.end):
        return False
    body = batches.CHECKED_FROM  # the CRC is before it
    return (a.view[:body - 4] == b.view[:body - 4] and a.view[body:a.end] == b.view[body:b.end]
            and pickle.loads(a.view[a.end:]) == pickle.loads(b.view[b.end:]))


def outgoing(model, seed: int = 7) -> tuple[Problem, list]:
    """A problem and the completions shard 0 of 2 sends after 300 iterations."""
    problem = Problem(random_network(seed, 12, 14), model, "merge")
    explorer = Explorer(problem, 0.6, 0, 1, 0, 2)
    root = problem.root()
    explorer.receive([(problem.link_key(root), root)])
    explorer.step(Stopwatch(Limits()), max_iterations=300)
    sent = explorer.take_outbox()[1]
    assert len(sent) >= 5
    return problem, sent


def plain(arrivals: list) -> list:
    return [(key, branch.fields()) for key, branch in arrivals]


def test_a_batch_reads_back_its_arrivals_and_its_messages_types():
    problem, sent = outgoing(DcmapCost())
    n = problem.topo.n
    data = batches.encode(sent, n, batches.codes_fit(problem))
    assert data[:4] == b"DCMB" and batches.rows_in(data) == len(sent)
    assert plain(batches.decode(data, n)) == plain(sent)
    assert batches.least_bound(data, n) == min(branch.bound for _, branch in sent)
    # a user model's messages are pickled once per batch: a numpy message keeps its type
    def numpy_messages(items):
        return tuple((members, numpy.int64(message)) for members, message in items)

    for k, (key, branch) in enumerate(sent):
        branch.frontier = numpy_messages(branch.frontier)
        sent[k] = ((key[0], numpy_messages(key[1]), *key[2:]), branch)  # a lean key: (head, items, ...)
    data = batches.encode(sent, n, False)
    messages = [message for _, branch in batches.decode(data, n) for _, message in branch.frontier]
    assert messages and all(type(message) is numpy.int64 for message in messages)
    assert plain(batches.decode(data, n)) == plain(sent)


def test_the_layout_is_the_documented_one():
    """docs/distributed.md, "Batches": the header, the masks, then rows of 88 bytes that
    numpy reads as plain arrays; the CRC covers every byte after it."""
    problem, sent = outgoing(DcmapCost())
    data = batches.encode(sent, problem.topo.n, True)
    magic, version, flags, crc, width, rows, masks, *_ = struct.unpack_from("<4sHHI11I", data)
    assert (magic, version, flags, width, rows) == (b"DCMB", 1, 0, 1, len(sent))
    assert crc == zlib.crc32(data[12:])
    words = numpy.frombuffer(data, "<u8", masks, 56)
    row = numpy.dtype([("cost", "<f8"), ("estimate", "<f8"), ("bound", "<f8"), ("link", "<i8"),
                       ("key_layer", "<i4"), ("key_kind", "<i4"), ("parts", "<u4", 6), ("layer", "<i4"),
                       ("assigned", "<u4"), ("comps", "<u4"), ("frontier", "<u4"), ("joins", "<u4"),
                       ("fixed", "<u4")])
    assert row.itemsize == 88
    table = numpy.frombuffer(data, row, rows, 56 + 8 * masks + 8 * struct.unpack_from("<I", data, 52)[0])
    assert list(table["cost"]) == [branch.cost for _, branch in sent]
    assert [int(words[k]) for k in table["fixed"]] == [branch.fixed for _, branch in sent]


@pytest.mark.parametrize("coded", [True, False], ids=["built-in-codes", "user-objects"])
def test_arrivals_hold_their_messages_as_this_process_does(coded):
    # the built-in model's messages are int codes, kept as they arrive; a user model's
    # arrive as new objects and, kept, take this process's, so dict hits on keys holding
    # them compare by identity
    problem = Problem(random_network(3, 12, 14), DcmapCost() if coded else FunctionCost(hash_cost), "merge")
    root = problem.root()
    data = batches.encode([(problem.link_key(root), root)], problem.topo.n, batches.codes_fit(problem))
    arrived = batches.decode(data, problem.topo.n)[0][1]
    assert all(a[1] == b[1] and (coded or a[1] is not b[1]) for a, b in zip(arrived.frontier, root.frontier))
    engines = [Explorer] + ([native_engine()] if native_built() else [])
    for cls in engines:
        engine = cls(problem, 0.6, 0, 0, 0, 1)
        assert engine.receive_batch(data) == 1
        kept = engine.open_branches()
        assert len(kept) == 1
        again = engine.open_branches()[0].frontier
        for a, b, c in zip(kept[0].frontier, root.frontier, again):
            # the native engine holds one object per value too: the first it saw, equal to these
            same = a[1] is b[1] if cls is Explorer else a[1] == b[1] and a[1] is c[1]
            assert type(a[1]) is int and a[1] == b[1] if coded else same


def damaged(data: bytes, at: int, value: bytes, seal: bool = True) -> bytes:
    """``data`` with ``value`` written at ``at``, its CRC made to agree again (``seal``)."""
    body = bytearray(data)
    body[at:at + len(value)] = value
    return batches.sealed(body[:8] + b"\0\0\0\0" + body[12:]) if seal else bytes(body)


@pytest.mark.parametrize("engine", ["python", pytest.param("native", marks=native)])
@pytest.mark.parametrize("coded", [True, False], ids=["codes", "pickled"])
def test_a_damaged_or_foreign_batch_is_refused_by_name(engine, coded):
    problem, sent = outgoing(DcmapCost() if coded else FunctionCost(hash_cost))
    n = problem.topo.n
    data = batches.encode(sent, n, coded)
    cls = Explorer if engine == "python" else native_engine()
    other = Problem(random_network(11, 70, 75), DcmapCost(), "merge")  # masks of two words
    cases = [
        (data[:len(data) // 2], "CRC does not match"),
        (data[:30], "not a dcmap batch|CRC"),
        (data[:-1] + bytes([data[-1] ^ 1]), "CRC does not match"),
        (b"PK\x03\x04" + data[4:], "not a dcmap batch"),
        (damaged(data, 4, struct.pack("<H", 2)), "format version 2, this dcmap reads version 1"),
        (damaged(data, 12, struct.pack("<I", 2)), "masks are of 2 words.*another network"),
        (damaged(data, 20, struct.pack("<I", 1 << 30)), "shorter than its counts say"),
        (damaged(data, 6, struct.pack("<H", 9)), "unknown flags 9"),
        (batches.sealed(bytearray(data) + b"\0" * 8) if coded else damaged(data, len(data) - 3, b"\xff\xff\xff"),
         "past its end" if coded else "do not unpickle|not its list"),
    ]
    for bad, why in cases:
        with pytest.raises(ValueError, match=f"a damaged batch: .*({why})"):
            cls(problem, 0.6, 0, 0, 0, 1).receive_batch(bad)
    with pytest.raises(ValueError, match="another network"):
        cls(other, 0.6, 0, 0, 0, 1).receive_batch(data)
    engine = cls(problem, 0.6, 0, 0, 0, 1)
    assert engine.receive_batch(data) > 0  # the batch itself is taken
    assert engine.receive_batch(b"") == 0


@native
def test_the_native_reader_checks_every_index():
    """Batches whose CRC agrees and whose parts do not: an index past its dictionary, a
    mask beyond the network's nodes, a key of the other kind, a nan cost."""
    problem, sent = outgoing(DcmapCost())
    data = batches.encode(sent, problem.topo.n, True)
    _, _, _, _, width, rows, masks, _, _, _, _, _, _, _, long_pool = struct.unpack_from("<4sHHI11I", data)
    first_row = 56 + 8 * (masks * width + long_pool)
    cases = [
        (damaged(data, first_row + 80, struct.pack("<I", 1 << 20)), "out of range"),  # the joins' sequence
        (damaged(data, 56, struct.pack("<Q", 1 << 63)), "nodes the network does not have"),
        (damaged(data, first_row + 36, struct.pack("<i", 2)), "another kind"),
        (damaged(data, first_row, struct.pack("<d", float("nan"))), "nan"),
        (damaged(data, first_row + 64, struct.pack("<i", 999)), "layer out of range"),
    ]
    for bad, why in cases:
        with pytest.raises(ValueError, match=f"a damaged batch: .*{why}|{why}"):
            native_engine()(problem, 0.6, 0, 0, 0, 1).receive_batch(bad)


def test_pickled_messages_are_unpickled_by_the_receiver_only_when_the_crc_agrees():
    problem, sent = outgoing(FunctionCost(hash_cost))
    data = batches.encode(sent, problem.topo.n, False, lambda value: pickle.dumps(value, protocol=5))
    assert struct.unpack_from("<H", data, 6)[0] == 1  # pickled
    assert plain(batches.decode(data, problem.topo.n)) == plain(sent)
