"""The coordinator of the distributed search (see :mod:`dcmap_dist.run.ray.driver` for the
design): it owns the workers (its :class:`~.crew.Crew`, a :class:`~.steps.WorkerSlot` each), ``G_min``, the
counters, the trace, termination, the snapshots from which a lost worker is recovered
(:class:`~.snapshots.Snapshots`) and, with ``link_table="coordinator"``, the link table
(in its own engine, which also keeps ``G_min``).

The coordinator runs on the driver's node (:func:`.cluster.pooled_coordinator`), and
keeps its snapshots there: a lost node takes workers, never the means to recover them.
A worker is lost when Ray says it died or when it has not answered for
``silent_steps`` steps of 0.1 s (a frozen node, a cut network: :func:`.steps.silence`). Recovery
(:meth:`Coordinator._recover`, of the parts in :mod:`.recovery`) starts replacements
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

from ...limits import Limits, StepEnd, StopReason, Stopwatch, memory_mb
from ...progress import Progress
from ...search import batches
from ...search.branch import Branch
from ...search.engine import Engine, new_engine
from ...search.histories import Histories, gather_histories
from ...search.linking import route
from ...search.state import Improvement, Resumption, SearchState
from ...search.worklog import WorkLog
from .crew import Crew
from .protocol import (LOOKUPS, Cut, RayOptions, Results, SearchSpec, Snapshot, Statistics, StepReport, Totals,
                       TurnReport, WorkersLost)
from .recovery import (INTERRUPTED_SECONDS, LOST, PING_SECONDS, PLACE_SECONDS, WorkerSilent, answering, free_spots,
                       merged, said, sort_out)
from .rules import deliver, next_order, notify, take_in
from .snapshots import Snapshots
from .steps import (BOUND_SECONDS, QUEUED_STEPS, WorkerSlot, deal, iteration_caps, silence,
                    step_seconds)
from .worker import by_value

__all__ = ["CONTROL", "Coordinator"]

CONTROL = "control"  # the coordinator's thread for halt, answered while a turn or a recovery runs
LAG_STEPS = 10  # a step running this many step lengths after its worker's last answer is late


class Coordinator:
    """The coordinator actor. :meth:`begin` loads a search; :meth:`advance` runs it in
    turns (each starts the steps of the free workers and takes in those that end);
    :meth:`cut` gives a checkpoint's parts, :meth:`finish` the results, :meth:`lookup`
    histories. A lost worker is replaced and every worker rolled back to the latest
    snapshot (:meth:`_recover`), the state rebuilt by the same :meth:`_build` as
    :meth:`begin`'s."""

    def __init__(self, workers: int, cpus_per_worker: float) -> None:
        self.crew = Crew(workers, cpus_per_worker)
        self.step = step_seconds(workers)
        self.placing = PLACE_SECONDS  # the first load waits this long for the workers to start
        self.until = 0.0  # when the current turn ends (perf_counter)
        self.notes: list[str] = []  # what the recoveries since the last turn did (for the driver)
        self.freed: list[str] = []  # nodes of live workers a recovery started anew (a CPU each)
        self.halted = 0.0  # when the search was last halted (perf_counter)
        # one search's (begin)
        self.spec: SearchSpec | None = None
        self.options: RayOptions | None = None
        self.sharded = True  # the link table sharded over the workers, else here
        self.watch = Stopwatch(Limits())  # the search's limits, on one clock
        self.depth = QUEUED_STEPS  # steps queued per worker (1 under an iteration limit: caps need each end)
        self.cpu = 0.0  # process time when the search began
        self.before = 0.0  # seconds searched before a resumption
        self.owners = 1  # the next owner number of a link shard
        self.root_bound = 0.0  # a lower bound for a worker whose own is not known yet
        self.coordinator_memory = 0.0  # of the coordinator alone (MiB)
        self.stop: StopReason | None = None
        self.histories: dict[int, Histories] = {}  # every history the final entry reaches, once finished
        self.snapshots = Snapshots(None)
        # the state rolled back on recovery (_build)
        self.engine: Engine | None = None  # G_min; with the table here, the table and the branches to deal
        self.slots: list[WorkerSlot] = []
        self.iterations = 0
        self.trace: list[Improvement] = []
        self.totals = Totals()

    # -- one search -------------------------------------------------------------
    def begin(self, spec: SearchSpec, options: RayOptions, limits: Limits, g_min: float,
              resume: Resumption | None = None) -> None:
        """Load a search into every worker and seed it with the root, or with the
        state it was checkpointed in (``resume``)."""
        crew = self.crew
        self.spec, self.options = spec, options
        self.sharded = options.link_table == "sharded"
        crew.silent = silence(options.silent_steps, crew.requested)
        self.notes = []
        if crew.size < crew.requested:  # lost in an earlier search of this pool: try again
            crew.actors += self._replace(crew.requested - crew.size, set())
            if not crew.actors:
                raise WorkersLost("no worker is left from the last search, and no live node has a CPU free "
                                  "for one")
        self.watch = Stopwatch(limits, every=1, memory=self._memory)  # memory: of every process together
        self.depth = QUEUED_STEPS if limits.max_iterations is None else 1
        self.cpu = time.process_time()
        self.before = resume.elapsed if resume else 0.0
        self.owners = resume.next_owner if resume else 1
        self.coordinator_memory = 0.0
        self.stop = None
        self.histories = {}
        self.snapshots = Snapshots(options.snapshot_every)
        empty = [[] for _ in range(crew.size)]
        self._build(SearchState(), g_min, resume.iterations if resume else 0, list(resume.trace) if resume else [],
                    Totals(), [StepReport() for _ in range(crew.size)], empty, empty, self.placing)
        self.placing = PING_SECONDS  # the next searches' workers are running already
        root = self.engine.problem.root()
        self.root_bound = root.bound
        if resume is None:
            self._deliver([(self.engine.problem.link_key(root), root)])
        else:
            self._distribute(resume.state)
        if options.snapshot_every is not None:
            self._take_snapshot()

    def _build(self, own: SearchState, g_min: float, iterations: int, trace: list[Improvement], totals: Totals,
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
        self.slots = [WorkerSlot(actor, report, inbox=list(batches), unheard=list(notices))
                      for actor, report, batches, notices in zip(crew.actors, reports, inbox, unheard)]
        self.iterations = iterations
        self.trace = list(trace)
        self.totals = totals

    def _deliver(self, arrivals: list[tuple[tuple, Branch]]) -> None:
        """Send completions to the owners of their keys (settled in their next step)."""
        if not self.sharded:
            self.engine.receive(arrivals)
            return
        deliver(self.slots, arrivals, self.engine.problem, by_value)

    def _distribute(self, state: SearchState) -> None:
        """Share a resumed state among the workers: each key to its owner, each branch to
        the owner of its last link's key (where its dominance is decided), arrivals to
        be settled in their first step. With the table on the coordinator, it keeps the
        table and deals the branches out."""
        if not self.sharded:
            self.engine.load(state)  # the records first, then the arrivals settled against them
            return
        self._deliver(state.arrivals)
        size = self.crew.size
        parts = [SearchState(dominated=state.dominated) for _ in range(size)]
        holder = {}
        for key, entry in state.entries.items():
            holder[entry.record] = owner = route(key, size)
            parts[owner].entries[key] = entry
        for record, histories in state.histories.items():
            parts[holder.get(record, record % size)].histories[record] = histories
        for k, branch in enumerate(state.branches):
            parts[holder.get(branch.link, k % size)].branches.append(branch)
        self.crew.save_get([slot.actor.take_part.remote(part) for slot, part in zip(self.slots, parts)])
        for slot, part in zip(self.slots, parts):  # so that each worker holding branches gets a step
            slot.report = StepReport(open_branches=len(part.branches))

    def elapsed(self) -> float:
        """Seconds of search, those before a resumption included."""
        return self.before + self.watch.elapsed()

    def _interrupted(self) -> float | None:
        """When a signal halted the search (perf_counter), or None if none did."""
        return self.halted if self.stop == StopReason.INTERRUPTED else None

    def halt(self, reason: StopReason) -> None:
        """Stop the search (e.g. ``interrupted``) before the next step (called in the
        ``control`` thread, also while a turn or a recovery runs)."""
        self.halted = time.perf_counter()
        self.stop = self.stop or reason

    def advance(self, seconds: float, reserve: float = 0.0) -> TurnReport:
        """Run the workers for about ``seconds``, stopping ``reserve`` seconds before the
        time limit (the final checkpoint's write); then where the search stands."""
        self.watch.reserve = reserve
        self.until = until = time.perf_counter() + seconds
        while self.stop is None and time.perf_counter() < until:
            reason = self.watch.check(self.iterations)
            if reason:
                self.stop = reason
                break
            try:
                self._turn()
                if self.stop is None and not self._lagging() and self.snapshots.due(self.elapsed(),
                                                                                     self._state_size()):
                    self._take_snapshot()
            except LOST as lost:
                self._recover(lost)
        if self.stop is not None:
            try:
                self._drain()
            except LOST as lost:  # a worker died in its last step: back to the snapshot
                self._recover(lost)
        notes, self.notes = self.notes, []
        return TurnReport(done=self.stop is not None, progress=self.progress(), trace=list(self.trace),
                          recoveries=notes)

    def _memory(self) -> float:
        """The memory of the search's processes together, the coordinator's own (which
        holds the link table with ``link_table="coordinator"``) included: the memory
        limit applies to this sum (the stopwatch keeps its peak)."""
        own = memory_mb()
        self.coordinator_memory = max(self.coordinator_memory, own)
        return own + sum(slot.memory_mb for slot in self.slots)

    # -- the worker steps ---------------------------------------------------------------
    def _turn(self) -> None:
        """Start a step on every free worker that has work, then absorb the steps that
        have ended (at least one). Steps overlap: a worker starts its next step as soon
        as its last one is absorbed, with what was addressed to it meanwhile, and never
        waits for the others."""
        busy = time.perf_counter()
        self._start_ready()
        running = {slot.running[0][0]: i for i, slot in enumerate(self.slots) if slot.running}
        self.totals.coordinator_busy += time.perf_counter() - busy
        if running:
            # waits no longer than the turn, nor past the moment a worker would count as lost
            lost_at = min(self.slots[i].heard for i in running.values()) + self.crew.silent
            ready, rest = ray.wait(list(running), num_returns=1,
                                   timeout=max(0.0, min(self.until, lost_at) - time.perf_counter()))
            if not ready:
                self._check_silence()
                return
            if rest:
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            busy = time.perf_counter()
            for ref in ready:
                self._absorb(running[ref])
            self.totals.coordinator_busy += time.perf_counter() - busy
        if self.stop is None and self._finished():
            self.stop = StopReason.FINISHED

    def _start_ready(self) -> None:
        """Fill each worker's queue of steps (up to ``depth``) while it holds open
        branches or has arrivals or branches waiting for it, each step with its share
        of the iterations left (if limited)."""
        if not self.sharded and self.engine.open_count():
            deal(self.engine.take_open(), self.slots)
        ready = [i for i, slot in enumerate(self.slots) if len(slot.running) < self.depth and slot.has_work()]
        limit = self.watch.limits.max_iterations
        left = None if limit is None else max(0, limit - self.iterations - sum(s.reserved for s in self.slots))
        caps = iteration_caps(left, ready, self.crew.size)
        for i in ready:
            slot = self.slots[i]
            if caps[i] != 0:
                while len(slot.running) < self.depth and slot.has_work():
                    self._start(slot, caps[i])

    def _start(self, slot: WorkerSlot, allowance: int | None) -> None:
        """Start a worker's next step, with what waits for it, ``G_min``, the notices it
        has not heard, and at most ``allowance`` expansions (None: no limit)."""
        destinations = self.crew.size if self.sharded else 1
        now = time.perf_counter()
        if not slot.running:  # it has been idle: its silence counts from now
            slot.heard = now
        bound = now >= slot.next_bound  # its least bound for progress, now and then
        if bound:
            slot.next_bound = now + BOUND_SECONDS
        order, inbox = next_order(slot, g_min=self.engine.g_min, iterations=self.iterations, elapsed=self.elapsed(),
                                  seconds=self.step, limits=self.watch.remaining(), allowance=allowance,
                                  expansions=self.options.step_iterations, destinations=destinations, bound=bound)
        slot.running.append(slot.actor.step.options(num_returns=1 + destinations).remote(order, *inbox))
        slot.fed.append(slot.sources)
        slot.sources = set()

    def _settle_arrivals(self) -> None:
        """Have every worker settle the batches waiting for it, expanding nothing: a
        stopped search's best mapping may be a completion still on its way to the
        final key's owner."""
        self._drain()
        for slot in self.slots:
            if slot.inbox:
                self._start(slot, 0)
        self._drain()

    def _absorb(self, i: int) -> None:
        """Take in worker ``i``'s ended step: its counters, improvements and notices, and
        its outgoing batches (into the inboxes of their owners, or settled here when
        the coordinator holds the table)."""
        slot = self.slots[i]
        refs = slot.running[0]
        report = self.crew.get(refs[0], max(1.0, slot.heard + self.crew.silent - time.perf_counter()),
                               interrupted=self._interrupted)
        slot.heard = time.perf_counter()
        slot.running.pop(0)
        slot.fed.pop(0)
        slot.reserved = 0
        arrivals = take_in(self.slots, i, report, refs[1:], self.sharded, self.totals)
        self.iterations += report.expanded
        self.trace.extend(report.improvements)
        self.engine.hear(report.g_min)
        notify(self.slots, report.notices)
        self.watch.sample_memory()
        if report.stop not in (StepEnd.IDLE, StepEnd.BUDGET, StopReason.MAX_ITERATIONS):
            self.stop = report.stop
        if arrivals:
            self.engine.place(self.iterations, self.elapsed())
            for batch in self.crew.get(arrivals):
                self.engine.receive_batch(batch)
            self.trace.extend(self.engine.take_improvements())
            notify(self.slots, self.engine.take_notices())

    def _drain(self) -> None:
        """Absorb every running step without starting new ones: afterwards nothing runs
        and every batch in flight is in an inbox (a consistent cut)."""
        for i, slot in enumerate(self.slots):
            while slot.running:
                self._absorb(i)

    def _finished(self) -> bool:
        return (self.engine.open_count() == 0
                and not any(slot.running or slot.inbox or slot.hand or slot.report.open_branches
                            for slot in self.slots))

    # -- snapshots and recovery ----------------------------------------------------------
    def _state_size(self) -> int:
        """Open branches and link records held by the workers and the coordinator."""
        held = self.engine.open_count() + self.engine.link_records
        return held + sum(slot.report.open_branches + slot.report.link_records for slot in self.slots)

    def _take_snapshot(self) -> Snapshot:
        """A consistent cut (after the running steps end): every worker's state, the
        batches in flight, the coordinator's own share (its open branches, those dealt
        out and not yet taken, and with the table here the link records)."""
        start = time.perf_counter()
        self._drain()
        drained = time.perf_counter()
        own = self.engine.export()
        own.branches += [branch for slot in self.slots for branch in slot.hand]
        return self.snapshots.take(self.slots, own, self.engine.g_min, self.iterations, self.trace, self.totals,
                                   self._state_size(), start, drained, self.elapsed, self.crew.save_get)

    def _lagging(self) -> bool:
        """Whether a running step is late (:data:`LAG_STEPS` step lengths, 2 s at least): a
        snapshot then waits, since its drain would wait for that step (a frozen node's
        for the whole silence, with no progress meanwhile)."""
        late = time.perf_counter() - max(2.0, LAG_STEPS * self.step)
        return any(slot.running and slot.heard < late for slot in self.slots)

    def _check_silence(self) -> None:
        """A :class:`WorkerSilent` if a worker with a step running has not answered for
        the silence that makes it lost."""
        now = time.perf_counter()
        for slot in self.slots:
            if slot.running and now - slot.heard >= self.crew.silent:
                raise WorkerSilent(f"a worker has not answered for {now - slot.heard:.0f} s")

    def _recover(self, lost: Exception | None = None) -> None:
        """A worker was lost (``lost``: what said so): roll every worker back to the
        latest snapshot, on the workers that live and replacements placed on live
        nodes, or on fewer workers when no CPU is left for one. Anything that fails
        meanwhile (another worker lost, Ray itself) ends in :class:`WorkersLost`."""
        snap = self.snapshots.latest
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
        crew = self.crew
        started = time.perf_counter()
        before, rolled = crew.size, self.iterations - snap.iterations
        live, suspects = self._live_actors()
        answered, missing = len(live), crew.requested - len(live)
        if missing > 0 and self.stop != StopReason.INTERRUPTED:
            live += self._replace(missing, suspects)
        if not live:
            raise WorkersLost(f"every worker was lost ({said(lost)}) and no live node has a CPU free for another")
        crew.actors = live
        now = self.totals  # what the recoveries and snapshots cost is not undone
        totals = replace(snap.totals, recoveries=now.recoveries + 1, rolled_back=now.rolled_back + rolled,
                         coordinator_busy=now.coordinator_busy, snapshots=now.snapshots,
                         snapshot_seconds=now.snapshot_seconds, snapshot_longest=now.snapshot_longest)
        if len(live) == len(snap.workers):  # as many workers as the snapshot's: each takes its own share back
            self._build(pickle.loads(snap.own), snap.g_min, snap.iterations, snap.trace, totals, list(snap.reports),
                        snap.inbox, snap.unheard, PLACE_SECONDS)
            crew.save_get([slot.actor.restore.remote(state) for slot, state in zip(self.slots, snap.workers)])
        else:  # the snapshot's state shared out anew, as a resumption on this many workers is
            whole = merged(snap, self.engine.problem)
            empty = [[] for _ in range(crew.size)]
            self._build(SearchState(), snap.g_min, snap.iterations, snap.trace, totals,
                        [StepReport() for _ in range(crew.size)], empty, empty, PLACE_SECONDS)
            self._distribute(whole)
        if self.stop == StopReason.FINISHED:  # a snapshot is never of a finished search: it goes on
            self.stop = None
        self.notes.append(
            f"a worker was lost ({said(lost)}); the search went back to its snapshot at iteration "
            f"{snap.iterations:,} ({rolled:,} iterations to do again) and goes on with {crew.size} workers"
            f"{'' if crew.size == before else f' (was {before})'}: {answered} went on, {len(live) - answered} "
            f"started of {missing} missing; the recovery took {time.perf_counter() - started:.1f} s")

    def _live_actors(self) -> tuple[list[Any], set[str]]:
        """The workers that answer within :data:`~.recovery.PING_SECONDS` and were fed by
        none that did not (the others are killed), and the suspect nodes (:func:`~.recovery.sort_out`)."""
        # a live worker answers at once: once interrupted, no need to wait long
        crew = self.crew
        answered = answering(crew.actors, min(crew.silent, PING_SECONDS), INTERRUPTED_SECONDS, self._interrupted)
        fed = [set().union(*slot.fed) for slot in self.slots] if len(self.slots) == len(crew.actors) else None
        live, suspects, self.freed = sort_out(crew.actors, crew.nodes, answered, fed)
        return live, suspects

    def _replace(self, wanted: int, suspects: set[str]) -> list[Any]:
        """Up to ``wanted`` new workers, on nodes Ray reports alive with a CPU free, but
        not on the ``suspects`` (nodes of lost workers); those not started within
        :data:`~.recovery.PLACE_SECONDS` (or before the search is interrupted) are given up."""
        spots = (self.freed + free_spots(self.crew.cpus, suspects))[:wanted]
        self.freed = []
        if not spots:
            return []
        started = [self.crew.spawn(node) for node in spots]
        answered = answering(started, PLACE_SECONDS, 0.0, self._interrupted)
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
        """The latest snapshot as a checkpoint's parts (each worker's share put in this
        node's object store, so the driver fetches one at a time), with no worker's help:
        what is left to save when the workers are lost. None without a snapshot."""
        snap = self.snapshots.latest
        if snap is None:
            return None
        return Cut(workers=[ray.put(state) for state in snap.workers],
                   inbox=[batch for batches in snap.inbox for batch in batches], own=snap.own,
                   iterations=snap.iterations, elapsed=snap.elapsed, g_min=snap.g_min, trace=list(snap.trace),
                   next_owner=self.owners)

    # -- reports --------------------------------------------------------------------
    def least_bound(self) -> float:
        """The least bound of every open branch as last reported (progress figures); the
        root's bound for a worker that holds branches and has reported none yet."""
        bounds = [s.report.least_bound if s.report.least_bound is not None else self.root_bound
                  for s in self.slots if s.report.least_bound is not None or s.report.open_branches]
        bounds += [b.bound for slot in self.slots for b in slot.hand]
        return min([*bounds, self.engine.least_bound(), self.engine.g_min])

    def exact_least_bound(self) -> float:
        """The least bound over every open branch in every worker and every batch in flight."""
        self._drain()
        bounds = self.crew.save_get([slot.actor.open_bound.remote() for slot in self.slots])
        bounds += [b.bound for slot in self.slots for b in slot.hand]
        for ref in (ref for slot in self.slots for ref in slot.inbox):
            batch = self.crew.get(ref) if isinstance(ref, ray.ObjectRef) else ref
            bounds.append(batches.least_bound(batch, self.engine.problem.topo.n))
        return min([*bounds, self.engine.least_bound(), self.engine.g_min])

    def progress(self) -> Progress:
        """Where the search stands (its lower bound as last reported by the workers)."""
        elapsed = self.elapsed()
        return Progress(
            iterations=self.iterations, best_cost=self.engine.g_min, lower_bound=self.least_bound(),
            open_branches=sum(slot.holding() for slot in self.slots) + self.engine.open_count(),
            elapsed_seconds=elapsed, rate=self.iterations / elapsed if elapsed > 0 else 0.0,
            peak_memory_mb=self.watch.peak_memory_mb,
            link_records=sum(slot.report.link_records for slot in self.slots) + self.engine.link_records,
            workers=self.crew.size)

    def finish(self) -> Results | None:
        """The search's results: the final link entry, with every history it reaches
        gathered here (so that :meth:`lookup` needs no worker afterwards). None when a
        worker was lost after the proof (here, or in a :meth:`lookup` since): every
        worker was rolled back to the last snapshot and the search goes on (call
        :meth:`advance` again). A worker lost after a limit stopped the search leaves
        the older state, stopped; its results."""
        while self.stop is not None:
            try:
                return self._results()
            except LOST:
                self._recover()
        return None

    def _results(self) -> Results:
        self._settle_arrivals()
        if self.sharded:
            finals = [e for e in self.crew.save_get([slot.actor.final_entry.remote() for slot in self.slots])
                      if e is not None]
            records = sum(self.crew.save_get([slot.actor.link_records.remote() for slot in self.slots]))
        else:
            found = self.engine.final_entry()
            finals = [found] if found is not None else []
            records = self.engine.link_records
        self.histories = gather_histories([(f.record,) for f in finals], self._lookup)
        totals = self.totals
        statistics = Statistics(
            workers=self.crew.size, link_table=self.options.link_table, steps=totals.steps, elapsed=self.elapsed(),
            worker_iterations=[slot.report.iterations for slot in self.slots],
            worker_busy=[slot.report.busy for slot in self.slots], worker_cpu=[slot.report.cpu for slot in self.slots],
            coordinator_busy=totals.coordinator_busy, coordinator_cpu=time.process_time() - self.cpu,
            coordinator_memory_mb=self.coordinator_memory, sent=totals.sent, received=totals.received,
            bytes=totals.bytes, snapshots=totals.snapshots, snapshot_seconds=totals.snapshot_seconds,
            snapshot_longest_seconds=totals.snapshot_longest,
            recoveries=totals.recoveries, rolled_back=totals.rolled_back,
            workers_lost=self.crew.requested - self.crew.size)
        return Results(
            stop=self.stop, iterations=self.iterations, trace=list(self.trace),
            final=finals[0] if finals else None,
            lower_bound=self.engine.g_min if self.stop == StopReason.FINISHED else self.exact_least_bound(),
            peak_memory_mb=self.watch.peak_memory_mb, link_records=records, statistics=statistics)

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
        return self.crew.save_get([slot.actor.take_log.remote() for slot in self.slots])

    def paths(self, trails: list[tuple]) -> dict[int, Histories]:
        """The first history of every record on the paths that ``trails`` followed,
        fetched for all of them at once (see :func:`histories.gather_histories`).
        Improvements' mappings are rebuilt from this in one call while the search runs,
        instead of a call per record that leaves the workers without steps meanwhile."""
        return gather_histories(trails, self.lookup, first=True)

    def _lookup(self, records: set[int]) -> dict[int, Histories]:
        found = self.engine.lookup(records)
        # answered between the expansions of a running step, not after the steps queued there
        calls = [slot.actor.lookup.options(concurrency_group=LOOKUPS).remote(records) for slot in self.slots]
        for part in self.crew.save_get(calls):
            found.update(part)
        return found
