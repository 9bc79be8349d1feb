"""A branch of the search: one partial mapping, as a record.

A :class:`Branch` holds one partial mapping: every node below layer ``layer`` is
placed, and some of the nodes of ``layer`` (``assigned``, a mask; -1 once the layer is
complete and the branch not yet moved to the next). Its fields are plain data (ints,
tuples, floats) so it can be serialised and moved between processes:

* ``comps``: the open components' member masks. A component is a connected piece
  of a cluster restricted to the layers done so far; it is open while it holds a
  node with a parent above the last completed layer. Bit ``i`` of ``fixed`` means the
  fate of component ``i`` at ``layer`` is decided (extended by a new cluster-layer, or
  not).
* ``frontier``: the frontier cluster-layers ``(members, message)``: those holding a
  node with a parent above the last completed layer. Future costs read only these.
  Messages are held as :mod:`dcmap_dist.search.messages` says: the built-in model's as
  codes, so a branch or a dominance key means the same in every process.
* ``link``: the id of the branch's last link record (:data:`NO_LINK`: none yet, the
  history starts at the root; :func:`link_of` and :func:`record_of` convert); ``joins``:
  the join masks of its history since that record (``()`` right after linking).
  ``trail`` reads both as one tuple, ``(record id or None, join masks...)``, the form
  :mod:`dcmap_dist.search.histories` stores. A branch carries no other history, so it
  pickles small.
* ``cost``: the cost of the cluster-layers placed; ``estimate``: ``g_hat``; ``bound``:
  ``cost`` plus an admissible lower bound on the rest.

A branch is a slotted class of these fields. A :class:`QueueEntry` is a queued branch's
entry in the explorer's heaps.
"""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["Branch", "QueueEntry", "link_of", "record_of"]

NO_LINK = -1  # a branch's link when it has no link record yet (its history starts at the root)
FIELDS = ("layer", "assigned", "comps", "frontier", "cost", "joins", "link", "estimate", "bound", "fixed")


class Branch:
    """One partial mapping (see the module docstring). Two branches are equal when
    their fields are; a branch pickles as the tuple of its fields (:meth:`fields`)."""

    __slots__ = FIELDS

    def __init__(self, layer: int, assigned: int, comps: tuple[int, ...],
                 frontier: tuple[tuple[int, Hashable], ...], cost: float, joins: tuple[int, ...] = (),
                 link: int = NO_LINK, estimate: float = 0.0, bound: float = 0.0, fixed: int = 0) -> None:
        self.layer = layer
        self.assigned = assigned
        self.comps = comps
        self.frontier = frontier
        self.cost = cost
        self.joins = joins
        self.link = link
        self.estimate = estimate
        self.bound = bound
        self.fixed = fixed

    def fields(self) -> tuple:
        """The fields in the order :class:`Branch` takes them."""
        return (self.layer, self.assigned, self.comps, self.frontier, self.cost, self.joins, self.link,
                self.estimate, self.bound, self.fixed)

    def __reduce__(self) -> tuple:
        return Branch, self.fields()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Branch):
            return NotImplemented
        return self.fields() == other.fields()

    def __repr__(self) -> str:
        return "Branch(" + ", ".join(f"{name}={value!r}" for name, value in zip(FIELDS, self.fields())) + ")"

    @property
    def layer_done(self) -> bool:
        return self.assigned == -1

    @property
    def trail(self) -> tuple:
        """The history since the last link record, ``(record id or None, join masks...)``."""
        return (record_of(self.link), *self.joins)

    def linked(self, record: int) -> Branch:
        """This branch linked at ``record``, its history restarting there: moved to the
        start of the next layer if it completed one, else where it stands."""
        if self.assigned == -1:
            return self.advanced(record)
        return Branch(self.layer, self.assigned, self.comps, self.frontier, self.cost, (), record,
                      self.estimate, self.bound, self.fixed)

    def advanced(self, record: int | None = None) -> Branch:
        """This completed branch moved to the start of the next layer. Linked at record
        ``record``, its history restarts there; unlinked, it keeps its trail."""
        joins, link = (self.joins, self.link) if record is None else ((), record)
        return Branch(self.layer + 1, 0, self.comps, self.frontier, self.cost, joins, link, self.estimate, self.bound)


def link_of(record: int | None) -> int:
    """A link record's id (None: none, the root) as a branch holds it in ``link``."""
    return NO_LINK if record is None else record


def record_of(link: int) -> int | None:
    """The inverse of :func:`link_of`: the record a branch's ``link`` names, None for the root."""
    return None if link == NO_LINK else link


class QueueEntry:
    """A queued branch's entry in the heaps of
    :class:`~dcmap_dist.search.branch_queue.BranchQueue`, ordered by ``g_hat`` then
    push number; ``branch`` is None once the branch is popped. ``comps``: the branch's
    components as the queue's codes while it waits (its own ``comps`` None then), else
    None."""

    __slots__ = ("g_hat", "seq", "branch", "comps")

    def __init__(self, g_hat: float, seq: int, branch: Branch | None) -> None:
        self.g_hat = g_hat
        self.seq = seq
        self.branch = branch
        self.comps: bytes | None = None

    def __lt__(self, other: QueueEntry) -> bool:
        return self.g_hat < other.g_hat or (self.g_hat == other.g_hat and self.seq < other.seq)
