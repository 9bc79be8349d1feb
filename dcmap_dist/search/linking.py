"""The link table: dominance between branches at the same point of the search.

Branches with equal :meth:`Problem.link_key` (having completed the same layer, or
placed the same nodes of one layer) have identical futures. The table keeps, per key,
the best cost, a record id, and whether a cheaper arrival has since dominated that
record. Every arrival at a key is decided by the table that owns the key:

* ``new``: no record yet; a record is made and the branch goes on;
* ``cheaper``: the old record is marked dominated (branches below it are pruned
  when popped) and a new record is made; the branch goes on;
* ``tie``: the branch's history is stored on the record as an alternative and
  the branch stops (its future is the recorded branch's);
* ``worse``: the branch stops. Under the ``lean`` key this is also the outcome of an
  arrival that would make a record while a record of the same frame with limits each a
  subset of its own is strictly cheaper (:func:`~.keys.frame_and_limits`;
  docs/search.md, "Dominance by fewer limits"): whatever it can still do, that record's
  branch does for less.

A record made (``new`` or ``cheaper``) in turn dominates the older records of its frame
whose limits each include its own and which are strictly dearer: they are marked
dominated as a record replaced by a cheaper arrival is.

The table can be split into shards by :func:`route` (a digest of the key's masks:
stable across processes, since keys hold only ints and the cost model's
messages, and the digest reads only the ints). A digest only routes a key;
equality is decided by the shard's dict, exactly. Each record keeps the histories of the
branches that reached it at its best cost (:mod:`dcmap_dist.search.histories`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from .histories import Histories, HistoryTable, history, record_id
from .keys import frame_and_limits
from .tolerance import within

__all__ = ["CHEAPER", "NEW", "TIE", "WORSE", "Entry", "LinkShard", "limits_within", "route"]

NEW, CHEAPER, TIE, WORSE = "new", "cheaper", "tie", "worse"


def route(key: tuple, shards: int) -> int:
    """The shard that owns ``key``: a digest of its masks (never of its messages,
    whose hashes may differ between processes). Deterministic across processes."""
    if shards == 1:
        return 0
    if len(key) == 4:  # lean: (head, cluster-layers, (union, outside, ...), blocked pairs as bits)
        head, items, masks, blocked = key
    else:  # full: (head, component masks, cluster-layers)
        head, masks, items = key
        blocked = 0
    return hash((head, blocked, *masks, *[item[0] for item in items])) % shards


def limits_within(outsides: tuple, blocked: int, their_outsides: tuple, their_blocked: int) -> bool:
    """Whether the limits ``outsides`` (each part's outside mask) and ``blocked`` are each a
    subset of ``their_outsides`` and ``their_blocked`` (keys of one frame)."""
    return not blocked & ~their_blocked and all(not mine & ~theirs for mine, theirs in zip(outsides, their_outsides))


class Entry:
    """One key of the link table: its best cost and the record of that arrival. (A
    record that a cheaper arrival replaced is in its owner's set of dominated records.)
    A slotted class."""

    __slots__ = ("best", "record")

    def __init__(self, best: float, record: int) -> None:
        self.best = best
        self.record = record

    def __reduce__(self) -> tuple:
        return Entry, (self.best, self.record)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return self.best == other.best and self.record == other.record

    def __repr__(self) -> str:
        return f"Entry(best={self.best!r}, record={self.record!r})"


class LinkShard:
    """The part of the link table owned by one actor (all of it when serial).

    ``owner`` makes its record ids unique (see :func:`record_id`).
    """

    def __init__(self, owner: int) -> None:
        self.owner = owner
        self.entries: dict[tuple, Entry] = {}
        self.histories = HistoryTable()
        self._serial = 0
        # the lean keys' entries by frame, in order of first arrival: (outsides, blocked, entry)
        self._frames: dict[tuple, list[tuple[tuple, int, Entry]]] = {}

    def load(self, entries: dict[tuple, Entry], histories: HistoryTable) -> None:
        """Take over ``entries`` (in order of first arrival) and their ``histories``."""
        self.entries, self.histories = entries, histories
        self._frames = {}
        for key, entry in entries.items():
            self._index(frame_and_limits(key), entry)

    def _index(self, split: tuple[tuple, tuple, int] | None, entry: Entry) -> None:
        """Index the entry of a key split by :func:`~.keys.frame_and_limits` (None: not lean)."""
        if split is not None:
            frame, outsides, blocked = split
            self._frames.setdefault(frame, []).append((outsides, blocked, entry))

    def rivals(self, split: tuple[tuple, tuple, int] | None, cost: float, own: Entry | None,
               dominated: Container[int]) -> tuple[Entry | None, list[int]]:
        """The records of the frame of a key split by :func:`~.keys.frame_and_limits` that
        an arrival at the key of ``cost`` meets, newest first: the first whose limits are
        each a subset of the key's, at a cost strictly below ``cost`` (it dominates the
        arrival), else None and the records it would dominate if it made a record, those
        whose limits each include the key's, at a cost strictly above, other than the
        key's ``own`` entry and those already ``dominated``. (None and none if the key is
        not lean: ``split`` None.)"""
        if split is None:
            return None, []
        frame, outsides, blocked = split
        dearer: list[int] = []
        for their_outsides, their_blocked, entry in reversed(self._frames.get(frame, ())):
            if not within(cost, entry.best):
                if limits_within(their_outsides, their_blocked, outsides, blocked):
                    return entry, []
            elif (not within(entry.best, cost) and entry is not own and entry.record not in dominated
                  and limits_within(outsides, blocked, their_outsides, their_blocked)):
                dearer.append(entry.record)
        return None, dearer

    def settle(self, key: tuple, cost: float, trail: tuple, iteration: int,
               dominated: Container[int] = ()) -> tuple[str, int, list[int]]:
        """Decide an arrival at ``key``: ``(outcome, record, records dominated)``. For
        ``new`` and ``cheaper`` the record is the new one, and the records it dominates
        are listed (for ``cheaper`` the key's old record first, then those of its frame
        with more limits: :meth:`rivals`, skipping those in ``dominated``); ties and worse
        arrivals return the existing one and none."""
        entry = self.entries.get(key)
        replaced = []
        if entry is not None:
            if within(entry.best, cost):  # not cheaper
                if within(cost, entry.best):
                    self.histories.add(entry.record, history(iteration, trail))
                    entry.best = min(entry.best, cost)
                    return TIE, entry.record, []
                return WORSE, entry.record, []
            replaced.append(entry.record)
        split = frame_and_limits(key)
        cheaper, dearer = self.rivals(split, cost, entry, dominated)
        if cheaper is not None:
            return WORSE, cheaper.record, []
        self._serial += 1
        record = record_id(self.owner, self._serial)
        if entry is None:
            entry = self.entries[key] = Entry(cost, record)
            self._index(split, entry)
        else:  # the same object stays indexed by its frame
            entry.best, entry.record = cost, record
        self.histories.add(record, history(iteration, trail))
        return (NEW if not replaced else CHEAPER), record, replaced + dearer

    def lookup(self, records: Iterable[int]) -> dict[int, Histories]:
        """The histories of those of ``records`` this shard holds (``bytes``, made as they
        are read: a worker answers in a thread of its own while its search may add ties)."""
        histories = self.histories
        return {r: histories[r] for r in records if r in histories}
