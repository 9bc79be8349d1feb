"""The open branches an explorer waits to expand: a queue reachable both by ``g_hat`` and
by (layer, ``g_hat``), its branches' components held as two-byte codes while they wait.

:class:`BranchQueue` is the queue of :class:`~dcmap_dist.search.explorer.Explorer`;
:class:`ComponentCodes` gives its codes. A queued branch's entry is a
:class:`~dcmap_dist.search.branch.QueueEntry` (docs/search.md, "The search's state in
memory").
"""

from __future__ import annotations

import heapq
import math
from array import array

from .branch import Branch, QueueEntry

__all__ = ["BranchQueue", "ComponentCodes"]

# the queue's heaps are rebuilt from their live entries when they hold more than
# STALE_SHARE entries per live branch, plus STALE_FLOOR (see BranchQueue)
STALE_SHARE = 2.5
STALE_FLOOR = 4096
CODES_KEPT = 1 << 16  # component masks a queue gives codes to (two bytes each)


class ComponentCodes:
    """Two-byte codes for component masks: a queued branch holds its components as
    codes (``bytes``, two per component), which take a quarter of the tuple's pointers
    and none of its header; most open branches repeat the components of a few hundred
    masks. Codes are given in order of first use, to at most :data:`CODES_KEPT` masks,
    and mean nothing outside this process."""

    __slots__ = ("_code", "_masks")

    def __init__(self) -> None:
        self._code: dict[int, int] = {}
        self._masks: list[int] = []

    def packed(self, comps: tuple[int, ...]) -> bytes | None:
        """``comps`` as codes; None if a mask has none and no code is left."""
        code = self._code
        try:  # nearly always: every mask has its code
            return array("H", [code[members] for members in comps]).tobytes()
        except KeyError:
            pass
        for members in comps:
            if members not in code:
                if len(self._masks) == CODES_KEPT:
                    return None
                code[members] = len(self._masks)
                self._masks.append(members)
        return self.packed(comps)

    def unpacked(self, codes: bytes) -> tuple[int, ...]:
        """The components of :meth:`packed`'s ``codes``."""
        masks = self._masks
        return tuple([masks[i] for i in array("H", codes)])


class BranchQueue:
    """Queued branches, reachable both by ``g_hat`` and by (layer, ``g_hat``).

    A branch has one entry (:class:`QueueEntry`: ``g_hat``, push number, branch), in two heaps: ``by_cost``, of
    every entry, and ``by_layer[l]``, of the entries of the branches at layer ``l``. Popping
    the cheapest takes the top of ``by_cost``; popping by layer, the top of the lowest layer's
    heap that holds a live entry: the order of (layer, ``g_hat``, push number). Popping an
    entry empties its branch slot, and the entry stays behind in the other heap, stale,
    skipped when it comes up. A branch pushed again (as one whose expansion a limit
    interrupted is) gets a new entry, so it is listed, and popped, once.

    A stale entry holds neither its branch nor anything of it but its ``g_hat`` and push
    number. Most entries popped by ``g_hat`` wait in the layer heaps behind the lower
    layers (docs/search.md, "The search's state in memory"). When the heaps hold more
    than :data:`STALE_SHARE` entries per live branch, all are rebuilt from their live
    entries; the entries are totally ordered (each has its push number, and an entry is
    never compared past it), so the order of pops is unchanged."""

    def __init__(self) -> None:
        self.by_cost: list[QueueEntry] = []
        self.by_layer: list[list[QueueEntry]] = []
        self.size = 0
        self._seq = 0
        self._layer_entries = 0  # entries in all of by_layer, stale ones included
        self._lowest = 0  # no layer below this one holds an entry
        self.codes = ComponentCodes()  # of the queued branches' components

    def push(self, branch: Branch) -> None:
        """Queue ``branch``, its components held as codes (:class:`ComponentCodes`) until
        it is popped: the branch is the queue's own from here, as every branch the
        explorer makes is (:meth:`Explorer.adopt` pushes copies of branches from outside)."""
        self._seq += 1
        entry = QueueEntry(branch.estimate, self._seq, branch)
        codes = self.codes.packed(branch.comps)
        if codes is not None:
            entry.comps = codes
            branch.comps = None
        heapq.heappush(self.by_cost, entry)
        layer = branch.layer
        while len(self.by_layer) <= layer:
            self.by_layer.append([])
        heapq.heappush(self.by_layer[layer], entry)
        if layer < self._lowest:
            self._lowest = layer
        self._layer_entries += 1
        self.size += 1
        if len(self.by_cost) + self._layer_entries > STALE_SHARE * self.size + STALE_FLOOR:
            self.compact()

    def compact(self) -> None:
        """Drop the stale entries of every heap (see the class docstring)."""
        self.by_cost = self._live()
        heapq.heapify(self.by_cost)
        self.by_layer = [[entry for entry in heap if entry.branch is not None] for heap in self.by_layer]
        for heap in self.by_layer:
            heapq.heapify(heap)
        self._layer_entries = len(self.by_cost)

    def _live(self) -> list[QueueEntry]:
        return [entry for entry in self.by_cost if entry.branch is not None]

    def branches(self) -> list[Branch]:
        """The queued branches, cheapest ``g_hat`` first (copies of those held as codes,
        which stay queued as they are)."""
        return [self._whole(entry) for entry in sorted(self._live())]

    def _whole(self, entry: QueueEntry) -> Branch:
        """A copy of the entry's branch with its components (the branch if it holds them)."""
        if entry.comps is None:
            return entry.branch
        whole = Branch(*entry.branch.fields())
        whole.comps = self.codes.unpacked(entry.comps)
        return whole

    def least_bound(self) -> float:
        """The smallest ``bound`` among queued branches (inf if none)."""
        return min((entry.branch.bound for entry in self._live()), default=math.inf)

    def pop(self, cheapest: bool) -> Branch | None:
        if cheapest:
            return self._pop_live(self.by_cost)
        by_layer = self.by_layer
        while self._lowest < len(by_layer):
            heap = by_layer[self._lowest]
            before = len(heap)
            branch = self._pop_live(heap)
            self._layer_entries -= before - len(heap)
            if branch is not None:
                return branch
            self._lowest += 1
        self._lowest = 0
        return None

    def _pop_live(self, heap: list[QueueEntry]) -> Branch | None:
        """The branch of the first live entry of ``heap`` (the entries before it, stale,
        are dropped), its entry emptied; None if there is none."""
        while heap:
            entry = heapq.heappop(heap)
            branch = entry.branch
            if branch is not None:
                entry.branch = None
                if entry.comps is not None:
                    branch.comps = self.codes.unpacked(entry.comps)
                    entry.comps = None
                self.size -= 1
                return branch
        return None
