"""One distributed search as its coordinator holds it (see :mod:`.coordinator`): the state
the coordinator's parts share, and what rebuilds it at a search's beginning or rolls it
back to a snapshot after a lost worker (:meth:`Search.build`)."""

from __future__ import annotations

import time
from typing import Any

from ...limits import Limits, StopReason, Stopwatch, memory_mb
from ...search.batches import least_bound
from ...search.engine import Engine, new_engine
from ...search.state import Improvement, Resumption, SearchState
from .crew import Crew
from .protocol import RayOptions, SearchSpec, StepReport, Totals
from .snapshots import Snapshots
from .steps import WorkerSlot

__all__ = ["Search"]


class Search:
    """One search of a coordinator: what it searches and how (``spec``, ``options``), its
    workers (``crew``), its limits on one clock (``watch``), ``G_min`` in its ``engine``
    (with the link table on the coordinator, the table and the branches to deal out too),
    a slot per worker, its counters and trace, its snapshots, and why it stopped."""

    def __init__(self, crew: Crew) -> None:
        self.crew = crew
        self.spec: SearchSpec | None = None
        self.options: RayOptions | None = None
        self.sharded = True  # the link table sharded over the workers, else on the coordinator
        self.watch = Stopwatch(Limits())  # the search's limits, on one clock
        self.cpu = 0.0  # process time when the search began
        self.before = 0.0  # seconds searched before a resumption
        self.owners = 1  # the next owner number of a link shard
        self.coordinator_memory = 0.0  # of the coordinator alone (MiB)
        self.stop: StopReason | None = None
        self.halted = 0.0  # when the search was last halted (perf_counter)
        self.snapshots = Snapshots(None)
        # the state rolled back on recovery (build)
        self.engine: Engine | None = None
        self.slots: list[WorkerSlot] = []
        self.iterations = 0
        self.trace: list[Improvement] = []
        self.totals = Totals()

    def reset(self, limits: Limits, resume: Resumption | None) -> None:
        """Begin a new search's clock, counters and snapshots (of ``options``), under
        ``limits``, resumed from ``resume`` (None: from the root)."""
        self.watch = Stopwatch(limits, every=1, memory=self.memory)  # memory: of every process together
        self.cpu = time.process_time()
        self.before = resume.elapsed if resume else 0.0
        self.owners = resume.next_owner if resume else 1
        self.coordinator_memory = 0.0
        self.stop = None
        self.snapshots = Snapshots(self.options.snapshot_every)

    def build(self, own: SearchState, g_min: float, iterations: int, trace: list[Improvement], totals: Totals,
              reports: list[StepReport], inbox: list[list[Any]], unheard: list[list[int]],
              seconds: float | None = None) -> None:
        """The coordinator's state of a search (at its beginning, or rolled back to a
        snapshot): its engine holding ``own`` share, a new search in every worker, a slot
        per worker with its last ``reports``, its ``inbox`` and the notices it has not
        heard, and the counters. The workers have ``seconds`` to answer (default: the
        silence that makes one lost)."""
        spec, crew = self.spec, self.crew
        self.engine = new_engine(spec.problem(), 0.0, 0, None if self.sharded else self.owners, notify=True)
        self.owners += 1
        self.engine.restore(own, g_min=g_min)
        crew.load(spec, self.sharded, self.owners, seconds)
        self.owners += crew.size
        self.slots = [WorkerSlot(actor, report, unheard=list(notices))
                      for actor, report, notices in zip(crew.actors, reports, unheard)]
        n = self.engine.problem.topo.n
        for slot, held in zip(self.slots, inbox):
            for batch in held:
                slot.receive(batch, least_bound(batch, n))
        self.iterations = iterations
        self.trace = list(trace)
        self.totals = totals

    def reserve(self, seconds: float) -> None:
        """Stop the search ``seconds`` before its time limit (the final checkpoint's write)."""
        self.watch.reserve = seconds

    def count(self, report: StepReport) -> None:
        """A step's expansions, improvements and ``G_min`` into the search's."""
        self.iterations += report.expanded
        self.trace.extend(report.improvements)
        self.engine.hear(report.g_min)

    def elapsed(self) -> float:
        """Seconds of search, those before a resumption included."""
        return self.before + self.watch.elapsed()

    def interrupted(self) -> float | None:
        """When a signal halted the search (perf_counter), or None if none did."""
        return self.halted if self.stop == StopReason.INTERRUPTED else None

    def memory(self) -> float:
        """The memory of the search's processes together, the coordinator's own (which
        holds the link table with ``link_table="coordinator"``) included: the memory
        limit applies to this sum (the stopwatch keeps its peak)."""
        own = memory_mb()
        self.coordinator_memory = max(self.coordinator_memory, own)
        return own + sum(slot.memory_mb for slot in self.slots)

    def state_size(self) -> int:
        """Open branches and link records held by the workers and the coordinator."""
        held = self.engine.open_count() + self.engine.link_records
        return held + sum(slot.report.open_branches + slot.report.link_records for slot in self.slots)
