"""A worker of the distributed search: an engine (:mod:`dcmap_dist.search.engine`) over its
own branches and its shard of the link table, driven in steps by the coordinator."""

from __future__ import annotations

import os
import pickle
import sys
import time
from typing import Any

import ray.cloudpickle

from ...search.engine import Engine
from ...search.histories import Histories
from ...search.linking import Entry
from ...search.state import SearchState
from ...search.worklog import WorkLog
from .protocol import SearchSpec, StepOrder, WorkerSnapshot
from .rules import take_step, worker_engine

__all__ = ["SWITCH_SECONDS", "Worker", "by_value"]

SWITCH_SECONDS = 5e-4  # the interpreter's switch interval in a worker (see Worker.__init__)


def by_value(value: Any) -> bytes:
    """``value`` pickled with Ray's cloudpickle: a message of the user's own class, from a
    module the workers cannot import, travels by value as the cost model did
    (:func:`~.cluster.ship_by_value`). Batches pickle a user model's messages with it."""
    return ray.cloudpickle.dumps(value, protocol=5)


class Worker:
    """One worker actor: an engine over its own branches, and its shard of the link
    table when the table is sharded."""

    def __init__(self) -> None:
        # a lookup waits for the step's thread to let go of the interpreter, which it does
        # every switch interval: 5 ms by default, a round of an improvement's path lookups
        sys.setswitchinterval(SWITCH_SECONDS)
        self.engine: Engine | None = None
        self.busy = 0.0
        self.cpu = 0.0

    def pid(self) -> int:
        return os.getpid()

    def load(self, spec: SearchSpec, index: int, sharded: bool, workers: int, owner: int) -> None:
        """Start a new search as worker ``index`` of ``workers``; ``sharded``: it owns shard
        ``index`` of the link table (its records numbered as owner ``owner``), else the
        coordinator holds the table and every completion goes there."""
        self.engine = worker_engine(spec, index, sharded, workers, owner)
        self.busy = 0.0
        self.cpu = time.process_time()

    def step(self, order: StepOrder, *batches: bytes) -> list[Any]:
        """Take the arrivals (``batches``) and the ``order``, run the loop for one step,
        return ``[its report, batch for worker 0, batch for worker 1, ...]``."""
        start = time.perf_counter()
        report, out = take_step(self.engine, order, batches, start, by_value)
        self.busy += time.perf_counter() - start
        report.busy, report.cpu = self.busy, time.process_time() - self.cpu
        return [report, *out]

    def node(self) -> str:
        """The id of the node this worker runs on (a recovery avoids the nodes of lost workers)."""
        return ray.get_runtime_context().get_node_id()

    def snapshot(self) -> bytes:
        """This worker's share of a consistent cut (taken when no step runs, so its outbox
        is empty) as bytes: its engine's share as one buffer (``Engine.take_share``: the
        native core writes it, without a Python object per branch), compressed, and its
        counters. The coordinator keeps the bytes as they come, on its own node."""
        engine = self.engine
        share = WorkerSnapshot.of(engine.take_share(by_value), iterations=engine.iterations, g_min=engine.g_min,
                                  random_state=engine.random_state(), busy=self.busy)
        return pickle.dumps(share, protocol=5)

    def restore(self, data: bytes) -> None:
        """Go on from a :meth:`snapshot`'s bytes (after :meth:`load`, which gave this worker a
        new owner number for the link records it makes from now on)."""
        share: WorkerSnapshot = pickle.loads(data)
        self.engine.restore(SearchState(), share.iterations, share.g_min, share.random_state)
        self.engine.load_share(share.share)
        self.busy = share.busy

    def open_bound(self) -> float:
        """The least bound over this worker's open branches (its outbox is empty between steps)."""
        return self.engine.least_bound()

    def take_part(self, part: SearchState) -> None:
        """Take this worker's part of a resumed search (after :meth:`load`)."""
        self.engine.load(part)

    def lookup(self, records: set[int]) -> dict[int, Histories]:
        """The histories of those of ``records`` this worker's shard holds; the coordinator
        calls it in a thread of its own, so it is answered while a step runs."""
        return self.engine.lookup(records)

    def take_log(self) -> WorkLog:
        """Its engine's log of its work (with ``SearchSpec.log``), emptied."""
        return self.engine.take_log()

    def final_entry(self) -> Entry | None:
        return self.engine.final_entry()

    def link_records(self) -> int:
        return self.engine.link_records
