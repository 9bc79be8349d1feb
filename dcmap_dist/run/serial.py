"""DCMAP (the paper's section 4) with the two corrections of SPEC section 5, run
serially: one engine (:mod:`dcmap_dist.search.engine`) that owns the whole link table,
driven by the loop of :mod:`dcmap_dist.run.loop` (as the distributed search is).

The loop itself (activation with ``alpha``, pruning of dominated branches and of
branches that cannot beat ``G_min``, expansion, linking at completed layers) is the
engine's, shared with the distributed search (:mod:`dcmap_dist.search.explorer`); the
link table is in :mod:`dcmap_dist.search.linking`, and the tied histories that rebuild
every optimal mapping in :mod:`dcmap_dist.search.histories`.
"""

from __future__ import annotations

import time
from typing import Any

from ..limits import Limits, StepEnd, StopReason, Stopwatch
from ..progress import Progress, Rescanned
from ..search.engine import Engine, new_engine
from ..search.heuristics import incumbent
from ..search.outcome import OnImprovement, announce, outcome
from ..search.problem import Problem
from ..search.state import Improvement, Resumption, SearchState, counters, write_size
from ..settings import FIRST_BUDGET
from .loop import Ending, Saver, Turn

__all__ = ["SerialSearch", "TURN_SECONDS"]

TURN_SECONDS = 0.25  # a turn of the serial loop: how often it pauses to report progress and save


class SerialSearch:
    """The serial search as a backend of the driver loop (:mod:`dcmap_dist.run.loop`): one
    engine that owns the whole link table, run in turns of :data:`TURN_SECONDS`. Its
    stopwatch enforces the limits, the time limit less the final checkpoint's time."""

    def __init__(self, problem: Problem, alpha: float, seed: int, limits: Limits | None,
                 on_improvement: OnImprovement | None, resume: Resumption | None, reports: bool = True,
                 first_budget: int = FIRST_BUDGET) -> None:
        self.problem = problem
        self.reports = reports  # progress reports are wanted (they scan the open branches now and then)
        self.on_improvement = on_improvement
        self.watch = watch = Stopwatch(limits or Limits())
        self.before = resume.elapsed if resume is not None else 0.0  # seconds searched before a resumption
        if resume is None:
            self.owner = 0
            self.engine: Engine = new_engine(problem, alpha, seed, owner=self.owner)
            self.first = incumbent(problem, watch, first_budget)
            self.trace: list[Improvement] = []
            self.engine.start(self.first, watch)
        else:
            self.owner = resume.next_owner
            self.engine = new_engine(problem, alpha, seed, owner=self.owner)
            self.first = resume.first
            self.trace = list(resume.trace)
            self.engine.restore(resume.state, resume.iterations, resume.g_min, seconds=resume.elapsed)
        self._hear()
        self.open_bound = Rescanned(self.engine.least_bound)
        self.stop: StopReason | StepEnd | None = None

    def _hear(self) -> None:
        """Record and announce the engine's new improvements."""
        found = self.engine.take_improvements()
        self.trace += found
        announce(self.problem, found, self.on_improvement, self.engine.lookup)

    def advance(self, saver: Saver | None) -> Turn:
        engine, watch = self.engine, self.watch
        if self.stop is None:
            if saver is not None:  # the final checkpoint is written inside the time limit
                watch.reserve = saver.reserve(write_size(engine.open_count(), engine.link_records))
            stop = engine.step(watch, until=time.perf_counter() + TURN_SECONDS)
            self._hear()
            if stop != StepEnd.BUDGET:
                self.stop = stop
        if self.stop is not None:
            return Turn(True)
        due = self.reports and watch.progress_due()
        return Turn(False, self._progress(self.open_bound()) if due else None)

    def halt(self, reason: StopReason) -> None:
        self.stop = self.stop or reason

    def cut(self) -> tuple[list[SearchState], dict[str, Any]]:
        engine = self.engine
        return [engine.export()], counters(engine.iterations, self.before + self.watch.elapsed(), engine.g_min,
                                           self.trace, self.first, self.owner + 1)

    def finish(self) -> Ending:
        engine = self.engine
        proven = self.stop == StepEnd.IDLE
        final_bound = engine.least_bound()  # a scan of every open branch: once
        found = outcome(engine.final_entry(), self.first, proven, StopReason.FINISHED if proven else self.stop,
                        engine.iterations, self.trace, final_bound, self.watch.peak_memory_mb, engine.lookup,
                        engine.link_records)
        return Ending(found, self._progress(final_bound))

    def _progress(self, open_bound: float) -> Progress:
        """A progress report; the lower bound is the least of ``G_min`` and ``open_bound``
        (a lower bound over the open branches)."""
        engine = self.engine
        return self.watch.progress(engine.iterations, engine.g_min, engine.open_count(),
                                   min(engine.g_min, open_bound), engine.link_records)
