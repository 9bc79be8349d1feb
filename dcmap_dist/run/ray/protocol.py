"""The messages of the distributed search (see :mod:`dcmap_dist.run.ray.driver`): between
the coordinator and a worker, the order that comes with each step, the report a step
returns and a worker's share of a snapshot; the coordinator's snapshots, and the cut it
gives the driver for a checkpoint. The batches of completions that travel beside the
steps are :func:`worker.packed`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...limits import Limits, StepEnd, StopReason
from ...search.linking import Improvement
from ...search.branch import Branch
from ...search.state import SearchState


@dataclass(slots=True)
class StepOrder:
    """What a worker is told with its next step."""

    g_min: float  # the global G_min
    notices: list[int]  # dominated records it has not heard of
    branches: list[Branch]  # branches dealt to it (the link table on the coordinator)
    iterations: int  # the search's iterations when the step was sent
    local_iterations: int  # the worker's own count in the coordinator's last report of it
    elapsed: float  # seconds of search so far
    seconds: float  # how long the step runs
    limits: Limits  # what is left of the search's time limit, and its memory limit
    max_iterations: int | None  # the worker's own count it may reach (an iteration limit shared out)
    destinations: int  # batches returned: one per worker (sharded), one for the coordinator
    bound: bool  # report the least bound over its open branches (a scan: now and then)


@dataclass(slots=True)
class StepReport:
    """What a worker's step returns (before its outgoing batches); also the coordinator's
    picture of a worker before its first step (:meth:`before_first_step`)."""

    stop: StopReason | StepEnd | None = None  # why the step ended
    iterations: int = 0  # the worker's own count
    expanded: int = 0  # in this step
    open_branches: int = 0
    link_records: int = 0  # in its shard of the link table
    least_bound: float | None = None  # over its open branches, when asked (None: not asked)
    g_min: float = float("inf")
    improvements: list[Improvement] = field(default_factory=list)
    notices: list[int] = field(default_factory=list)  # records it found dominated
    received: int = 0  # completions taken in
    sent: list[int] = field(default_factory=list)  # completions sent to each destination
    bytes: int = 0  # of the batches sent
    busy: float = 0.0  # seconds spent in steps, all steps
    cpu: float = 0.0  # CPU seconds of the worker's process since the search began
    memory_mb: float = 0.0  # peak during the step

    @classmethod
    def before_first_step(cls, open_branches: int = 0) -> StepReport:
        return cls(open_branches=open_branches)


@dataclass(slots=True)
class WorkerSnapshot:
    """A worker's share of a consistent cut: its part of the search's state (the one
    state type of checkpoints and resume: :meth:`Explorer.export`, :meth:`Explorer.load`)
    and what a worker rolled back to it needs to go on as it did."""

    state: SearchState
    iterations: int  # the worker's own count
    g_min: float
    rng: tuple  # its random generator's state (the alpha activations)
    busy: float


@dataclass(slots=True)
class Snapshot:
    """A consistent cut of a distributed search, kept by the coordinator: every worker
    is rolled back to it when one is lost (:mod:`.snapshots`)."""

    workers: list[Any]  # Ray references to each worker's WorkerSnapshot
    inbox: list[list[Any]]  # the batches in flight, for each worker
    unheard: list[list[int]]  # the notices each worker has not heard
    own: bytes  # the coordinator's own share (a pickled SearchState: a copy, not its live table)
    g_min: float
    iterations: int
    trace: list[Improvement]
    stats: list[StepReport]  # each worker's last step
    totals: dict[str, Any]  # the coordinator's counters


@dataclass(slots=True)
class Cut:
    """What the driver writes a checkpoint of a distributed search from: a fresh
    snapshot's parts (fetched one at a time as they are written) and the counters."""

    workers: list[Any]  # Ray references to each worker's WorkerSnapshot
    inbox: list[Any]  # the batches in flight (Ray references or bytes)
    own: bytes  # the coordinator's own share, pickled
    iterations: int
    elapsed: float  # seconds searched, those before a resumption included
    g_min: float
    trace: list[Improvement]
    next_owner: int  # the next owner number of a link shard
