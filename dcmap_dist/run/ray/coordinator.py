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
* the coordinator itself: a lost worker's recovery (of the parts in :mod:`.recovery`),
  the progress, the results and the histories looked up.

The coordinator runs on the driver's node (:func:`.cluster.pooled_coordinator`), and
keeps its snapshots there: a lost node takes workers, never the means to recover them.
A worker is lost when Ray says it died or when it has not answered for
``silent_steps`` steps of 0.1 s (a frozen node, a cut network: :func:`.steps.silence`). Recovery
(:meth:`Coordinator._recover`) starts replacements
only on nodes Ray reports alive with a CPU free, waits for them for
:data:`~.recovery.PLACE_SECONDS` at most, and goes on with
fewer workers when none can be placed (the snapshot's state shared out anew over the
workers left, as a resumption on another number of workers is); when no worker is
left, or the recovery itself fails, it raises :class:`~.protocol.WorkersLost`, which the
driver ends as a lost Ray."""

from __future__ import annotations

import pickle
import time
from dataclasses import replace
from typing import Any

import ray

from ...limits import Limits, StopReason
from ...progress import Progress
from ...search import batches
from ...search.histories import Histories, gather_histories
from ...search.state import Resumption, SearchState
from ...search.worklog import WorkLog
from .crew import Crew
from .exchange import Exchange
from .protocol import (LOOKUPS, Cut, RayOptions, Results, SearchSpec, Snapshot, Statistics, StepReport, Totals,
                       TurnReport, WorkersLost)
from .recovery import (INTERRUPTED_SECONDS, LOST, PING_SECONDS, PLACE_SECONDS, answering, free_spots, merged, said,
                       sort_out)
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
    snapshot (:meth:`_recover`), the state rebuilt by the same
    :meth:`.Search.build` as :meth:`begin`'s."""

    def __init__(self, workers: int, cpus_per_worker: float) -> None:
        self.crew = Crew(workers, cpus_per_worker)
        self.search = search = Search(self.crew)
        self.exchange = Exchange(search)
        self.turns = Turns(search, self.exchange)
        self.placing = PLACE_SECONDS  # the first load waits this long for the workers to start
        self.notes: list[str] = []  # what the recoveries since the last turn did (for the driver)
        self.freed: list[str] = []  # nodes of live workers a recovery started anew (a CPU each)
        self.root_bound = 0.0  # a lower bound for a worker whose own is not known yet
        self.histories: dict[int, Histories] = {}  # every history the final entry reaches, once finished

    # -- one search -------------------------------------------------------------
    def begin(self, spec: SearchSpec, options: RayOptions, limits: Limits, g_min: float,
              resume: Resumption | None = None) -> None:
        """Load a search into every worker and seed it with the root, or with the
        state it was checkpointed in (``resume``)."""
        search, crew = self.search, self.crew
        search.spec, search.options = spec, options
        search.sharded = options.link_table == "sharded"
        crew.silent = silence(options.silent_steps, crew.requested)
        self.notes = []
        if crew.size < crew.requested:  # lost in an earlier search of this pool: try again
            crew.actors += self._replace(crew.requested - crew.size, set())
            if not crew.actors:
                raise WorkersLost("no worker is left from the last search, and no live node has a CPU free "
                                  "for one")
        search.reset(limits, resume)
        self.turns.depth = QUEUED_STEPS if limits.max_iterations is None else 1
        self.histories = {}
        empty = [[] for _ in range(crew.size)]
        search.build(SearchState(), g_min, resume.iterations if resume else 0, list(resume.trace) if resume else [],
                     Totals(), [StepReport() for _ in range(crew.size)], empty, empty, self.placing)
        self.placing = PING_SECONDS  # the next searches' workers are running already
        root = search.engine.problem.root()
        self.root_bound = root.bound
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
                self._recover(lost)
        if search.stop is not None:
            try:
                turns.drain()
            except LOST as lost:  # a worker died in its last step: back to the snapshot
                self._recover(lost)
        notes, self.notes = self.notes, []
        return TurnReport(done=search.stop is not None, progress=self.progress(), trace=list(search.trace),
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

    def _recover(self, lost: Exception | None = None) -> None:
        """A worker was lost (``lost``: what said so): roll every worker back to the
        latest snapshot, on the workers that live and replacements placed on live
        nodes, or on fewer workers when no CPU is left for one. Anything that fails
        meanwhile (another worker lost, Ray itself) ends in :class:`WorkersLost`."""
        snap = self.search.snapshots.latest
        if snap is None:
            raise WorkersLost(f"a worker was lost ({said(lost)}) and no snapshot was taken (snapshots are off), "
                              "so the search cannot go on exactly")
        for attempt in range(3):  # a node lost takes its workers one after another
            try:
                self._recover_to(snap, lost)
                return
            except LOST as again:
                lost = again
            except WorkersLost:
                raise
            except Exception as exc:  # noqa: BLE001 - Ray's own failures: the lost-Ray path, not a bug report
                raise WorkersLost(f"the recovery from a lost worker failed: {said(exc)}") from exc
        raise WorkersLost(f"workers went on being lost during the recovery ({said(lost)})")

    def _recover_to(self, snap: Snapshot, lost: Exception | None) -> None:
        search, crew = self.search, self.search.crew
        started = time.perf_counter()
        before, rolled = crew.size, search.iterations - snap.iterations
        live, suspects = self._live_actors()
        answered, missing = len(live), crew.requested - len(live)
        if missing > 0 and search.stop != StopReason.INTERRUPTED:
            live += self._replace(missing, suspects)
        if not live:
            raise WorkersLost(f"every worker was lost ({said(lost)}) and no live node has a CPU free for another")
        crew.actors = live
        now = search.totals  # what the recoveries and snapshots cost is not undone
        totals = replace(snap.totals, recoveries=now.recoveries + 1, rolled_back=now.rolled_back + rolled,
                         coordinator_busy=now.coordinator_busy, snapshots=now.snapshots,
                         snapshot_seconds=now.snapshot_seconds, snapshot_longest=now.snapshot_longest)
        if len(live) == len(snap.workers):  # as many workers as the snapshot's: each takes its own share back
            search.build(pickle.loads(snap.own), snap.g_min, snap.iterations, snap.trace, totals, list(snap.reports),
                         snap.inbox, snap.unheard, PLACE_SECONDS)
            crew.save_get([slot.actor.restore.remote(state) for slot, state in zip(search.slots, snap.workers)])
        else:  # the snapshot's state shared out anew, as a resumption on this many workers is
            whole = merged(snap, search.engine.problem)
            empty = [[] for _ in range(crew.size)]
            search.build(SearchState(), snap.g_min, snap.iterations, snap.trace, totals,
                         [StepReport() for _ in range(crew.size)], empty, empty, PLACE_SECONDS)
            self.exchange.distribute(whole)
        if search.stop == StopReason.FINISHED:  # a snapshot is never of a finished search: it goes on
            search.stop = None
        self.notes.append(
            f"a worker was lost ({said(lost)}); the search went back to its snapshot at iteration "
            f"{snap.iterations:,} ({rolled:,} iterations to do again) and goes on with {crew.size} workers"
            f"{'' if crew.size == before else f' (was {before})'}: {answered} went on, {len(live) - answered} "
            f"started of {missing} missing; the recovery took {time.perf_counter() - started:.1f} s")

    def _live_actors(self) -> tuple[list[Any], set[str]]:
        """The workers that answer within :data:`~.recovery.PING_SECONDS` and were fed by none that
        did not (the others are killed), and the suspect nodes (:func:`~.recovery.sort_out`)."""
        search, crew = self.search, self.search.crew
        # a live worker answers at once: once interrupted, no need to wait long
        answered = answering(crew.actors, min(crew.silent, PING_SECONDS), INTERRUPTED_SECONDS, search.interrupted)
        fed = [set().union(*slot.fed) for slot in search.slots] if len(search.slots) == len(crew.actors) else None
        live, suspects, self.freed = sort_out(crew.actors, crew.nodes, answered, fed)
        return live, suspects

    def _replace(self, wanted: int, suspects: set[str]) -> list[Any]:
        """Up to ``wanted`` new workers, on nodes Ray reports alive with a CPU free, but
        not on the ``suspects`` (nodes of lost workers); those not started within
        :data:`~.recovery.PLACE_SECONDS` (or before the search is interrupted) are given up."""
        crew = self.search.crew
        spots = (self.freed + free_spots(crew.cpus, suspects))[:wanted]
        self.freed = []
        if not spots:
            return []
        started = [crew.spawn(node) for node in spots]
        answered = answering(started, PLACE_SECONDS, 0.0, self.search.interrupted)
        for i, actor in enumerate(started):
            if i not in answered:
                ray.kill(actor, no_restart=True)
        return [actor for i, actor in enumerate(started) if i in answered]

    def cut(self) -> Cut:
        """A fresh consistent cut for a checkpoint: the snapshot's parts and the counters."""
        try:
            self._take_snapshot()
        except LOST as lost:  # a worker died: recover, then cut again
            self._recover(lost)
            self._take_snapshot()
        return self.kept()

    def kept(self) -> Cut | None:
        """The latest snapshot as a checkpoint's parts, with no worker's help
        (:meth:`.Snapshots.kept`): what is left to save when the workers are lost. None
        without a snapshot."""
        return self.search.snapshots.kept(self.search.owners)

    # -- reports --------------------------------------------------------------------
    def least_bound(self) -> float:
        """The least bound of every open branch as last reported (progress figures); the
        root's bound for a worker that holds branches and has reported none yet."""
        search = self.search
        bounds = [s.report.least_bound if s.report.least_bound is not None else self.root_bound
                  for s in search.slots if s.report.least_bound is not None or s.report.open_branches]
        bounds += [b.bound for slot in search.slots for b in slot.hand]
        return min([*bounds, search.engine.least_bound(), search.engine.g_min])

    def exact_least_bound(self) -> float:
        """The least bound over every open branch in every worker and every batch in flight."""
        search = self.search
        self.turns.drain()
        bounds = search.crew.save_get([slot.actor.open_bound.remote() for slot in search.slots])
        bounds += [b.bound for slot in search.slots for b in slot.hand]
        for ref in (ref for slot in search.slots for ref in slot.inbox):
            batch = search.crew.get(ref) if isinstance(ref, ray.ObjectRef) else ref
            bounds.append(batches.least_bound(batch, search.engine.problem.topo.n))
        return min([*bounds, search.engine.least_bound(), search.engine.g_min])

    def progress(self) -> Progress:
        """Where the search stands (its lower bound as last reported by the workers)."""
        search = self.search
        elapsed = search.elapsed()
        return Progress(
            iterations=search.iterations, best_cost=search.engine.g_min, lower_bound=self.least_bound(),
            open_branches=sum(slot.holding() for slot in search.slots) + search.engine.open_count(),
            elapsed_seconds=elapsed, rate=search.iterations / elapsed if elapsed > 0 else 0.0,
            peak_memory_mb=search.watch.peak_memory_mb,
            link_records=sum(slot.report.link_records for slot in search.slots) + search.engine.link_records,
            workers=search.crew.size)

    def _results(self) -> Results:
        """The stopped search's results, the histories of its final entry gathered into
        :attr:`histories` (raises Ray's error if a worker is lost meanwhile)."""
        search, crew = self.search, self.search.crew
        self.turns.settle_arrivals()
        if search.sharded:
            finals = [e for e in crew.save_get([slot.actor.final_entry.remote() for slot in search.slots])
                      if e is not None]
            records = sum(crew.save_get([slot.actor.link_records.remote() for slot in search.slots]))
        else:
            found = search.engine.final_entry()
            finals = [found] if found is not None else []
            records = search.engine.link_records
        self.histories = gather_histories([(f.record,) for f in finals], self._lookup)
        totals = search.totals
        statistics = Statistics(
            workers=crew.size, link_table=search.options.link_table, steps=totals.steps, elapsed=search.elapsed(),
            worker_iterations=[slot.report.iterations for slot in search.slots],
            worker_busy=[slot.report.busy for slot in search.slots],
            worker_cpu=[slot.report.cpu for slot in search.slots],
            coordinator_busy=totals.coordinator_busy, coordinator_cpu=time.process_time() - search.cpu,
            coordinator_memory_mb=search.coordinator_memory, sent=totals.sent, received=totals.received,
            bytes=totals.bytes, snapshots=totals.snapshots, snapshot_seconds=totals.snapshot_seconds,
            snapshot_longest_seconds=totals.snapshot_longest,
            recoveries=totals.recoveries, rolled_back=totals.rolled_back,
            workers_lost=crew.requested - crew.size)
        return Results(
            stop=search.stop, iterations=search.iterations, trace=list(search.trace),
            final=finals[0] if finals else None,
            lower_bound=search.engine.g_min if search.stop == StopReason.FINISHED else self.exact_least_bound(),
            peak_memory_mb=search.watch.peak_memory_mb, link_records=records, statistics=statistics)

    def _lookup(self, records: set[int]) -> dict[int, Histories]:
        """The histories of ``records`` from the coordinator's table and every worker's
        shard (raises Ray's error if a worker is lost)."""
        search = self.search
        found = search.engine.lookup(records)
        # answered between the expansions of a running step, not after the steps queued there
        calls = [slot.actor.lookup.options(concurrency_group=LOOKUPS).remote(records) for slot in search.slots]
        for part in search.crew.save_get(calls):
            found.update(part)
        return found

    def finish(self) -> Results | None:
        """The search's results: the final link entry, with every history it reaches
        gathered here (so that :meth:`lookup` needs no worker afterwards). None when a
        worker was lost after the proof (here, or in a :meth:`lookup` since): every
        worker was rolled back to the last snapshot and the search goes on (call
        :meth:`advance` again). A worker lost after a limit stopped the search leaves
        the older state, stopped; its results."""
        while self.search.stop is not None:
            try:
                return self._results()
            except LOST:
                self._recover()
        return None

    def lookup(self, records: set[int]) -> dict[int, Histories]:
        """Histories of ``records``: those :meth:`finish` gathered, the rest from every shard.
        If a worker has died, the search is recovered first, and the records made since
        the snapshot are missing from the answer (lost with the worker)."""
        found = {r: self.histories[r] for r in records if r in self.histories}
        rest = set(records) - found.keys()
        if rest:
            try:
                found.update(self._lookup(rest))
            except LOST:
                self._recover()
                found.update(self._lookup(rest))
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
