"""The search by contours: a proven lower bound that rises (docs/search.md, "A proven
lower bound that rises: contours").

A contour is the search with ``G_min`` held at a value ``G`` below the incumbent's cost:
a fresh engine (:mod:`dcmap_dist.search.engine`) started at the root hears ``G``, so
every branch whose bound exceeds ``G`` is pruned, and runs until nothing is open. If it
reached no complete mapping, every mapping costs more than ``G``: ``G`` is a proven
lower bound, the engine (its link table and queue) is dropped and the next contour,
higher, starts from the root. A contour that reaches a mapping is the ordinary search
from then on (``G_min`` falls to the mapping's cost) and ends with its proof; the last
contour is capped at the incumbent, where it is the ordinary search itself.

Each contour's value is chosen so that it should cost about :data:`GROWTH` times the
last one's expansions (:func:`next_value`), so that all of them together cost about
twice the last.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from ..limits import Limits, StepEnd, StopReason, Stopwatch
from ..progress import Progress, Rescanned
from ..search.branch import Branch
from ..search.engine import Engine, new_engine
from ..search.heuristics import FIRST_BUDGET, incumbent
from ..search.outcome import OnImprovement, SearchOutcome, announce, outcome
from ..search.problem import Problem
from ..search.state import Contour, Improvement, Resumption, SearchState, counters, write_size
from ..search.tolerance import TOLERANCE, within
from .loop import Ending, Saver, Turn
from .serial import TURN_SECONDS

__all__ = ["BUDGET", "ContourSearch", "Contours", "FEW", "FIRST_STEP", "FLOOR", "GROWTH", "budget", "by_contours",
           "next_value"]

FIRST_STEP = 0.005  # the first contour lies this share above the root bound
GROWTH = 2.0  # each contour is meant to cost this many times the expansions of the one before
FEW = 1000  # after a contour of fewer expansions (too few to tell the growth) the step doubles
BUDGET = 4  # a contour that takes this many times its expected expansions is given up (see budget)
FLOOR = 100_000  # but never before this many (a second's work or so)


def next_value(root_bound: float, done: list[tuple[float, int]], incumbent_cost: float) -> float:
    """The next contour's value after the exhausted contours ``done`` ((value,
    expansions), in order) above ``root_bound``, capped at ``incumbent_cost`` (the
    ordinary search). The first lies :data:`FIRST_STEP` above the root bound (of the
    incumbent's cost when the root bound is 0: no bound). A proof's work grows about
    exponentially in ``G`` (results/contours.md): the rate is read off the last three
    contours (a single step's growth is noisy) and the step is the one that should
    multiply the work by :data:`GROWTH`, twice the last step at most. While the last
    contour took fewer than :data:`FEW` expansions (too few to tell the growth), or no
    more than the one it is compared with, the step doubles."""
    if not done:
        return min(root_bound + FIRST_STEP * (root_bound if root_bound > 0 else incumbent_cost), incumbent_cost)
    last, expansions = done[-1]
    step = last - (done[-2][0] if len(done) > 1 else root_bound)
    value = last + 2 * step
    if len(done) > 1:
        reference, made = done[max(0, len(done) - 3)]
        if expansions >= FEW and expansions > made:
            value = last + min(2 * step, math.log(GROWTH) * (last - reference) / math.log(expansions / max(1, made)))
    return min(value, incumbent_cost)


def by_contours(wanted: bool, resume: Resumption | None) -> bool:
    """Whether a component is searched by contours: as ``wanted`` when it starts; a
    resumed one as its checkpoint was taken (during a contour, or in the ordinary
    search), whatever ``wanted`` says: a contour's state holds only the branches under
    its value, and the ordinary search's is not a contour's."""
    return wanted if resume is None else resume.contour is not None


def budget(contour: Contour) -> int:
    """The most expansions ``contour`` may take before it is given up: :data:`BUDGET`
    times what it is expected to take (:data:`GROWTH` times the last exhausted
    contour's), :data:`FLOOR` at least, doubled for every contour given up since. The
    growth is not always smooth (pathfinder: a step of 1.1% above 200,365 took more than
    60 times the work), and a contour given up is searched again halfway down from it;
    the doubling ends the halving (a contour just above the proven bound may cost more
    than a fixed budget), and keeps the work given up within a few times that of the
    contours proven."""
    last = contour.done[-1][1] if contour.done else 0
    return max(FLOOR, int(BUDGET * GROWTH * last)) * 2 ** contour.given_up


class Contours:
    """The search by contours as a backend of the driver loop (:mod:`dcmap_dist.run.loop`),
    whatever runs each contour's search (held: from the root, ``G_min`` held at the
    contour's value): the schedule of contours, the proven bound, and when a contour
    is exhausted, given up, or the ordinary search. A subclass runs the held searches:
    :class:`ContourSearch` one engine in this process, :class:`~.ray.contours.RayContourSearch`
    the coordinator's workers. The iteration limit counts every contour's expansions."""

    def __init__(self, problem: Problem, first: Branch, limits: Limits, resume: Resumption | None) -> None:
        self.problem, self.first = problem, first
        self.most = limits.max_iterations  # the component's iterations, every contour's together
        self.owner = resume.next_owner if resume is not None else 0
        self.trace: list[Improvement] = list(resume.trace) if resume is not None else []
        self.stop: StopReason | StepEnd | None = None
        self.root_bound = problem.score(problem.root()).bound
        self.highest = -math.inf  # the highest lower bound reported (see _bound)
        self.contour = resume.contour if resume is not None else Contour(
            next_value(self.root_bound, [], first.cost), self.root_bound)

    # -- what a subclass runs: the contour's held search
    def _start(self) -> None:
        """Begin :attr:`contour`'s search at the root, ``G_min`` held at its value."""
        raise NotImplementedError

    def _turn(self, saver: Saver | None, most: int | None) -> StopReason | StepEnd:
        """Run the contour's search for a turn, ``most`` expansions of its own at most
        (the improvements heard); ``idle`` when it has nothing open, ``budget`` when
        the turn ends with it open, else why it stopped (``max_iterations``: at ``most``)."""
        raise NotImplementedError

    def _expanded(self) -> int:
        """The contour's own expansions."""
        raise NotImplementedError

    def _reached(self) -> float | None:
        """The cost of the best mapping the contour has reached (at most its value), or
        None if none."""
        raise NotImplementedError

    @property
    def best(self) -> float:
        """The cost of the best complete mapping known."""
        return min([self.first.cost, *(found.cost for found in self.trace)])

    @property
    def iterations(self) -> int:
        """The component's iterations, every contour's together (those before a resumption too)."""
        return self.contour.before + self._expanded()

    def advance(self, saver: Saver | None) -> Turn:
        if self.stop is None:
            left = None if self.most is None else max(0, self.most - self.contour.before)  # the user's limit
            most = left if self._ordinary() else min(budget(self.contour), math.inf if left is None else left)
            stop = self._turn(saver, most)
            if stop == StepEnd.IDLE:
                self._exhausted()
            elif stop == StopReason.MAX_ITERATIONS and (left is None or self._expanded() < left):
                if not self._ordinary():  # over its budget (else it became the ordinary search: it goes on)
                    self._give_up()
            elif stop != StepEnd.BUDGET:
                self.stop = stop
        if self.stop is not None:
            return Turn(True)
        return Turn(False, self._progress())

    def _progress(self) -> Progress | None:
        """The progress report of a turn (None: none is due)."""
        raise NotImplementedError

    def _next(self, contour: Contour) -> None:
        """Search ``contour`` next."""
        self.contour = contour
        self._start()

    def _exhausted(self) -> None:
        """The contour has nothing open: the proof if it is capped at the incumbent or
        reached a mapping, else the next contour. A mapping reached within the
        tolerance of the contour's value, which ``G_min`` held there did not count as
        an improvement (SPEC section 3), is searched for again just above it, so that
        it is in the trace and its ties are kept as the ordinary search keeps them."""
        contour = self.contour
        capped = contour.value >= self.first.cost
        reached = self._reached()
        before = contour.before + self._expanded()
        if capped or (reached is not None and within(self.best, reached)):
            self.stop = StepEnd.IDLE
        elif reached is not None:
            self._next(Contour(min(contour.value * (1 + 4 * TOLERANCE), self.first.cost), contour.proven, before,
                               contour.done))
        else:  # no mapping costs contour.value or less
            done = [*contour.done, (contour.value, self._expanded())]
            self._next(Contour(next_value(self.root_bound, done, self.first.cost), contour.value, before, done))

    def _ordinary(self) -> bool:
        """Whether the contour is the ordinary search: capped at the incumbent, or it has
        reached a mapping."""
        return self.contour.value >= self.first.cost or self._reached() is not None

    def _give_up(self) -> None:
        """The contour has taken more than its budget: drop it (its work proved nothing)
        and search the contour halfway between the proven bound and it."""
        contour = self.contour
        self._next(Contour((contour.proven + contour.value) / 2, contour.proven, contour.before + self._expanded(),
                           contour.done, contour.given_up + 1))

    def halt(self, reason: StopReason) -> None:
        self.stop = self.stop or reason

    def _bound(self, open_bound: float, g_min: float) -> float:
        """A lower bound on the optimum: the proven contour bound, or, if higher, the
        least of the contour's ``g_min`` and ``open_bound`` (a lower bound over its open
        branches; a mapping beyond the branches the contour pruned costs more than its
        ``G_min``), or the highest reported before, which still holds (a contour given
        up for a lower one starts again at the root)."""
        self.highest = max(self.highest, self.contour.proven, min(g_min, open_bound))
        return self.highest

    def _ended(self, found: SearchOutcome, progress: Progress) -> Ending:
        """The stopped search's ending, with the contours searched."""
        found.contours = [*self.contour.done, (self.contour.value, self._expanded())]
        return Ending(found, progress)


class ContourSearch(Contours):
    """The search by contours in this process: one engine per contour, run in turns of
    :data:`TURN_SECONDS`. Its stopwatch enforces the time and memory limits; the
    iteration limit is given to each step."""

    def __init__(self, problem: Problem, alpha: float, seed: int, limits: Limits | None,
                 on_improvement: OnImprovement | None, resume: Resumption | None, reports: bool = True,
                 first_budget: int = FIRST_BUDGET) -> None:
        limits = limits or Limits()
        self.alpha, self.seed = alpha, seed
        self.reports = reports
        self.on_improvement = on_improvement
        self.watch = Stopwatch(dataclasses.replace(limits, max_iterations=None))
        self.before = resume.elapsed if resume is not None else 0.0  # seconds searched before a resumption
        first = resume.first if resume is not None else incumbent(problem, self.watch, first_budget)
        super().__init__(problem, first, limits, resume)
        if resume is None:
            self._start()
        else:  # a checkpoint taken during a contour (resume.contour)
            self.engine: Engine = new_engine(problem, alpha, seed, owner=self.owner)
            self.engine.restore(resume.state, resume.iterations - self.contour.before,
                                min(self.contour.value, resume.g_min), seconds=self.before)
            self.engine.place(self.contour.before, self.before, self.watch)
            self.open_bound = Rescanned(self.engine.least_bound)
            self._hear()

    def _start(self) -> None:
        """A fresh engine at the root, ``G_min`` held at the contour's value. The
        incumbent is an improvement of the first contour only."""
        contour = self.contour
        self.engine = new_engine(self.problem, self.alpha, self.seed, owner=self.owner)
        self.engine.start(self.first, self.watch)
        self.engine.hear(contour.value)
        self.engine.place(contour.before, self.before, self.watch)
        if self.trace:
            self.engine.take_improvements()  # the incumbent again
        self.open_bound = Rescanned(self.engine.least_bound)
        self._hear()

    def _hear(self) -> None:
        """Record and announce the engine's new improvements."""
        found = self.engine.take_improvements()
        self.trace += found
        announce(self.problem, found, self.on_improvement, self.engine.lookup)

    def _turn(self, saver: Saver | None, most: int | None) -> StopReason | StepEnd:
        engine = self.engine
        if saver is not None:  # the final checkpoint is written inside the time limit
            self.watch.reserve = saver.reserve(write_size(engine.open_count(), engine.link_records))
        stop = engine.step(self.watch, until=time.perf_counter() + TURN_SECONDS, max_iterations=most)
        self._hear()
        return stop

    def _expanded(self) -> int:
        return self.engine.iterations

    def _reached(self) -> float | None:
        final = self.engine.final_entry()
        return None if final is None else final.best

    def _progress(self) -> Progress | None:
        return self._report(self.open_bound()) if self.reports and self.watch.progress_due() else None

    def cut(self) -> tuple[list[SearchState], dict[str, Any]]:
        engine = self.engine
        return [engine.export()], counters(self.iterations, self.before + self.watch.elapsed(), self.best,
                                           self.trace, self.first, self.owner + 1, self.contour)

    def finish(self) -> Ending:
        engine = self.engine
        proven = self.stop == StepEnd.IDLE
        bound = self._bound(engine.least_bound(), engine.g_min)  # a scan of every open branch: once
        found = outcome(engine.final_entry(), self.first, proven, StopReason.FINISHED if proven else self.stop,
                        self.iterations, self.trace, bound, self.watch.peak_memory_mb, engine.lookup,
                        engine.link_records)
        return self._ended(found, self._report(bound))

    def _report(self, open_bound: float) -> Progress:
        """A progress report: the best cost known and :meth:`_bound`."""
        engine = self.engine
        return self.watch.progress(self.iterations, self.best, engine.open_count(),
                                   min(self.best, self._bound(open_bound, engine.g_min)), engine.link_records)
