"""The coordinator's snapshots (see :mod:`dcmap_dist.run.ray.driver` for the design): a
consistent cut of every worker's state and the batches in flight, taken now and then
and for each checkpoint, from which a lost worker is recovered by rolling every worker
back to it. :class:`Snapshots` decides when one is due, takes it from what the
coordinator hands it, and keeps the latest, which it hands over as a checkpoint's parts.

A snapshot's parts are fetched into the coordinator's process (on the driver's node):
a part left in a worker's object store would be lost with the worker's node, and with
it the recovery. The interval follows what snapshots are measured to cost: a lost
worker undoes at most :data:`ROLLBACK_SHARE` of the search so far, and never more than
``every`` seconds of it, unless snapshots would then take more than 1 /
:data:`SNAPSHOT_SPACING` of the time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ray
import ray.cloudpickle

from ...search.state import Improvement, SearchState
from .protocol import Cut, Snapshot, Totals
from .steps import WorkerSlot

__all__ = ["LEAST_SNAPSHOT_SECONDS", "ROLLBACK_SHARE", "SCALED_ITEMS", "SNAPSHOT_SPACING", "Snapshots"]

SNAPSHOT_SPACING = 20  # the next snapshot waits at least this many times its expected duration (5% of the time)
ROLLBACK_SHARE = 0.1  # a snapshot is due when this share of the search so far has passed since the last
LEAST_SNAPSHOT_SECONDS = 0.5  # and never sooner than this after the last
SCALED_ITEMS = 1_000  # a snapshot's cost is scaled to more items from one of at least this many


class Snapshots:
    """The snapshots of one distributed search: one at least every ``every`` seconds
    and every :data:`ROLLBACK_SHARE` of the search so far (None: only those a checkpoint
    asks for), and never more than 1 / :data:`SNAPSHOT_SPACING` of the time."""

    def __init__(self, every: float | None) -> None:
        self.every = every
        self.latest: Snapshot | None = None
        self.last = 0.0  # when the last one ended (seconds of search)
        self.drain = 0.0  # how long the last one waited for the running steps to end (seconds)
        self.took = 0.0  # and how long it took from then on: what grows with the state
        self.size = 0  # the open branches and link records it held

    def expected(self, size: int) -> float:
        """The seconds a snapshot of ``size`` items is expected to take: the last one's
        drain of the running steps (a step's length, whatever the state), and the rest of
        it in proportion to the items when there are more now. A small last one (under
        :data:`SCALED_ITEMS`) is not scaled up: its time is mostly fixed costs, and the
        next one measures the cost at the size of the day."""
        if self.size < SCALED_ITEMS:
            return self.drain + self.took
        return self.drain + self.took * max(1.0, size / self.size)

    def interval(self, elapsed: float, size: int) -> float:
        """The seconds between the last snapshot and the next (at ``elapsed`` seconds
        of search, ``size`` items held now)."""
        wanted = max(LEAST_SNAPSHOT_SECONDS, min(self.every, ROLLBACK_SHARE * elapsed))
        return max(wanted, SNAPSHOT_SPACING * self.expected(size))

    def due(self, elapsed: float, size: int) -> bool:
        """Whether a snapshot is due at ``elapsed`` with ``size`` items held (open
        branches and link records): see :meth:`interval`."""
        if self.every is None:
            return False
        return elapsed - self.last >= self.interval(elapsed, size)

    def take(self, slots: list[WorkerSlot], own: SearchState, g_min: float, iterations: int,
             trace: list[Improvement], totals: Totals, size: int, start: float, drained: float,
             elapsed: Callable[[], float], get: Callable[[list[Any]], list[Any]]) -> Snapshot:
        """Take a snapshot when no step runs (the caller drains them first, from ``start``
        to ``drained``, ``time.perf_counter`` readings): every worker's state, the batches
        in flight and the notices unheard (from the ``slots``), the coordinator's ``own``
        share and its counters; ``size`` as for :meth:`due`, ``elapsed`` the search's clock, ``get``
        the coordinator's ``ray.get`` (with its time-out). The parts are fetched here.
        The snapshot is kept as :attr:`latest`, and counted in ``totals``."""
        # each worker's share as bytes (pickled there), kept as they come
        states = get([slot.actor.snapshot.remote() for slot in slots])  # raises if a worker died meanwhile
        refs = [ref for slot in slots for ref in slot.inbox if isinstance(ref, ray.ObjectRef)]
        fetched = dict(zip(refs, get(refs))) if refs else {}
        inbox = [[fetched[ref] if isinstance(ref, ray.ObjectRef) else ref for ref in slot.inbox] for slot in slots]
        for slot, batches in zip(slots, inbox):  # the fetched copies go on to the workers, too
            slot.inbox = list(batches)
            slot.sources = set()
        # cloudpickle: a message of the user's own class may come from a module that only the
        # driver can import (the class came here by value, as the model did: ship_by_value)
        self.latest = Snapshot(
            workers=states, inbox=inbox, unheard=[list(slot.unheard) for slot in slots],
            own=ray.cloudpickle.dumps(own, protocol=5), g_min=g_min, iterations=iterations, elapsed=elapsed(),
            trace=list(trace), reports=[slot.report for slot in slots], totals=replace(totals))
        now = time.perf_counter()
        took = now - start
        totals.snapshots += 1
        totals.snapshot_seconds += took
        totals.snapshot_longest = max(totals.snapshot_longest, took)
        self.drain, self.took, self.size = drained - start, now - drained, size
        self.last = elapsed()
        return self.latest

    def kept(self, next_owner: int) -> Cut | None:
        """The latest snapshot as a checkpoint's parts (each worker's share put in this
        node's object store, so the driver fetches one at a time), with no worker's help:
        what is left to save when the workers are lost; ``next_owner``: the next owner
        number of a link shard. None without a snapshot."""
        snap = self.latest
        if snap is None:
            return None
        return Cut(workers=[ray.put(state) for state in snap.workers],
                   inbox=[batch for batches in snap.inbox for batch in batches], own=snap.own,
                   iterations=snap.iterations, elapsed=snap.elapsed, g_min=snap.g_min, trace=list(snap.trace),
                   next_owner=next_owner)
