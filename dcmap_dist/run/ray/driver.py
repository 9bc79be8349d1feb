"""The distributed DCMAP search on Ray: one coordinator actor
(:class:`coordinator.Coordinator`) and W worker actors (:class:`worker.Worker`); this
module runs a search from the driver (:mod:`.cluster` attaches to Ray and keeps the
pool of actors; :mod:`.protocol` holds the records they exchange).

Every worker runs the serial loop (its engine: :mod:`dcmap_dist.search.engine`) on its own
open branches, in steps of about :data:`steps.STEP_SECONDS`. A step takes the batches of
completions addressed to the worker since its last step, the global ``G_min`` and
the dominance notices it has not heard; it returns its statistics and its outgoing
batches (:mod:`dcmap_dist.search.batches`, one Ray object per destination, passed on by reference so
the coordinator never unpacks them). Steps are not synchronised in rounds: the
coordinator waits for whichever step ends first, takes it in, and starts that
worker's next step at once, so no worker waits for the slowest one. Each worker
has one step queued behind the one it runs (:data:`steps.QUEUED_STEPS`, unless an
iteration limit is shared out), so it goes from one step to the next without
waiting for the coordinator to take the last one in. A worker with
no open branches and nothing addressed to it rests until something is. Placement
of the link table (``link_table``):

* ``sharded`` (default): worker ``i`` owns the keys that :func:`linking.route`
  sends to ``i``; it settles every arrival at them and keeps the branches that go
  on. Dominance is then always decided, and checked, where the branch lives.
* ``coordinator``: the coordinator owns the whole table (the product brief's
  design). Workers send it every completion; it settles them, deals the survivors
  out to the workers, cheapest first (free and least-loaded workers first), and
  broadcasts dominated records.

Termination: when no step is running, no worker holds an open branch, and no batch
or dealt branch waits for a worker (and the coordinator's pool is empty), the
search is proven; nothing can be in flight, since every batch a step sends is in
an inbox once the coordinator has taken the step in.

A lost worker loses nothing: the coordinator keeps a consistent snapshot of
every worker's state (taken when no step runs, fetched to the coordinator, which runs
on the driver's node) and, if a worker dies or stops answering, starts a fresh one on
a live node (or goes on with fewer workers when no CPU is free) and rolls every worker
back to the snapshot. The work since the snapshot is redone. A worker lost after the
proof, while the coordinator gathers the results, is recovered the same way and the
search goes on from the snapshot to a new proof; the histories of the optimal
mappings are gathered on the coordinator before it reports the results, so the
driver's lookups need no worker.
"""


from __future__ import annotations

import math
import pickle
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import ray

from ...limits import INTERRUPT, Limits, StopReason, Stopwatch
from ...progress import Progress
from ...search import batches
from ...search.branch import Branch
from ...search.engine import share_state
from ...search.heuristics import incumbent
from ...search.histories import Histories, MissingRecord, gather_histories
from ...search.outcome import OnImprovement, SearchOutcome, announce, outcome
from ...search.problem import Problem
from ...search.state import Contour, Improvement, Resumption, SearchState, counters, write_size
from ...search.tolerance import within
from ...settings import FIRST_BUDGET
from ..loop import Ending, Saver, Turn
from .cluster import forget_pool, pooled_coordinator, ship_by_value
from .coordinator import CONTROL
from .protocol import Cut, RayOptions, Results, SearchSpec, TurnReport, WorkerLostWarning, WorkersLost

__all__ = ["PROGRESS_SECONDS", "RaySearch"]

PROGRESS_SECONDS = 1.0  # how often the driver hears from the coordinator
POLL_SECONDS = 0.2  # how often the driver looks for a signal while it waits for the coordinator
KEPT_SECONDS = 120.0  # how long the coordinator may take to hand over its last snapshot when the workers are lost


class RaySearch:
    """The distributed search as a backend of the driver loop (:mod:`dcmap_dist.run.loop`):
    a coordinator actor from the pool, run in turns of :data:`PROGRESS_SECONDS`; new
    improvements are announced with their mappings as the driver hears of them."""

    def __init__(self, problem: Problem, alpha: float, seed: int, options: RayOptions, limits: Limits,
                 on_improvement: OnImprovement | None, resume: Resumption | None,
                 first_budget: int = FIRST_BUDGET) -> None:
        self.problem = problem
        self.on_improvement = on_improvement
        spec = SearchSpec.of(problem, alpha, seed, options.log_work)
        self.spec = spec
        self.first = first = resume.first if resume else incumbent(problem, Stopwatch(limits), first_budget)
        ship_by_value(spec.model)
        g_min = resume.g_min if resume else first.cost
        self.handle = None
        # the cost last announced: a recovery rolls the trace back, so what is new is what is
        # cheaper, not what comes after a count
        announced = _improving(list(resume.trace), first)[-1].cost if resume else math.inf
        self.heard = _Heard(announced, first)
        self.g_min = g_min  # the coordinator's G_min, as last reported
        self.trace: list[Improvement] = list(resume.trace) if resume else []  # the coordinator's, as last reported
        self.contour: Contour | None = None  # the contour searched (run.ray.contours), kept in checkpoints
        self.progress = Progress(iterations=resume.iterations if resume else 0, best_cost=g_min, lower_bound=None,
                                 open_branches=len(resume.state.branches) if resume else 1, elapsed_seconds=0.0,
                                 rate=0.0, peak_memory_mb=0.0,
                                 link_records=len(resume.state.entries) if resume else 0, workers=options.workers)

    def begin(self, options: RayOptions, limits: Limits, resume: Resumption | None, started: float) -> None:
        """Load the search into a coordinator of the pool (a new one if the pool's died),
        with the limits left since ``started`` (the first mapping's dive and the pool's
        start count: on a wide network on the Python engine they took seconds)."""
        g_min = self.g_min = resume.g_min if resume else self.first.cost

        def left() -> Limits:
            if limits.time_limit is None:
                return limits
            return replace(limits, time_limit=max(1e-3, limits.time_limit - (time.perf_counter() - started)))

        try:
            self.handle = pooled_coordinator(options.workers)
            ray.get(self.handle.begin.remote(self.spec, options, left(), g_min, resume))
        except ray.exceptions.RayActorError:  # the pool died since its last search: a new one
            forget_pool()
            self.handle = pooled_coordinator(options.workers)
            ray.get(self.handle.begin.remote(self.spec, options, left(), g_min, resume))

    def advance(self, saver: Saver | None) -> Turn:
        """The coordinator runs the search for a while, stopping in time for the final
        checkpoint (its size judged by the last report); new improvements are announced."""
        handle, heard, first, last = self.handle, self.heard, self.first, self.progress
        reserve = saver.reserve(write_size(last.open_branches, last.link_records)) if saver is not None else 0.0
        report = _advance(handle, reserve)
        for note in report.recoveries:
            warnings.warn(note, WorkerLostWarning, stacklevel=2)
        fresh = [found for found in _improving(report.trace, first) if not within(heard.announced, found.cost)]
        if fresh:  # the records on the improvements' paths, in one call
            heard.known.update(ray.get(handle.paths.remote([found.trail for found in fresh
                                                            if found.trail is not None])))
            if fresh[-1].trail is not None:
                heard.best = (fresh[-1].trail, fresh[-1].cost)
        announce(self.problem, fresh, self.on_improvement, heard.recall, lost=True)
        heard.announced = fresh[-1].cost if fresh else heard.announced
        # a recovery rolls G_min back to the snapshot's; the announced cost was found all the
        # same, so it is still the best known and bounds the optimum
        self.g_min, self.trace = report.progress.best_cost, report.trace
        best = min(report.progress.best_cost, heard.announced)
        self.progress = replace(report.progress, best_cost=best, lower_bound=min(report.progress.lower_bound, best))
        return Turn(report.done, self.progress)

    def halt(self, reason: StopReason) -> None:
        ray.get(self.handle.halt.options(concurrency_group=CONTROL).remote(reason))

    def go_on(self) -> None:
        """Let the search go on after a halt at an iteration count (:meth:`.Coordinator.go_on`)."""
        ray.get(self.handle.go_on.remote())

    def cut(self) -> tuple[Iterator[SearchState], dict[str, Any]]:
        """A consistent cut, each worker's state fetched as the checkpoint is written."""
        return self._parts(ray.get(self.handle.cut.remote()))

    def _parts(self, cut: Cut) -> tuple[Iterator[SearchState], dict[str, Any]]:
        def parts() -> Iterator[SearchState]:
            for ref in cut.workers:
                yield share_state(self.problem, pickle.loads(ray.get(ref)).share)
            yield pickle.loads(cut.own)
            for batch in cut.inbox:  # a batch the coordinator made itself (the root's, a resumption's) is bytes
                if batch:
                    data = ray.get(batch) if isinstance(batch, ray.ObjectRef) else batch
                    yield SearchState(arrivals=batches.decode(data, self.problem.topo.n))

        trace = _improving(cut.trace, self.first)
        # a contour holds G_min below the best known: the checkpoint keeps the best known, as
        # the serial search by contours does (the contour keeps its value)
        g_min = cut.g_min if self.contour is None else trace[-1].cost
        return parts(), counters(cut.iterations, cut.elapsed, g_min, trace, self.first, cut.next_owner,
                                 self.contour)

    def finish(self) -> Ending | None:
        """The results, with the histories the final entry reaches (None: a worker was
        lost after the proof, and the search goes on from the last snapshot)."""
        results = self.results()
        if results is None:
            return None
        proven = results.stop == StopReason.FINISHED
        return Ending(self.outcome(results, proven, results.stop, results.lower_bound), self.progress)

    def results(self) -> Results | None:
        """The stopped search's results from the coordinator (None: a worker was lost
        after the proof, and the search goes on from the last snapshot)."""
        return ray.get(self.handle.finish.remote())

    def outcome(self, results: Results, proven: bool, stop: StopReason, open_bound: float) -> SearchOutcome:
        """The outcome of ``results`` (``proven`` or stopped by ``stop``, no open branch
        under ``open_bound``), the mappings' histories fetched from the coordinator."""
        def fetch(records: set[int]) -> dict[int, Histories]:
            return ray.get(self.handle.lookup.remote(records))

        return outcome(results.final, self.first, proven, stop, results.iterations,
                       _improving(results.trace, self.first), open_bound, results.peak_memory_mb, fetch,
                       results.link_records, statistics=results.statistics.as_dict())

    def lost(self, error: Exception, saver: Saver | None = None) -> SearchOutcome:
        """The outcome of a search whose Ray was lost (its node, an out-of-memory kill,
        the coordinator), or all of whose workers were: the best mapping the driver had
        heard of, not proven, stop reason ``ray_lost``. With a ``saver``, a checkpoint of
        the coordinator's last snapshot if the coordinator still answers; else the last
        checkpoint, if any, is where the search goes on from."""
        if saver is not None and self.handle is not None:
            try:
                kept = ray.get(self.handle.kept.remote(), timeout=KEPT_SECONDS)
                if kept is not None:
                    saver.save(*self._parts(kept))
            except ray.exceptions.RayError:
                pass  # the coordinator is gone too
        first, heard, last = self.first, self.heard, self.progress
        trail, cost = heard.best
        try:
            histories = gather_histories([trail], heard.recall)
        except MissingRecord:
            (trail, cost), histories = (first.trail, first.cost), {}
        lower = min(-math.inf if last.lower_bound is None else last.lower_bound, cost)
        cause = getattr(error, "cause", None)
        if isinstance(cause, WorkersLost):  # said by the coordinator: its words, not Ray's wrapping
            error = cause
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return SearchOutcome(cost, [(trail, cost, 0)], False, StopReason.RAY_LOST, last.iterations,
                             peak_memory_mb=last.peak_memory_mb, lower_bound=lower, histories=histories,
                             statistics={"lost": reason}, incumbent=(first.trail, first.cost))


def _advance(handle: Any, reserve: float) -> TurnReport:
    """The coordinator's report after it has run the search for a while. A signal
    meanwhile (SIGINT, SIGTERM) halts it at once, through its own thread: a turn that
    waits for a silent worker or a recovery ends within seconds."""
    turn = handle.advance.remote(PROGRESS_SECONDS, reserve)
    halted = False
    while not ray.wait([turn], timeout=POLL_SECONDS)[0]:
        if INTERRUPT.is_set() and not halted:
            handle.halt.options(concurrency_group=CONTROL).remote(StopReason.INTERRUPTED)
            halted = True
    return ray.get(turn)


class _Heard:
    """What the driver has heard of a distributed search's improvements: the cost last
    announced (a recovery rolls the trace back, so what is new is what is cheaper, not
    what comes after a count), the best one whose mapping it looked up, and the first
    histories of the records on those mappings' paths."""

    def __init__(self, announced: float, first: Branch) -> None:
        self.announced = announced
        self.best: tuple[tuple, float] = (first.trail, first.cost)
        self.known: dict[int, Histories] = {}

    def recall(self, records: set[int]) -> dict[int, Histories]:
        return {r: self.known[r] for r in records if r in self.known}


def _improving(trace: list[Improvement], first: Branch) -> list[Improvement]:
    """The strictly improving subsequence of improvements gathered from all workers, by
    time, starting with the incumbent's."""
    out: list[Improvement] = []
    trace = [Improvement(0, 0.0, first.cost, first.trail), *trace]
    for found in sorted(trace, key=lambda t: (t.seconds, t.iteration)):
        if not out or not within(out[-1].cost, found.cost):
            out.append(found._replace(iteration=max(found.iteration, out[-1].iteration)) if out else found)
    return out
