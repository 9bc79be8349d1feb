"""The coordinator's snapshots (see :mod:`dcmap_dist.run.ray.driver` for the design): a
consistent cut of every worker's state and the batches in flight, taken now and then
and for each checkpoint, from which a lost worker is recovered by rolling every worker
back to it. :class:`Snapshots` decides when one is due, takes it from what the
coordinator hands it, and keeps the latest."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import ray
import ray.cloudpickle

from ...search.state import Improvement, SearchState
from .protocol import Snapshot, Totals
from .steps import WorkerSlot

__all__ = ["SNAPSHOT_ITEM_SECONDS", "SNAPSHOT_MEASURED_ITEMS", "SNAPSHOT_SPACING", "Snapshots"]

SNAPSHOT_SPACING = 100  # and at least this many times the next snapshot's expected duration (1% of the time)
SNAPSHOT_ITEM_SECONDS = 3e-5  # expected snapshot seconds per open branch or link record, until measured
SNAPSHOT_MEASURED_ITEMS = 10_000  # a snapshot this large measures the seconds per item


class Snapshots:
    """The snapshots of one distributed search: one at least every ``every`` seconds
    (None: only those a checkpoint asks for), and never more than 1% of the time."""

    def __init__(self, every: float | None) -> None:
        self.every = every
        self.latest: Snapshot | None = None
        self.last = 0.0  # when the last one ended (seconds of search)
        self.item_seconds = SNAPSHOT_ITEM_SECONDS  # its expected seconds per item, measured on large ones

    def due(self, elapsed: float, size: int) -> bool:
        """``every`` seconds have passed since the last snapshot (at ``elapsed``), and at
        least :data:`SNAPSHOT_SPACING` times what the next one is expected to take (its
        seconds per item times ``size``, the open branches and link records held now)."""
        if self.every is None:
            return False
        since = elapsed - self.last
        return since >= self.every and since >= SNAPSHOT_SPACING * self.item_seconds * size

    def take(self, slots: list[WorkerSlot], own: SearchState, g_min: float, iterations: int,
             trace: list[Improvement], totals: Totals, size: int, start: float,
             elapsed: Callable[[], float]) -> Snapshot:
        """Take a snapshot when no step runs (the caller drains them first, from ``start``,
        a ``time.perf_counter``): every worker's state, the batches in flight and the
        notices unheard (from the ``slots``), the coordinator's ``own`` share and its
        counters; ``size`` as for :meth:`due`, ``elapsed`` the search's clock. The
        snapshot is kept as :attr:`latest`, and counted in ``totals``."""
        calls = [slot.actor.snapshot.options(num_returns=2).remote() for slot in slots]
        ray.get([flag for flag, _ in calls])  # raises here if a worker died while saving
        # cloudpickle: a message of the user's own class may come from a module that only the
        # driver can import (the class came here by value, as the model did: ship_by_value)
        self.latest = Snapshot(
            workers=[state for _, state in calls], inbox=[list(slot.inbox) for slot in slots],
            unheard=[list(slot.unheard) for slot in slots], own=ray.cloudpickle.dumps(own, protocol=5),
            g_min=g_min, iterations=iterations, trace=list(trace), reports=[slot.report for slot in slots],
            totals=replace(totals))
        took = time.perf_counter() - start
        totals.snapshots += 1
        totals.snapshot_seconds += took
        if size >= SNAPSHOT_MEASURED_ITEMS:
            self.item_seconds = took / size
        self.last = elapsed()
        return self.latest
