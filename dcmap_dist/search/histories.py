"""The tied histories that rebuild every optimal mapping: how a link record keeps the
history of each branch that reached it at its best cost, and how the mappings are read
back from them.

A *trail* is ``(record id or None, join mask, ...)``: a branch's history since its last
link record (``None``: since the root; a branch holds it as ``link`` and ``joins``).
``histories[record]`` holds a *history* for every branch that reached the record at its
best cost: the iteration it was found at and its trail, as bytes (:func:`history`). A
record's histories read as one run of bytes, one history after another
(:func:`histories_of` splits it). Millions of them are kept, so a shard of the link table
(:mod:`dcmap_dist.search.linking`) keeps them all in one buffer (:class:`HistoryTable`),
indexed by the record's id (:func:`record_id`). A mapping is rebuilt by following a trail
back, record by record, to the root (:func:`trail_joins`, :func:`trail_path`,
:func:`trail_count`).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping

__all__ = ["Histories", "HistoryTable", "MissingRecord", "first_history", "gather_histories", "histories_of",
           "history", "history_fields", "history_parts", "history_record", "record_id", "trail_count", "trail_joins",
           "trail_path"]

History = bytes  # one history: see history()
Histories = bytes | bytearray  # a record's histories, one after another: see histories_of()
_PREVIOUS = struct.Struct("<q")  # where the record's previous history is kept (-1: none)
SERIAL_BITS = 36  # a record id is its owner's number, then this many bits of its serial
_SERIAL_MASK = (1 << SERIAL_BITS) - 1


def record_id(owner: int, serial: int) -> int:
    """A record id unique across the whole search: the owner's number (unique per
    shard and per start of a run) and its own counter."""
    return (owner << SERIAL_BITS) | serial


def history(iteration: int, trail: tuple) -> History:
    """A history as bytes: the length of the rest (a varint), then one byte giving the
    bytes of the iteration (low four bits) and of the trail's record plus one (high four
    bits; 0 for the root), those two as little-endian unsigned ints of that many bytes,
    then each join mask as its length in bytes (a varint) and its little-endian bytes.
    The length lets a record keep its histories one after another. (A varint: seven bits
    a byte, lowest first, the top bit set on every byte but the last.)"""
    record = trail[0]
    record = 0 if record is None else record + 1
    iteration_size = (iteration.bit_length() + 7) >> 3
    record_size = (record.bit_length() + 7) >> 3
    pieces = [bytes((iteration_size | record_size << 4,)), iteration.to_bytes(iteration_size, "little"),
              record.to_bytes(record_size, "little")]
    for mask in trail[1:]:
        length = (mask.bit_length() + 7) >> 3
        pieces.append(_varint(length))
        pieces.append(mask.to_bytes(length, "little"))
    body = b"".join(pieces)
    return _varint(len(body)) + body


def _varint(value: int) -> bytes:
    """``value`` (not negative) as a varint (see :func:`history`)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint_at(run: bytes | bytearray, at: int) -> tuple[int, int]:
    """The varint that starts at ``at`` of ``run``, and where it ends."""
    value = run[at]
    at += 1
    if value < 0x80:
        return value, at
    value &= 0x7F
    shift = 7
    while True:
        byte = run[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _history_end(run: bytes | bytearray, at: int) -> int:
    """Where the history that starts at ``at`` of a run ends."""
    size, body = _varint_at(run, at)
    return body + size


def history_fields(data: History) -> tuple[int, tuple]:
    """The inverse of :func:`history`: ``(iteration, trail)``."""
    _, iteration, record, joins = _history_at(data, 0)
    return iteration, (record, *[int.from_bytes(join, "little") for join in joins])


def history_parts(held: Histories) -> Iterator[tuple[int, int | None, list[bytes]]]:
    """A record's histories as they are stored, in order: ``(iteration, the trail's record
    or None, the trail's join masks as little-endian bytes)``. A join of no nodes reads as
    one zero byte, as :func:`dcmap_dist.checkpoint.codec.mask_bytes` writes it."""
    run = bytes(held)
    at = 0
    while at < len(run):
        at, iteration, record, joins = _history_at(run, at)
        yield iteration, record, joins


def _history_at(run: bytes, at: int) -> tuple[int, int, int | None, list[bytes]]:
    """The history that starts at ``at`` of a run: where it ends, its iteration, its
    trail's record (None: the root) and its join masks as bytes (see :func:`history_parts`)."""
    end, iteration, record, at = _head_at(run, at)
    joins = []
    while at < end:
        length, at = _varint_at(run, at)
        joins.append(run[at:at + length] or b"\0")
        at += length
    return end, iteration, record, joins


def _head_at(run: bytes, at: int) -> tuple[int, int, int | None, int]:
    """The head of the history that starts at ``at`` of a run: where the history ends,
    its iteration, its trail's record (None: the root) and where its join masks start."""
    size, at = _varint_at(run, at)
    sizes = run[at]
    iteration_end = at + 1 + (sizes & 15)
    record_end = iteration_end + (sizes >> 4)
    iteration = int.from_bytes(run[at + 1:iteration_end], "little")
    record = int.from_bytes(run[iteration_end:record_end], "little") - 1
    return at + size, iteration, None if record < 0 else record, record_end


def history_record(data: History) -> int | None:
    """The record a history's trail starts from (None: the root)."""
    return _head_at(data, 0)[2]


def histories_of(held: Histories) -> list[History]:
    """A record's histories, in the order they arrived (the first made the record)."""
    run = bytes(held)  # a bytearray copied once (bytes is itself): its slices are then bytes
    found = []
    at = 0
    while at < len(run):
        end = _history_end(run, at)
        found.append(run[at:end])
        at = end
    return found


def first_history(held: Histories) -> History:
    """A record's first history: the arrival that made the record (the others are ties)."""
    return bytes(held[:_history_end(held, 0)])


class MissingRecord(LookupError):
    """A link record no shard holds (a distributed search lost it with a worker)."""


class HistoryTable(Mapping):
    """The tied histories of a shard's link records: a mapping from a record id to the
    record's histories, one after another (``bytes``, made on each read).

    One ``bytearray`` holds every history, each after the offset of its record's
    previous history (int64, -1 for the first); per owner of record ids
    (:func:`record_id`), an int64 ``array`` indexed by the serial holds the offset of
    each record's last history (-1: none). A record costs 8 bytes here and a history 8
    more than its own bytes, where a dict of runs of bytes spent more on each record's
    key, slot and object header than on its histories. ``histories`` (a mapping of the
    same kind) fills it."""

    __slots__ = ("_store", "_last", "_records")

    def __init__(self, histories: Mapping[int, Histories] | None = None) -> None:
        self._store = bytearray()
        self._last: dict[int, array] = {}  # owner -> offset of each serial's last history
        self._records = 0
        for record, held in (histories or {}).items():
            for data in histories_of(held):
                self.add(record, data)

    @classmethod
    def of(cls, histories: Mapping[int, Histories]) -> HistoryTable:
        """``histories`` as a table: itself if it is one."""
        return histories if isinstance(histories, HistoryTable) else cls(histories)

    def add(self, record: int, data: History) -> None:
        """Add the history ``data`` to the record's (a new record if it has none)."""
        if record < 0:
            raise ValueError(f"record ids are not negative: {record}")
        owner, serial = record >> SERIAL_BITS, record & _SERIAL_MASK
        last = self._last.get(owner)
        if last is None:
            last = self._last[owner] = array("q")
        if serial >= len(last):
            last.frombytes(b"\xff" * (last.itemsize * (serial + 1 - len(last))))  # -1s
        previous = last[serial]
        if previous < 0:
            self._records += 1
        store = self._store
        at = len(store)
        store += _PREVIOUS.pack(previous)
        store += data
        last[serial] = at  # last: a lookup in another thread reads whole histories only

    def _last_of(self, record: int) -> int:
        """Where the record's last history is kept; -1 if it has none."""
        last = self._last.get(record >> SERIAL_BITS) if record >= 0 else None
        serial = record & _SERIAL_MASK
        return last[serial] if last is not None and serial < len(last) else -1

    def __getitem__(self, record: int) -> bytes:
        at = self._last_of(record)
        if at < 0:
            raise KeyError(record)
        store = self._store
        pieces = []
        while at >= 0:
            start = at + _PREVIOUS.size
            pieces.append(store[start:_history_end(store, start)])
            at = _PREVIOUS.unpack_from(store, at)[0]
        pieces.reverse()
        return b"".join(pieces)

    def __contains__(self, record: object) -> bool:
        try:
            return self._last_of(record) >= 0
        except TypeError:  # not a record id
            return False

    def __iter__(self) -> Iterator[int]:
        for owner, last in list(self._last.items()):
            for serial, at in enumerate(last):
                if at >= 0:
                    yield (owner << SERIAL_BITS) | serial

    def __len__(self) -> int:
        return self._records

    def __repr__(self) -> str:
        return f"HistoryTable({self._records} records, {len(self._store)} bytes)"


def gather_histories(trails: Iterable[tuple], fetch: Callable[[set[int]], dict[int, Histories]],
                     first: bool = False) -> dict[int, Histories]:
    """Every history reachable from ``trails``, fetched layer by layer: ``fetch(records)``
    returns the histories of the records (from one shard or from all of them). With
    ``first``, only each record's first history, the path :func:`trail_path` follows, and
    a record no shard holds (lost with a worker) is left out for ``trail_path`` to report
    instead of raising here."""
    found: dict[int, Histories] = {}
    wanted = {trail[0] for trail in trails if trail[0] is not None}
    while wanted:
        got = fetch(wanted)
        if first:
            got = {record: first_history(held) for record, held in got.items()}
        elif missing := wanted - got.keys():
            raise MissingRecord(f"link records {sorted(missing)[:5]} are held by no shard")
        found.update(got)
        wanted = {history_record(data) for held in got.values() for data in histories_of(held)} - {None} - found.keys()
    return found


def trail_joins(trail: tuple, histories: Mapping[int, Histories]) -> Iterator[tuple[tuple[int, ...], int]]:
    """Every mapping a trail stands for, as (join masks, iteration found)."""
    stack: list[tuple[tuple, tuple[int, ...], int]] = [(trail, (), 0)]
    while stack:
        (record, *joins), later, found = stack.pop()
        joins = tuple(joins) + later
        if record is None:
            yield joins, found
        else:
            for data in histories_of(histories[record]):
                iteration, prefix = history_fields(data)
                stack.append((prefix, joins, max(found, iteration)))


def trail_path(trail: tuple, fetch: Callable[[set[int]], dict[int, Histories]]) -> tuple[int, ...]:
    """The join masks of the one mapping a branch itself followed to ``trail``: each
    record's first history is the arrival that made the record (later ones are ties)."""
    joins: tuple[int, ...] = ()
    while True:
        record, *later = trail
        joins = tuple(later) + joins
        if record is None:
            return joins
        got = fetch({record})
        if record not in got:
            raise MissingRecord(f"link record {record} is held by no shard")
        trail = history_fields(first_history(got[record]))[1]


def trail_count(trail: tuple, histories: Mapping[int, Histories], memo: dict[int, int] | None = None) -> int:
    """How many mappings a trail stands for, without listing them."""
    return _record_count(trail[0], histories, {} if memo is None else memo)


def _record_count(record: int | None, histories: Mapping[int, Histories], memo: dict[int, int]) -> int:
    """How many mappings the trails through ``record`` stand for (1 for the root)."""
    if record is None:
        return 1
    got = memo.get(record)
    if got is None:
        got = memo[record] = sum(_record_count(history_record(data), histories, memo)
                                 for data in histories_of(histories[record]))
    return got
