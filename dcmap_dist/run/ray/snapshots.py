"""The coordinator's snapshots (see :mod:`dcmap_dist.run.ray.driver` for the design): a
consistent cut of every worker's state and the batches in flight, taken now and then
and for each checkpoint, from which a lost worker is recovered by rolling every worker
back to it. Mixed into :class:`coordinator.Coordinator`, whose
:meth:`~coordinator.Coordinator.begin` sets the attributes used here."""

from __future__ import annotations

import pickle
import time

import ray
import ray.cloudpickle

from ...limits import StopReason
from ...search.explorer import Explorer
from ...search.linking import LinkShard
from ...search.state import SearchState
from .protocol import Cut, Snapshot

SNAPSHOT_SPACING = 100  # and at least this many times the next snapshot's expected duration (1% of the time)
SNAPSHOT_ITEM_SECONDS = 3e-5  # expected snapshot seconds per open branch or link record, until measured
SNAPSHOT_MEASURED_ITEMS = 10_000  # a snapshot this large measures the seconds per item


class Snapshots:
    """The snapshots and recovery of a :class:`coordinator.Coordinator`."""

    def cut(self) -> Cut:
        """A fresh consistent cut for a checkpoint: the snapshot's parts (Ray references
        to each worker's state and to the batches in flight) and the counters."""
        try:
            self._take_snapshot()
        except ray.exceptions.RayActorError:  # a worker died: recover, then cut again
            self._recover()
            self._take_snapshot()
        snap = self.snapshot
        return Cut(list(snap.workers), [ref for refs in snap.inbox for ref in refs], snap.own, self.iterations,
                   self.elapsed(), self.explorer.g_min, list(self.trace), self.owners)

    def _snapshot_due(self) -> bool:
        """``snapshot_every`` seconds have passed since the last snapshot, and at least
        :data:`SNAPSHOT_SPACING` times what the next one is expected to take (its seconds
        per item, measured on the last large one, times the items held now)."""
        every = self.settings["snapshot_every"]
        if every is None:
            return False
        since = self.elapsed() - self.last_snapshot
        return since >= every and since >= SNAPSHOT_SPACING * self.item_seconds * self._state_size()

    def _state_size(self) -> int:
        """Open branches and link records held by the workers and the coordinator."""
        own = self.explorer
        held = own.open_count() + (len(own.shard.entries) if own.shard is not None else 0)
        return held + sum(s.open_branches + s.link_records for s in self.stats)

    def _take_snapshot(self) -> None:
        """A consistent cut (after the running steps end): every worker's state, the
        batches in flight, the coordinator's own."""
        start = time.perf_counter()
        self._drain()
        size = self._state_size()
        calls = [w.snapshot.options(num_returns=2).remote() for w in self.workers]
        ray.get([flag for flag, _ in calls])  # raises here if a worker died while saving
        states = [state for _, state in calls]
        # cloudpickle: a message of the user's own class may come from a module that only the
        # driver can import (the class came here by value, as the model did: ship_by_value)
        own = ray.cloudpickle.dumps(self._own_state(), protocol=5)
        self.snapshot = Snapshot(states, [list(x) for x in self.inbox], [list(x) for x in self.unheard], own,
                                 self.explorer.g_min, self.iterations, list(self.trace), list(self.stats),
                                 dict(self.totals))
        took = time.perf_counter() - start
        self.totals["snapshots"] += 1
        self.totals["snapshot_seconds"] += took
        if size >= SNAPSHOT_MEASURED_ITEMS:
            self.item_seconds = took / size
        self.last_snapshot = self.elapsed()

    def _own_state(self) -> SearchState:
        """The coordinator's own share: its open branches, those dealt out and not yet
        taken, and (the link table on the coordinator) the link records."""
        state = self.explorer.export()
        state.branches += [branch for hand in self.hands for branch in hand]
        return state

    def _recover(self) -> None:
        """A worker died: replace every dead worker and roll all of them back to the snapshot."""
        if self.snapshot is None:
            raise RuntimeError("a worker died and no snapshot was taken (snapshots are off), so the search "
                               "cannot go on exactly")
        alive = []
        for w in self.workers:
            try:
                ray.get(w.pid.remote(), timeout=30)
                alive.append(w)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                ray.kill(w, no_restart=True)
                alive.append(self._spawn())
        self.workers = alive
        snap = self.snapshot
        self._load_workers()
        ray.get([w.restore.remote(state) for w, state in zip(self.workers, snap.workers)])
        self.explorer = Explorer(self.problem, 0.0, 0, None if self.sharded else LinkShard(self.owners), notify=True)
        self.owners += 1
        self.explorer.load(pickle.loads(snap.own))
        self.explorer.g_min = snap.g_min
        self.inbox = [list(x) for x in snap.inbox]
        self.hands = [[] for _ in range(self.size)]  # the dealt branches are back in the table
        self.unheard = [list(x) for x in snap.unheard]
        self.running = [[] for _ in range(self.size)]
        self.reserved = [0] * self.size
        self.next_bound = [0.0] * self.size  # every worker's bound with its next step
        self.iterations = snap.iterations
        self.trace = list(snap.trace)
        self.stats = list(snap.stats)
        recoveries = self.totals["recoveries"] + 1
        self.totals = dict(snap.totals, recoveries=recoveries)
        if self.stop == StopReason.FINISHED:  # a snapshot is never of a finished search: it goes on
            self.stop = None
