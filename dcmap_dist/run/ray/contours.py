"""The search by contours on Ray workers (docs/search.md, "A proven lower bound that
rises: contours"): the schedule of :class:`~dcmap_dist.run.contours.Contours`, each
contour's held search run by the coordinator's workers.

A contour is a search of the coordinator's begun as a resumption whose state is the
root alone, with ``G_min`` held at the contour's value and the iterations, seconds
and trace of the contours before it: so the coordinator counts, times and limits the
whole search, the workers prune at the contour's value, and a contour exhausted
(nothing open, no mapping reached) proves it. The pool's workers stay loaded from one
contour to the next. A checkpoint keeps the contour (as the serial search's does), and
resumes into it on any number of workers, or serially.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from ...limits import Limits, StepEnd, StopReason
from ...progress import Progress
from ...search.outcome import SearchOutcome
from ...search.state import Resumption, SearchState
from ...search.tolerance import within
from ..contours import Contours
from ..loop import Ending, Saver
from .driver import RaySearch
from .protocol import RayOptions, Results, Statistics

__all__ = ["RayContourSearch"]


class RayContourSearch(Contours):
    """The search by contours as a backend of the driver loop, each contour run by the
    coordinator of ``search`` (a :class:`~.driver.RaySearch`, which announces the
    improvements and keeps the checkpoints' contour)."""

    def __init__(self, search: RaySearch, limits: Limits, resume: Resumption | None) -> None:
        super().__init__(search.problem, search.first, limits, resume)
        self.search = search
        self.results: Results | None = None  # the contour's, once its search has stopped
        self.halted = False  # the contour's search was halted at its budget
        self.peak = 0.0  # the most memory of any contour's processes together (MiB)
        self.spent: Statistics | None = None  # how the contours before this one ran, together
        self.begun: tuple[RayOptions, Limits, float] | None = None
        self.owner = resume.next_owner if resume is not None else 1  # the coordinator's first owner number

    def begin(self, options: RayOptions, limits: Limits, resume: Resumption | None, started: float) -> None:
        """Begin the first contour, or go on from ``resume`` (a checkpoint taken during a
        contour), on the pool's workers, the limits counted from ``started``."""
        self.begun = options, limits, started
        if resume is None:
            self._start()
        else:
            self.search.contour = self.contour
            self.search.begin(options, limits, dataclasses.replace(resume, g_min=min(self.contour.value,
                                                                                     resume.g_min)), started)

    def _start(self) -> None:
        contour, problem, search = self.contour, self.problem, self.search
        options, limits, started = self.begun
        if self.results is not None:  # the contour before's work counts in the search's statistics
            done = self.results.statistics
            self.spent = done if self.spent is None else self.spent.then(done)
        root = problem.root()
        held = Resumption(SearchState(arrivals=[(problem.link_key(root), root)]), contour.before,
                          search.progress.elapsed_seconds, contour.value, self.trace, self.first, self.owner)
        self.results, self.halted = None, False
        search.contour = contour
        search.begin(options, limits, held, started)

    def _turn(self, saver: Saver | None, most: int | None) -> StopReason | StepEnd:
        search = self.search
        turn = search.advance(saver)
        self.trace = list(search.trace)
        self.peak = max(self.peak, search.progress.peak_memory_mb)
        if not turn.stopped:
            if most is not None and self._expanded() >= most and not self.halted:
                search.halt(StopReason.MAX_ITERATIONS)  # the coordinator stops within its turn
                self.halted = True
            return StepEnd.BUDGET
        stop = self._stopped()
        if stop == StopReason.MAX_ITERATIONS and self.halted and self._reached() is not None:
            # halted at its budget as steps still running reached a mapping: the contour is
            # the ordinary search, and goes on (the user's iteration limit, if reached, stops
            # it again at once)
            search.go_on()
            self.results, self.halted = None, False
            return StepEnd.BUDGET
        return stop

    def _stopped(self) -> StopReason | StepEnd:
        """The contour's stopped search's results taken: ``idle`` if it has nothing open,
        else why it stopped (``budget``: a worker lost after the proof was recovered, and
        the search goes on from the last snapshot)."""
        results = self.search.results()
        if results is None:
            return StepEnd.BUDGET
        self.results, self.trace = results, list(results.trace)
        return StepEnd.IDLE if results.stop == StopReason.FINISHED else results.stop

    def _expanded(self) -> int:
        done = self.results.iterations if self.results is not None else self.search.progress.iterations
        return max(0, done - self.contour.before)

    def _reached(self) -> float | None:
        if self.results is not None:
            return None if self.results.final is None else self.results.final.best
        g_min = self.search.g_min  # held at the contour's value until a mapping cheaper is reached
        return None if within(self.contour.value, g_min) else g_min

    def _progress(self) -> Progress:
        progress = self.search.progress
        return dataclasses.replace(progress, best_cost=self.best, peak_memory_mb=self.peak,
                                   lower_bound=min(self.best, self._bound(progress.lower_bound, self.search.g_min)))

    def halt(self, reason: StopReason) -> None:
        super().halt(reason)
        self.search.halt(reason)

    def cut(self) -> tuple[Iterator[SearchState], dict[str, Any]]:
        return self.search.cut()

    def finish(self) -> Ending | None:
        """The results, the lower bound the contours proved (None: a worker was lost
        after the proof, and the search goes on from the last snapshot)."""
        if self.results is None:  # halted during a turn: the coordinator stops in its next
            if not self.search.advance(None).stopped or self._stopped() == StepEnd.BUDGET:
                return None
        results, proven = self.results, self.stop == StepEnd.IDLE
        if self.spent is not None:
            results = dataclasses.replace(results, statistics=self.spent.then(results.statistics))
        bound = self._bound(results.lower_bound, self.search.g_min)
        found = self.search.outcome(results, proven, StopReason.FINISHED if proven else self.stop, bound)
        found.peak_memory_mb = max(self.peak, found.peak_memory_mb)
        return self._ended(found, self._progress())

    def lost(self, error: Exception, saver: Saver | None = None) -> SearchOutcome:
        """The outcome of a search whose Ray was lost (:meth:`.RaySearch.lost`), with the
        lower bound the contours proved."""
        found = self.search.lost(error, saver)
        found.lower_bound = min(found.best_cost, max(found.lower_bound, self.highest, self.contour.proven))
        found.contours = [*self.contour.done, (self.contour.value, self._expanded())]
        return found
