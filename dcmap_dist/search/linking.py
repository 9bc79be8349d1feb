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

The table can be split into shards by :func:`route` (a digest of the key's masks:
stable across processes, since keys hold only ints and the cost model's
messages, and the digest reads only the ints). A digest only routes a key;
equality is decided by the shard's dict, exactly. Each record keeps the histories of the
branches that reached it at its best cost (:mod:`dcmap_dist.search.histories`).
"""

from __future__ import annotations

from collections.abc import Iterable

from .histories import Histories, HistoryTable, history, record_id
from .keys import frame_and_limits
from .tolerance import within

__all__ = ["CHEAPER", "NEW", "TIE", "WORSE", "Entry", "LinkShard", "route"]

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

    def fewer_limits(self, split: tuple[tuple, tuple, int] | None, cost: float) -> Entry | None:
        """The newest entry of the frame of a key split by :func:`~.keys.frame_and_limits`
        whose limits are each a subset of the key's, at a cost strictly below ``cost`` (it
        dominates an arrival at the key of that cost); None if there is none (or the key
        is not lean: ``split`` None)."""
        if split is None:
            return None
        frame, outsides, blocked = split
        group = self._frames.get(frame)
        if group is None:
            return None
        for their_outsides, their_blocked, entry in reversed(group):
            if (not within(cost, entry.best) and not their_blocked & ~blocked
                    and all(not theirs & ~mine for theirs, mine in zip(their_outsides, outsides))):
                return entry
        return None

    def settle(self, key: tuple, cost: float, trail: tuple, iteration: int) -> tuple[str, int, int | None]:
        """Decide an arrival at ``key``: ``(outcome, record, dominated record)``. For
        ``new`` and ``cheaper`` the record is the new one; for ``cheaper`` the third
        item is the record it dominated; ties and worse arrivals return the existing one."""
        entry = self.entries.get(key)
        dominated = None
        if entry is not None:
            if within(entry.best, cost):  # not cheaper
                if within(cost, entry.best):
                    self.histories.add(entry.record, history(iteration, trail))
                    entry.best = min(entry.best, cost)
                    return TIE, entry.record, None
                return WORSE, entry.record, None
            dominated = entry.record
        split = frame_and_limits(key)
        cheaper = self.fewer_limits(split, cost)
        if cheaper is not None:
            return WORSE, cheaper.record, None
        self._serial += 1
        record = record_id(self.owner, self._serial)
        if entry is None:
            entry = self.entries[key] = Entry(cost, record)
            self._index(split, entry)
        else:  # the same object stays indexed by its frame
            entry.best, entry.record = cost, record
        self.histories.add(record, history(iteration, trail))
        return (NEW if dominated is None else CHEAPER), record, dominated

    def lookup(self, records: Iterable[int]) -> dict[int, Histories]:
        """The histories of those of ``records`` this shard holds (``bytes``, made as they
        are read: a worker answers in a thread of its own while its search may add ties)."""
        histories = self.histories
        return {r: histories[r] for r in records if r in histories}
