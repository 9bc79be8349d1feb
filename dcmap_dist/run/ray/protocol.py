"""The records of the distributed search (see :mod:`dcmap_dist.run.ray.driver`): how it
runs (:class:`RayOptions`) and what it searches (:class:`SearchSpec`); between the
coordinator and a worker, the order that comes with each step, the report a step
returns and a worker's share of a snapshot; the coordinator's snapshots, its counters,
what a turn reports to the driver, the cut it gives for a checkpoint, and the results
of a finished search. The batches of completions that travel beside the steps are the
engines' (:mod:`dcmap_dist.search.batches`). Every record is built with keywords."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from itertools import zip_longest
from typing import Any

import pyarrow

from ...env import number
from ...cost.base import CostModel
from ...limits import Limits, StepEnd, StopReason
from ...model.network import Network
from ...progress import Progress
from ...search.branch import Branch
from ...search.linking import Entry
from ...search.problem import Problem
from ...search.state import Improvement

__all__ = ["Cut", "LOOKUPS", "RayOptions", "Results", "SILENT_STEPS", "SILENT_STEPS_VARIABLE",
           "STEP_ITERATIONS_VARIABLE", "SearchSpec", "Snapshot", "Statistics", "StepOrder", "StepReport", "Totals",
           "TurnReport", "WorkerLostWarning", "WorkerSnapshot", "WorkersLost"]

SHARE_CODEC = pyarrow.Codec("zstd", compression_level=1)  # a worker snapshot's share (WorkerSnapshot)

LOOKUPS = "lookups"  # a worker's thread for history lookups and pings, answered while its steps run
SILENT_STEPS = 200  # a worker that has not answered for this many base steps is lost
SILENT_STEPS_VARIABLE = "DCMAP_SILENT_STEPS"  # overrides SILENT_STEPS
STEP_ITERATIONS_VARIABLE = "DCMAP_STEP_ITERATIONS"  # steps of this many expansions instead of seconds


class WorkersLost(RuntimeError):
    """The coordinator cannot go on: every worker was lost and none could be started
    again, no snapshot was kept, or the recovery itself failed. The driver ends the
    search as it does when Ray is lost (stop reason ``ray_lost``, exit code 5), with the
    best mapping heard of and a checkpoint of the last snapshot."""


class WorkerLostWarning(UserWarning):
    """A worker was lost and the search went back to its last snapshot (how many
    iterations that undid, and how many workers go on)."""


def _silent_steps() -> float:
    return number(SILENT_STEPS_VARIABLE, SILENT_STEPS, 1e6, "step lengths")


def _step_iterations() -> int | None:
    steps = number(STEP_ITERATIONS_VARIABLE, 0, 1e12, "expansions")
    return max(1, round(steps)) if steps else None


@dataclass(frozen=True, kw_only=True)
class RayOptions:
    """How a distributed search runs: on ``workers`` Ray worker actors, attached to the
    Ray at ``address`` (None: a private one), its link table ``sharded`` over the workers
    or on the ``coordinator``, a snapshot for recovering a lost worker at least every
    ``snapshot_every`` seconds (None: none); a worker that has not answered for
    ``silent_steps`` step lengths is lost (default: :data:`SILENT_STEPS`, or the
    environment variable ``DCMAP_SILENT_STEPS`` of the driver). With ``step_iterations``,
    a worker's step ends after that many expansions rather than after a step length
    (default: none, or the driver's ``DCMAP_STEP_ITERATIONS``): the work of a run then
    depends on the order of the steps, not on the clock, as in the model of many
    workers (:mod:`dcmap_dist.run.model`)."""

    workers: int
    link_table: str = "sharded"
    snapshot_every: float | None = 30.0
    address: str | None = None
    silent_steps: float = field(default_factory=_silent_steps)
    step_iterations: int | None = field(default_factory=_step_iterations)
    log_work: bool = False  # the workers' engines log their work (Engine.keep_log; a measurement's)


@dataclass(frozen=True, kw_only=True)
class SearchSpec:
    """What a worker needs to rebuild the problem and its engine: plain, picklable data."""

    network: Network  # the connected component searched
    graph: Network  # the whole network (cost contexts see it)
    model: CostModel
    scheme: str
    link_key: str  # lean or full
    use_bound: bool
    alpha: float
    seed: int
    log: bool = False  # the engines log their work (Engine.keep_log)

    @classmethod
    def of(cls, problem: Problem, alpha: float, seed: int, log: bool = False) -> SearchSpec:
        """The spec of a search of ``problem`` (``log``: its engines log their work)."""
        return cls(network=problem.network, graph=problem.graph, model=problem.model, scheme=problem.scheme,
                   link_key=problem.keys.kind, use_bound=problem.use_bound, alpha=alpha, seed=seed, log=log)

    def problem(self) -> Problem:
        return Problem(self.network, self.model, self.scheme, graph=self.graph, link_key=self.link_key,
                       use_bound=self.use_bound)


@dataclass(slots=True, kw_only=True)
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
    expansions: int | None = None  # the step ends after this many expansions (None: after ``seconds``)


@dataclass(slots=True, kw_only=True)
class StepReport:
    """What a worker's step returns (before its outgoing batches); also the coordinator's
    picture of a worker before its first step (the defaults, with its open branches)."""

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
    sent_bounds: list[float] = field(default_factory=list)  # the least bound of the branches sent to each
    bytes: int = 0  # of the batches sent
    busy: float = 0.0  # seconds spent in steps, all steps
    cpu: float = 0.0  # CPU seconds of the worker's process since the search began
    memory_mb: float = 0.0  # peak during the step


@dataclass(slots=True, kw_only=True)
class WorkerSnapshot:
    """A worker's share of a consistent cut: its part of the search's state as its
    engine's buffer (``Engine.take_share``; ``search.engine.share_state`` reads it as the
    one state type of checkpoints and resume), kept compressed (:attr:`share` gives it
    back), and what a worker rolled back to it needs to go on as it did.

    The coordinator holds the latest snapshot of every worker for as long as the search
    runs: compressed (zstd, level 1: :data:`SHARE_CODEC`), a share takes about a tenth
    of its memory and of the bytes that cross to the coordinator, for 0.07 s a 58-MiB
    share to compress and 0.06 s to read back (hepar2 after 2 M expansions, a ratio of
    9.8; lz4's was 5.2 for the same time)."""

    packed: bytes  # the engine's share, compressed
    size: int  # its size uncompressed
    iterations: int  # the worker's own count
    g_min: float
    random_state: tuple  # its random generator's (the alpha activations)
    busy: float

    @classmethod
    def of(cls, share: bytes, **rest: Any) -> WorkerSnapshot:
        """The snapshot of an engine's ``share`` (compressed here) and the ``rest`` of its fields."""
        return cls(packed=SHARE_CODEC.compress(share, asbytes=True), size=len(share), **rest)

    @property
    def share(self) -> bytes:
        """The engine's share, as ``Engine.take_share`` gave it."""
        return SHARE_CODEC.decompress(self.packed, decompressed_size=self.size, asbytes=True)


@dataclass(slots=True, kw_only=True)
class Totals:
    """The coordinator's running counters of a search."""

    steps: int = 0
    received: int = 0  # completions taken in by the workers
    sent: int = 0  # completions sent
    bytes: int = 0  # of the batches sent
    coordinator_busy: float = 0.0  # seconds the coordinator spent starting and taking in steps
    snapshots: int = 0
    snapshot_seconds: float = 0.0
    snapshot_longest: float = 0.0  # the longest snapshot's seconds
    recoveries: int = 0  # recoveries from a lost worker
    rolled_back: int = 0  # iterations undone by them (done again since)


@dataclass(slots=True, kw_only=True)
class Snapshot:
    """A consistent cut of a distributed search, kept by the coordinator: every worker
    is rolled back to it when one is lost (:mod:`.snapshots`)."""

    workers: list[bytes]  # each worker's WorkerSnapshot, pickled, fetched here (a lost node does not take it along)
    inbox: list[list[bytes]]  # the batches in flight, for each worker (fetched here too)
    unheard: list[list[int]]  # the notices each worker has not heard
    own: bytes  # the coordinator's own share (a pickled SearchState: a copy, not its live table)
    g_min: float
    iterations: int
    elapsed: float  # seconds of search when it was taken
    trace: list[Improvement]
    reports: list[StepReport]  # each worker's last step
    totals: Totals


@dataclass(frozen=True, kw_only=True)
class TurnReport:
    """What the coordinator tells the driver after a turn: whether the search has
    stopped, its progress, and every improvement so far (the driver announces the new)."""

    done: bool
    progress: Progress
    trace: list[Improvement]
    recoveries: list[str] = field(default_factory=list)  # what each recovery since the last turn did


@dataclass(slots=True, kw_only=True)
class Cut:
    """What the driver writes a checkpoint of a distributed search from: a fresh
    snapshot's parts (fetched one at a time as they are written) and the counters."""

    workers: list[Any]  # Ray references to each worker's WorkerSnapshot, pickled (on the coordinator's node)
    inbox: list[Any]  # the batches in flight (bytes)
    own: bytes  # the coordinator's own share, pickled
    iterations: int
    elapsed: float  # seconds searched, those before a resumption included
    g_min: float
    trace: list[Improvement]
    next_owner: int  # the next owner number of a link shard


@dataclass(frozen=True, kw_only=True)
class Statistics:
    """How a distributed search ran: a result's ``components[k]["distributed"]``."""

    workers: int
    link_table: str
    steps: int
    elapsed: float  # seconds of search, those before a resumption included
    worker_iterations: list[int]  # each worker's expansions (its load)
    worker_busy: list[float]  # each worker's seconds in steps
    worker_cpu: list[float]  # each worker's CPU seconds
    coordinator_busy: float
    coordinator_cpu: float
    coordinator_memory_mb: float  # the coordinator's own peak
    sent: int
    received: int
    bytes: int
    snapshots: int
    snapshot_seconds: float
    snapshot_longest_seconds: float  # a lost worker undoes at most 20 of these, or 10% of the search
    recoveries: int
    rolled_back: int  # iterations the recoveries undid
    workers_lost: int  # workers lost and not replaced (the search went on with fewer)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def then(self, later: Statistics) -> Statistics:
        """These statistics and those of a ``later`` search of the same pool (the search
        by contours' next contour) together: counts and seconds added up (each worker's
        by its place), peaks the larger, the rest as ``later`` says."""
        def each(mine: list, theirs: list) -> list:
            return [a + b for a, b in zip_longest(mine, theirs, fillvalue=0)]

        return replace(
            later, steps=self.steps + later.steps,
            worker_iterations=each(self.worker_iterations, later.worker_iterations),
            worker_busy=each(self.worker_busy, later.worker_busy), worker_cpu=each(self.worker_cpu, later.worker_cpu),
            coordinator_busy=self.coordinator_busy + later.coordinator_busy,
            coordinator_cpu=self.coordinator_cpu + later.coordinator_cpu,
            coordinator_memory_mb=max(self.coordinator_memory_mb, later.coordinator_memory_mb),
            sent=self.sent + later.sent, received=self.received + later.received, bytes=self.bytes + later.bytes,
            snapshots=self.snapshots + later.snapshots, snapshot_seconds=self.snapshot_seconds + later.snapshot_seconds,
            snapshot_longest_seconds=max(self.snapshot_longest_seconds, later.snapshot_longest_seconds),
            recoveries=self.recoveries + later.recoveries, rolled_back=self.rolled_back + later.rolled_back)


@dataclass(frozen=True, kw_only=True)
class Results:
    """A stopped distributed search's results, as the coordinator hands them to the driver."""

    stop: StopReason
    iterations: int
    trace: list[Improvement]
    final: Entry | None  # the link table's entry of the complete mappings
    lower_bound: float  # no mapping costs less
    peak_memory_mb: float  # of every process together
    link_records: int
    statistics: Statistics
