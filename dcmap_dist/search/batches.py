"""The batches of completions that cross between the actors of a distributed search: the
format, written and read here for the Python engine and for anything outside the engines
(the coordinator's bounds, a checkpoint's arrivals in flight), and natively by the native
engine (``native/batch.hpp``, which writes the same bytes for the same arrivals).

A batch is one little-endian buffer: a header, dictionaries of the batch's distinct
masks, messages, frontier items, sequences and long masks, then a fixed-size row per
arrival of indices into them (``docs/distributed.md``, "Batches", gives the layout).
Values are written in the order of their first use, visiting each arrival's key parts in
order, then its branch's assigned nodes, components, frontier, joins and fixed mask.
The built-in model's messages are codes, written as masks; any other model's messages
are pickled once per batch, after the rows. A CRC-32 covers the batch.
"""

from __future__ import annotations

import pickle
import struct
import zlib
from collections.abc import Callable
from typing import Any

from .branch import Branch

__all__ = ["checked", "codes_fit", "decode", "encode", "least_bound", "rows_in", "sealed"]

MAGIC = b"DCMB"
VERSION = 1
PICKLED = 1  # flag: the messages are pickled after the rows
HEADER = struct.Struct("<4sHHI11I")  # magic, version, flags, CRC, width, then the counts
CHECKED_FROM = 12  # the CRC covers the batch from here on
ROW = struct.Struct("<dddqii6Ii5I")  # costs, link, key (layer, kind, 6 parts), branch's layer and indices
NO_MASK = 0xFFFFFFFF  # a branch's assigned nodes once its layer is complete
LEAN_DONE, LEAN_INSIDE, FULL_DONE, FULL_INSIDE = range(4)


def sealed(body: bytes | bytearray, pickled: bytes = b"") -> bytes:
    """A batch from its ``body`` (CRC 0) and its pickled messages, with its CRC."""
    data = bytearray(body)
    data += pickled
    struct.pack_into("<I", data, 8, zlib.crc32(memoryview(data)[CHECKED_FROM:]))
    return bytes(data)


def checked(batch: Any) -> memoryview:
    """``batch`` (bytes or a buffer, e.g. a numpy array from Ray's object store) as bytes,
    once it is known to be a batch of this format whose CRC agrees (ValueError otherwise)."""
    view = memoryview(batch).cast("B")
    if len(view) < HEADER.size or bytes(view[:4]) != MAGIC:
        raise ValueError("a damaged batch: it is not a dcmap batch")
    version = int.from_bytes(view[4:6], "little")
    if version != VERSION:
        raise ValueError(f"a damaged batch: it is of format version {version}, this dcmap reads version {VERSION}")
    if zlib.crc32(view[CHECKED_FROM:]) != int.from_bytes(view[8:12], "little"):
        raise ValueError("a damaged batch: its CRC does not match its bytes")
    return view


def encode(arrivals: list[tuple[tuple, Branch]], n: int, coded: bool,
           dumps: Callable[[Any], bytes] = pickle.dumps) -> bytes:
    """A batch of ``arrivals`` (``(link key, branch)``) of a network of ``n`` nodes;
    ``coded``: the messages are codes of at most ``n`` bits (the built-in model), written
    as masks, else pickled with ``dumps``."""
    writer = _Writer((n + 63) // 64, coded)
    for key, branch in arrivals:
        writer.add(key, branch)
    return writer.batch(dumps)


def decode(batch: Any, n: int) -> list[tuple[tuple, Branch]]:
    """The arrivals of a batch of a network of ``n`` nodes (ValueError naming the damage,
    for a batch of another format, network or version, or one whose parts disagree)."""
    return _Reader(batch, n).arrivals()


def rows_in(batch: Any) -> int:
    """The arrivals a batch says it holds (0 for an empty one), from its header alone."""
    return HEADER.unpack_from(batch)[5] if len(batch) else 0


def codes_fit(problem: Any) -> bool:
    """Whether a search's messages are written as masks: codes (the built-in model) of a
    network that is one component, so that a code fits a mask of its nodes."""
    return problem.messages.coded and len(problem.graph.nodes) == problem.topo.n


def least_bound(batch: Any, n: int) -> float:
    """The least bound over a batch's branches (inf: none), read from its rows alone."""
    if not len(batch):
        return float("inf")
    reader = _Reader(batch, n)
    return min((row[2] for row in ROW.iter_unpack(reader.section("rows"))), default=float("inf"))


class _Writer:
    """One batch's dictionaries (value -> index, in order of first use) and rows."""

    def __init__(self, width: int, coded: bool) -> None:
        self.width, self.coded = width, coded
        self.masks: dict[int, int] = {}
        self.messages: dict[Any, int] = {}
        self.message_masks: list[int] = []
        self.items: dict[tuple, int] = {}
        self.item_parts: list[int] = []
        self.mask_seqs: dict[tuple, int] = {}
        self.mask_lengths: list[int] = []
        self.mask_pool: list[int] = []
        self.item_seqs: dict[tuple, int] = {}
        self.item_lengths: list[int] = []
        self.item_pool: list[int] = []
        self.longs: dict[int, int] = {}
        self.long_words = bytearray()
        self.long_lengths: list[int] = []
        self.rows = bytearray()

    def mask(self, value: int) -> int:
        at = self.masks.get(value)
        if at is None:
            at = self.masks[value] = len(self.masks)
        return at

    def message(self, value: Any) -> int:
        at = self.messages.get(value)
        if at is None:
            if self.coded:
                self.message_masks.append(self.mask(value))
            at = self.messages[value] = len(self.messages)
        return at

    def item(self, value: tuple) -> int:
        at = self.items.get(value)
        if at is None:
            self.item_parts += (self.mask(value[0]), self.message(value[1]))
            at = self.items[value] = len(self.items)
        return at

    def mask_seq(self, value: tuple) -> int:
        return self.sequence(value, self.mask_seqs, self.mask_lengths, self.mask_pool, self.mask)

    def item_seq(self, value: tuple) -> int:
        return self.sequence(value, self.item_seqs, self.item_lengths, self.item_pool, self.item)

    @staticmethod
    def sequence(value: tuple, index: dict[tuple, int], lengths: list[int], pool: list[int],
                 member: Callable[[Any], int]) -> int:
        """The index of sequence ``value`` in ``index``: its members first (``member``)."""
        at = index.get(value)
        if at is None:
            pool += [member(m) for m in value]
            lengths.append(len(value))
            at = index[value] = len(index)
        return at

    def long(self, value: int) -> int:
        at = self.longs.get(value)
        if at is None:
            words = (value.bit_length() + 63) // 64
            self.long_words += value.to_bytes(8 * words, "little")
            self.long_lengths.append(words)
            at = self.longs[value] = len(self.longs)
        return at

    def key(self, key: tuple) -> tuple[int, int, tuple[int, ...]]:
        """The key's layer, kind and parts (search/keys.py's tuples; native/branch.hpp's Key, its parts per kind in KEY_PARTS)."""
        head = key[0]
        if len(key) == 4:
            if type(head) is int:
                return head, LEAN_DONE, (self.item_seq(key[1]), self.mask_seq(key[2]), self.long(key[3]), 0, 0, 0)
            return head[0], LEAN_INSIDE, (self.mask(head[1]), self.mask(head[2]), self.mask(head[3]),
                                          self.item_seq(key[1]), self.mask_seq(key[2]), self.long(key[3]))
        if type(head) is int:
            return head, FULL_DONE, (self.mask_seq(key[1]), self.item_seq(key[2]), 0, 0, 0, 0)
        return head[0], FULL_INSIDE, (self.mask(head[1]), self.mask(head[2]), self.mask_seq(key[1]),
                                      self.item_seq(key[2]), 0, 0)

    def add(self, key: tuple, b: Branch) -> None:
        layer, kind, parts = self.key(key)
        assigned = NO_MASK if b.assigned == -1 else self.mask(b.assigned)
        comps, frontier, joins = self.mask_seq(b.comps), self.item_seq(b.frontier), self.mask_seq(b.joins)
        self.rows += ROW.pack(b.cost, b.estimate, b.bound, b.link, layer, kind, *parts, b.layer, assigned, comps,
                              frontier, joins, self.mask(b.fixed))

    def batch(self, dumps: Callable[[Any], bytes]) -> bytes:
        words = 8 * self.width
        body = bytearray(HEADER.pack(
            MAGIC, VERSION, 0 if self.coded else PICKLED, 0, self.width, len(self.rows) // ROW.size, len(self.masks),
            len(self.messages), len(self.items), len(self.mask_lengths), len(self.mask_pool), len(self.item_lengths),
            len(self.item_pool), len(self.long_lengths), len(self.long_words) // 8))
        for mask in self.masks:
            body += mask.to_bytes(words, "little")
        body += self.long_words
        body += self.rows
        for part in (self.message_masks if self.coded else [], self.item_parts, self.mask_lengths, self.mask_pool,
                     self.item_lengths, self.item_pool, self.long_lengths):
            body += struct.pack(f"<{len(part)}I", *part)
        return sealed(body, b"" if self.coded else dumps(list(self.messages)))


class _Reader:
    """A batch's sections, found from its header and checked against its length."""

    SECTIONS = ("masks", "long_pool", "rows", "messages", "items", "mask_lengths", "mask_pool", "item_lengths",
                "item_pool", "long_lengths")

    def __init__(self, batch: Any, n: int) -> None:
        view = self.view = checked(batch)
        _, _, flags, _, width, *counts = HEADER.unpack_from(view)
        self.width = width
        if flags > PICKLED:
            self.fail(f"unknown flags {flags}")
        self.pickled = flags == PICKLED
        if width != (n + 63) // 64:
            self.fail(f"its masks are of {width} words, this search's of {(n + 63) // 64} (a batch of another network)")
        (self.rows, masks, self.messages, items, mask_seqs, mask_pool, item_seqs, item_pool, longs,
         long_pool) = counts
        self.n = n
        sizes = (masks * width * 8, long_pool * 8, self.rows * ROW.size, 0 if self.pickled else self.messages * 4,
                 items * 8, mask_seqs * 4, mask_pool * 4, item_seqs * 4, item_pool * 4, longs * 4)
        self.at: dict[str, tuple[int, int]] = {}
        at = HEADER.size
        for name, size in zip(self.SECTIONS, sizes):
            if size > len(view) - at:
                self.fail("it is shorter than its counts say")
            self.at[name] = (at, size)
            at += size
        self.end = at
        if not self.pickled and at != len(view):
            self.fail(f"it has {len(view) - at} bytes past its end")

    @staticmethod
    def fail(why: str) -> None:
        raise ValueError(f"a damaged batch: {why}")

    def section(self, name: str) -> memoryview:
        at, size = self.at[name]
        return self.view[at:at + size]

    def ints(self, name: str) -> list[int]:
        view = self.section(name)
        return list(view.cast("I")) if view.nbytes else []

    def arrivals(self) -> list[tuple[tuple, Branch]]:
        try:
            return self._arrivals()
        except IndexError:
            self.fail("an index out of range")
        except (pickle.UnpicklingError, EOFError, TypeError, AttributeError, ImportError) as exc:
            self.fail(f"its messages do not unpickle ({exc})")

    def _arrivals(self) -> list[tuple[tuple, Branch]]:
        size = 8 * self.width
        data = bytes(self.section("masks"))
        masks = [int.from_bytes(data[k:k + size], "little") for k in range(0, len(data), size)]
        if any(m >> self.n for m in masks):
            self.fail("a mask names nodes the network does not have")
        if self.pickled:
            messages = pickle.loads(self.view[self.end:])
            if type(messages) is not list or len(messages) != self.messages:
                self.fail("its pickled messages are not its list of messages")
        else:
            messages = [masks[k] for k in self.ints("messages")]
        parts = self.ints("items")
        items = [(masks[parts[k]], messages[parts[k + 1]]) for k in range(0, len(parts), 2)]
        if any(members == 0 for members, _ in items):
            self.fail("a frontier cluster-layer of no nodes")
        mask_seqs = self.sequences("mask", masks)
        item_seqs = self.sequences("item", items)
        data, longs, at = bytes(self.section("long_pool")), [], 0
        for length in self.ints("long_lengths"):
            if length > len(data) // 8 - at:
                self.fail("its long masks overrun their pool")
            longs.append(int.from_bytes(data[8 * at:8 * (at + length)], "little"))
            at += length
        if 8 * at != len(data):
            self.fail("its long masks do not fill their pool")
        out = []
        for (cost, estimate, bound, link, key_layer, kind, a, b, c, d, e, f, layer, assigned, comps, frontier, joins,
             fixed) in ROW.iter_unpack(self.section("rows")):
            if kind == LEAN_DONE:
                key = (key_layer, item_seqs[a], mask_seqs[b], longs[c])
            elif kind == LEAN_INSIDE:
                key = ((key_layer, masks[a], masks[b], masks[c]), item_seqs[d], mask_seqs[e], longs[f])
            elif kind == FULL_DONE:
                key = (key_layer, mask_seqs[a], item_seqs[b])
            elif kind == FULL_INSIDE:
                key = ((key_layer, masks[a], masks[b]), mask_seqs[c], item_seqs[d])
            else:
                self.fail(f"a link key of kind {kind}")
            out.append((key, Branch(layer, -1 if assigned == NO_MASK else masks[assigned], mask_seqs[comps],
                                    item_seqs[frontier], cost, mask_seqs[joins], link, estimate, bound, masks[fixed])))
        return out

    def sequences(self, kind: str, values: list) -> list[tuple]:
        pool, out, at = self.ints(f"{kind}_pool"), [], 0
        for length in self.ints(f"{kind}_lengths"):
            if length > len(pool) - at:
                self.fail(f"its {kind} sequences overrun their pool")
            out.append(tuple([values[k] for k in pool[at:at + length]]))
            at += length
        if at != len(pool):
            self.fail(f"its {kind} sequences do not fill their pool")
        return out
