"""A worker of the distributed search: an :class:`explorer.Explorer` over its own
branches (and its shard of the link table), driven in steps by the coordinator; and the
batches of completions the workers send each other (:func:`packed`)."""

from __future__ import annotations

import gc
import marshal
import os
import pickle
import sys
import time
from dataclasses import dataclass
from typing import Any

import ray.cloudpickle

from ...cost.base import CostModel
from ...cost.dcmap import DcmapCost
from ...limits import Stopwatch
from ...model.network import Network
from ...search.explorer import Explorer
from ...search.linking import Entry, LinkShard
from ...search.branch import Branch
from ...search.problem import Problem
from ...search.state import SearchState
from .protocol import StepOrder, StepReport, WorkerSnapshot

SWITCH_SECONDS = 5e-4  # the interpreter's switch interval in a worker (see Worker.__init__)


@dataclass(frozen=True)
class SearchSpec:
    """What a worker needs to rebuild the problem: plain, picklable data."""

    network: Network  # the connected component searched
    graph: Network  # the whole network (cost contexts see it)
    model: CostModel
    scheme: str
    key_kind: str  # the link key: lean or full
    use_bound: bool

    def problem(self) -> Problem:
        return Problem(self.network, self.model, self.scheme, graph=self.graph, key=self.key_kind,
                       lower_bound=self.use_bound)


def marshallable(model: CostModel) -> bool:
    """Whether a search's keys and branches hold only values of marshal's exact types:
    true for the built-in model with a plain number as ``addition`` (its messages are
    held as int codes, :mod:`~dcmap_dist.search.messages`; its costs are Python floats).
    A user model's messages and costs may be of any type, and marshal would write some of
    them silently as bytes (numpy's numbers, for one), so their batches are pickled."""
    return type(model) is DcmapCost and type(model.addition) in (int, float)


def packed(arrivals: list[tuple[tuple, Branch]], marshal_them: bool) -> bytes:
    """A batch of completions ``(key, branch)`` as bytes: each branch as the plain tuple of
    its fields, written with :mod:`marshal` when ``marshal_them`` (see
    :func:`marshallable`; a third of the time pickle took, which reduced every ``Branch``
    in Python), else pickled with Ray's cloudpickle: a message of the user's own class,
    from a module the workers cannot import, travels by value as the cost model did
    (:func:`~dcmap_dist.run.ray.driver.ship_by_value`). The first byte says which."""
    rows = [(key, branch.fields()) for key, branch in arrivals]
    if marshal_them:
        return b"M" + marshal.dumps(rows)
    return b"P" + ray.cloudpickle.dumps(rows, protocol=5)


def unpacked(batch: bytes) -> list[tuple[tuple, Branch]]:
    """The completions of a :func:`packed` batch, read with the cycle collector paused: a
    batch is thousands of small tuples, which would trigger collections that only move
    them along and slow the reading down; the data holds no cycles."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        body = memoryview(batch)[1:]
        rows = marshal.loads(body) if batch[:1] == b"M" else pickle.loads(body)
        return [(key, Branch(*fields)) for key, fields in rows]
    finally:
        if collecting:
            gc.enable()


class Worker:
    """One worker actor: an :class:`Explorer` over its own branches, and its shard of
    the link table when the table is sharded."""

    def __init__(self) -> None:
        # a lookup waits for the step's thread to let go of the interpreter, which it does
        # every switch interval: 5 ms by default, a round of an improvement's path lookups
        sys.setswitchinterval(SWITCH_SECONDS)
        self.explorer: Explorer | None = None
        self.busy = 0.0
        self.marshal = False  # batches written with marshal (see marshallable)

    def pid(self) -> int:
        return os.getpid()

    def load(self, spec: SearchSpec, alpha: float, seed: int, index: int, sharded: bool, workers: int,
             owner: int) -> None:
        """Start a new search as worker ``index`` of ``workers``; ``sharded``: it owns shard
        ``index`` of the link table (its records numbered as owner ``owner``), else the
        coordinator holds the table and every completion goes there."""
        shard = LinkShard(owner) if sharded else None
        self.explorer = Explorer(spec.problem(), alpha, seed + index, shard, index, workers if sharded else 1)
        self.marshal = marshallable(spec.model)
        self.busy = 0.0
        self.cpu = time.process_time()

    def step(self, order: StepOrder, *batches: bytes) -> list[Any]:
        """Take the arrivals (``batches``) and the ``order``, run the loop for one step,
        return ``[its report, batch for worker 0, batch for worker 1, ...]``."""
        start = time.perf_counter()
        explorer = self.explorer
        explorer.g_min = min(explorer.g_min, order.g_min)
        explorer.dominated.update(order.notices)
        # stamps: the search's count when the step was sent, plus what this worker did since
        # the coordinator last heard from it (a step may have run in between)
        explorer.iteration_offset = order.iterations - order.local_iterations
        explorer.time_offset = order.elapsed
        watch = Stopwatch(order.limits)
        explorer.watch = watch
        received = 0
        before = explorer.iterations
        # arrivals are tens of thousands of small objects: the collector would scan them
        # over and over while they are taken in
        with explorer.collector_paused():
            explorer.adopt(order.branches)
            for batch in batches:
                arrivals = unpacked(batch)
                received += len(arrivals)
                explorer.receive(arrivals)
            stop = explorer.step(watch, until=start + order.seconds, max_iterations=order.max_iterations)
            lower = explorer.least_bound() if order.bound else None  # O(open branches): when asked
            outbox = explorer.take_outbox()
            out = [packed(outbox[j], self.marshal) if outbox.get(j) else b"" for j in range(order.destinations)]
        improvements, explorer.improvements = explorer.improvements, []
        notices, explorer.notices = explorer.notices, []
        self.busy += time.perf_counter() - start
        report = StepReport(
            stop, explorer.iterations, explorer.iterations - before, explorer.open_count(), self.link_records(),
            lower, explorer.g_min, improvements, notices, received,
            [len(outbox.get(j, ())) for j in range(order.destinations)], sum(len(b) for b in out), self.busy,
            time.process_time() - self.cpu, watch.peak_memory_mb)
        return [report, *out]

    def snapshot(self) -> tuple[bool, WorkerSnapshot]:
        """This worker's share of a consistent cut (taken when no step runs, so its
        outbox is empty), behind a flag (called with two returns, so the caller can wait
        on the flag alone)."""
        explorer = self.explorer
        return True, WorkerSnapshot(explorer.export(), explorer.iterations, explorer.g_min, explorer.rng.getstate(),
                                    self.busy)

    def restore(self, snapshot: WorkerSnapshot) -> None:
        """Go on from a :meth:`snapshot` (after :meth:`load`, which gave this worker a new
        owner number for the link records it makes from now on)."""
        explorer = self.explorer
        explorer.load(snapshot.state)
        explorer.iterations = snapshot.iterations
        explorer.g_min = snapshot.g_min
        explorer.rng.setstate(snapshot.rng)
        self.busy = snapshot.busy

    def open_bound(self) -> float:
        """The least bound over this worker's open branches (its outbox is empty between steps)."""
        return self.explorer.least_bound()

    def take_part(self, part: SearchState) -> None:
        """Take this worker's part of a resumed search (after :meth:`load`)."""
        self.explorer.load(part)

    def lookup(self, records: set[int]) -> dict[int, bytes]:
        """The histories of those of ``records`` this worker's shard holds; the coordinator
        calls it in a thread of its own, so it is answered while a step runs."""
        return self.explorer.shard.lookup(records) if self.explorer.shard is not None else {}

    def final_entry(self) -> Entry | None:
        shard = self.explorer.shard
        return shard.entries.get(self.explorer.final_key) if shard is not None else None

    def link_records(self) -> int:
        return len(self.explorer.shard.entries) if self.explorer.shard is not None else 0
