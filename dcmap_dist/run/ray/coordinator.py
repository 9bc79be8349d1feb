"""The coordinator of the distributed search (see :mod:`dcmap_dist.run.ray.driver` for the
design): the actor the driver calls, made of parts of one idea each, which share one
:class:`~.search.Search` (its engine holding ``G_min``, a :class:`~.steps.WorkerSlot` per
worker, the counters, the trace, the limits, termination and the snapshots):

* :class:`~.crew.Crew`, the worker actors: started, and waited on with time-outs;
* :class:`~.turns.Turns`, the worker steps: started and taken in, in turns;
* :class:`~.exchange.Exchange`, what passes between the workers besides: completions
  to the owners of their keys, a resumed state shared out, and with
  ``link_table="coordinator"`` the link table (in the search's engine) settling the
  completions and dealing the branches out;
* :class:`~.snapshots.Snapshots`, the snapshots from which a lost worker is recovered
  (when one is due, taking it, the latest kept);
* :class:`~.recovery.Recovery`, a lost worker's recovery;
* :class:`~.reports.Reports`, the progress, the results and the histories looked up.

The coordinator runs on the driver's node (:func:`.cluster.pooled_coordinator`), and
keeps its snapshots there: a lost node takes workers, never the means to recover them.
A worker is lost when Ray says it died or when it has not answered for
``silent_steps`` steps of 0.1 s (a frozen node, a cut network: :func:`.steps.silence`). Recovery
(:class:`~.recovery.Recovery`) starts replacements
only on nodes Ray reports alive with a CPU free, waits for them for
:data:`~.recovery.PLACE_SECONDS` at most, and goes on with
fewer workers when none can be placed (the snapshot's state shared out anew over the
workers left, as a resumption on another number of workers is); when no worker is
left, or the recovery itself fails, it raises :class:`~.protocol.WorkersLost`, which the
driver ends as a lost Ray."""

from __future__ import annotations

import time

from ...limits import Limits, StopReason
from ...search.histories import Histories, gather_histories
from ...search.state import Resumption, SearchState
from ...search.worklog import WorkLog
from .crew import Crew
from .exchange import Exchange
from .protocol import Cut, RayOptions, Results, SearchSpec, Snapshot, StepReport, Totals, TurnReport, WorkersLost
from .recovery import LOST, PING_SECONDS, PLACE_SECONDS, Recovery
from .reports import Reports
from .search import Search
from .steps import QUEUED_STEPS, silence
from .turns import Turns

__all__ = ["CONTROL", "Coordinator"]

CONTROL = "control"  # the coordinator's thread for halt, answered while a turn or a recovery runs


class Coordinator:
    """The coordinator actor. :meth:`begin` loads a search; :meth:`advance` runs it in
    turns (each starts the steps of the free workers and takes in those that end);
    :meth:`cut` gives a checkpoint's parts, :meth:`finish` the results, :meth:`lookup`
    histories. A lost worker is replaced and every worker rolled back to the latest
    snapshot (:meth:`.Recovery.recover`), the state rebuilt by the same
    :meth:`.Search.build` as :meth:`begin`'s."""

    def __init__(self, workers: int, cpus_per_worker: float) -> None:
        self.crew = Crew(workers, cpus_per_worker)
        self.search = search = Search(self.crew)
        self.exchange = Exchange(search)
        self.turns = Turns(search, self.exchange)
        self.recovery = Recovery(search, self.exchange)
        self.reports = Reports(search, self.turns)
        self.placing = PLACE_SECONDS  # the first load waits this long for the workers to start

    # -- one search -------------------------------------------------------------
    def begin(self, spec: SearchSpec, options: RayOptions, limits: Limits, g_min: float,
              resume: Resumption | None = None) -> None:
        """Load a search into every worker and seed it with the root, or with the
        state it was checkpointed in (``resume``)."""
        search, crew = self.search, self.crew
        search.spec, search.options = spec, options
        search.sharded = options.link_table == "sharded"
        crew.silent = silence(options.silent_steps, crew.requested)
        self.recovery.notes = []
        # first: a failed replacement must not leave the last search's snapshots to be
        # kept as this one's, nor its interruption to cut the replacements' wait short
        search.reset(limits, resume)
        if crew.size < crew.requested:  # lost in an earlier search of this pool: try again
            crew.actors += self.recovery.replacements(crew.requested - crew.size, set())
            if not crew.actors:
                raise WorkersLost("no worker is left from the last search, and no live node has a CPU free "
                                  "for one")
        self.turns.depth = QUEUED_STEPS if limits.max_iterations is None else 1
        self.reports.histories = {}
        empty = [[] for _ in range(crew.size)]
        search.build(SearchState(), g_min, resume.iterations if resume else 0, list(resume.trace) if resume else [],
                     Totals(), [StepReport() for _ in range(crew.size)], empty, empty, self.placing)
        self.placing = PING_SECONDS  # the next searches' workers are running already
        root = search.engine.problem.root()
        self.reports.root_bound = root.bound
        if resume is None:
            self.exchange.deliver([(search.engine.problem.link_key(root), root)])
        else:
            self.exchange.distribute(resume.state)
        if options.snapshot_every is not None:
            self._take_snapshot()

    def halt(self, reason: StopReason) -> None:
        """Stop the search (e.g. ``interrupted``) before the next step (called in the
        ``control`` thread, also while a turn or a recovery runs)."""
        self.search.halted = time.perf_counter()
        self.search.stop = self.search.stop or reason

    def go_on(self) -> None:
        """Let a search halted at an iteration count (stopped ``max_iterations``) go on
        from where it stopped: a contour halted at its budget as it reached a mapping is
        the ordinary search (:mod:`.contours`). Nothing runs then, and what was in flight
        waits in the inboxes."""
        if self.search.stop == StopReason.MAX_ITERATIONS:
            self.search.stop = None

    def advance(self, seconds: float, reserve: float = 0.0) -> TurnReport:
        """Run the workers for about ``seconds``, stopping ``reserve`` seconds before the
        time limit (the final checkpoint's write); then where the search stands."""
        search, turns = self.search, self.turns
        search.reserve(reserve)
        until = time.perf_counter() + seconds
        while search.stop is None and time.perf_counter() < until:
            reason = search.watch.check(search.iterations)
            if reason:
                search.stop = reason
                break
            try:
                turns.turn(until)
                if search.stop is None and not turns.lagging() and search.snapshots.due(search.elapsed(),
                                                                                        search.state_size()):
                    self._take_snapshot()
            except LOST as lost:
                self.recovery.recover(lost)
        if search.stop is not None:
            try:
                turns.drain()
            except LOST as lost:  # a worker died in its last step: back to the snapshot
                self.recovery.recover(lost)
        notes, self.recovery.notes = self.recovery.notes, []
        return TurnReport(done=search.stop is not None, progress=self.reports.progress(), trace=list(search.trace),
                          recoveries=notes)

    # -- snapshots ------------------------------------------------------------------
    def _take_snapshot(self) -> Snapshot:
        """A consistent cut (after the running steps end): every worker's state, the
        batches in flight, the coordinator's own share (its open branches, those dealt
        out and not yet taken, and with the table here the link records)."""
        search = self.search
        start = time.perf_counter()
        self.turns.drain()
        drained = time.perf_counter()
        own = search.engine.export()
        own.branches += [branch for slot in search.slots for branch in slot.hand]
        return search.snapshots.take(search.slots, own, search.engine.g_min, search.iterations, search.trace,
                                     search.totals, search.state_size(), start, drained, search.elapsed,
                                     self.crew.save_get)

    def cut(self) -> Cut:
        """A fresh consistent cut for a checkpoint: the snapshot's parts and the counters."""
        try:
            self._take_snapshot()
        except LOST as lost:  # a worker died: recover, then cut again
            self.recovery.recover(lost)
            self._take_snapshot()
        return self.kept()

    def kept(self) -> Cut | None:
        """The latest snapshot as a checkpoint's parts, with no worker's help
        (:meth:`.Snapshots.kept`): what is left to save when the workers are lost. None
        without a snapshot."""
        return self.search.snapshots.kept(self.search.owners)

    # -- reports --------------------------------------------------------------------
    def finish(self) -> Results | None:
        """The search's results: the final link entry, with every history it reaches
        gathered here (so that :meth:`lookup` needs no worker afterwards). None when a
        worker was lost after the proof (here, or in a :meth:`lookup` since): every
        worker was rolled back to the last snapshot and the search goes on (call
        :meth:`advance` again). A worker lost after a limit stopped the search leaves
        the older state, stopped; its results."""
        while self.search.stop is not None:
            try:
                return self.reports.results()
            except LOST:
                self.recovery.recover()
        return None

    def lookup(self, records: set[int]) -> dict[int, Histories]:
        """Histories of ``records``: those :meth:`finish` gathered, the rest from every shard.
        If a worker has died, the search is recovered first, and the records made since
        the snapshot are missing from the answer (lost with the worker)."""
        gathered = self.reports.histories
        found = {r: gathered[r] for r in records if r in gathered}
        rest = set(records) - found.keys()
        if rest:
            try:
                found.update(self.reports.lookup(rest))
            except LOST:
                self.recovery.recover()
                found.update(self.reports.lookup(rest))
        return found

    def worker_logs(self) -> list[WorkLog]:
        """Each worker's log of its work, emptied (``RayOptions.log_work``; a measurement's)."""
        return self.crew.save_get([slot.actor.take_log.remote() for slot in self.search.slots])

    def paths(self, trails: list[tuple]) -> dict[int, Histories]:
        """The first history of every record on the paths that ``trails`` followed,
        fetched for all of them at once (see :func:`histories.gather_histories`).
        Improvements' mappings are rebuilt from this in one call while the search runs,
        instead of a call per record that leaves the workers without steps meanwhile."""
        return gather_histories(trails, self.lookup, first=True)
