"""DCMAP (the paper's section 4) with the two corrections of SPEC section 5, run
serially: one :class:`explorer.Explorer` that owns the whole link table, driven by the
loop of :mod:`dcmap_dist.run.loop` (as the distributed search is).

The loop itself (activation with ``alpha``, pruning of dominated branches and of
branches that cannot beat ``G_min``, expansion, linking at completed layers) is in
:mod:`dcmap_dist.search.explorer`, shared with the distributed search; the link table is
in :mod:`dcmap_dist.search.linking`, and the tied histories that rebuild every optimal
mapping in :mod:`dcmap_dist.search.histories`.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from typing import Any

from ..limits import Limits, StepEnd, StopReason, Stopwatch
from ..search.explorer import Explorer
from ..search.heuristics import incumbent
from ..search.linking import LinkShard
from ..search.outcome import OnImprovement, Saver, SearchOutcome, announce, outcome
from ..search.problem import Problem
from ..search.state import Resumption, SearchState, counters, write_size
from .loop import Ending, Turn, drive

TURN_SECONDS = 0.25  # a turn of the serial loop: how often it pauses to report progress and save
SCAN_SHARE = 100  # a progress report rescans the open branches after this many times the last scan's time

def dcmap_search(
    problem: Problem,
    alpha: float = 0.6,
    seed: int = 0,
    limits: Limits | None = None,
    on_improvement: OnImprovement | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    saver: Saver | None = None,
    resume: Resumption | None = None,
) -> SearchOutcome:
    """Run DCMAP serially on one connected problem (see the module docstring),
    checkpointing to ``saver``, or continuing from ``resume``."""
    try:
        search = SerialSearch(problem, alpha, seed, limits, on_improvement, resume, reports=on_progress is not None)
        return drive(search, saver, on_progress)
    finally:
        gc.unfreeze()  # each step froze what was alive (Explorer.step): give it back to the collector


class SerialSearch:
    """The serial search as a backend of the driver loop (:mod:`dcmap_dist.run.loop`): one
    :class:`Explorer` that owns the whole link table, run in turns of
    :data:`TURN_SECONDS`. Its stopwatch enforces the limits, the time limit less the
    final checkpoint's time."""

    def __init__(self, problem: Problem, alpha: float, seed: int, limits: Limits | None,
                 on_improvement: OnImprovement | None, resume: Resumption | None, reports: bool = True) -> None:
        self.problem = problem
        self.reports = reports  # progress figures are wanted (they scan the open branches now and then)
        self.on_improvement = on_improvement
        self.watch = watch = Stopwatch(limits or Limits())
        self.explorer = explorer = Explorer(problem, alpha, seed)
        explorer.watch = watch
        if resume is None:
            explorer.shard = LinkShard(owner=0)
            self.first = incumbent(problem, watch)
            explorer.improve(self.first.cost, self.first.trail)
            root = problem.root()
            explorer.active = explorer.offer(problem.link_key(root), root)
            self.owner = 1
        else:
            self.first = resume.first
            explorer.shard = LinkShard(owner=resume.next_owner)
            explorer.iterations = resume.iterations
            explorer.time_offset = resume.elapsed
            explorer.g_min = resume.g_min
            explorer.improvements = list(resume.trace)
            explorer.load(resume.state)
            self.owner = resume.next_owner + 1
        self.heard = len(explorer.improvements) if resume else 0
        self.open_bound = OpenBound(explorer)
        self.stop: StopReason | StepEnd | None = None

    def advance(self, saver: Saver | None) -> Turn:
        explorer, watch = self.explorer, self.watch
        if self.stop is None:
            if saver is not None:  # the final checkpoint is written inside the time limit
                watch.reserve = saver.reserve(write_size(explorer.open_count(), len(explorer.shard.entries)))
            stop = explorer.step(watch, until=time.perf_counter() + TURN_SECONDS)
            self.heard = announce(self.problem, explorer.improvements, self.heard, self.on_improvement,
                                  explorer.shard.lookup)
            if stop != StepEnd.BUDGET:
                self.stop = stop
        if self.stop is not None:
            return Turn(True)
        due = self.reports and watch.progress_due()
        return Turn(False, progress(explorer, watch, self.open_bound()) if due else None)

    def halt(self, reason: StopReason) -> None:
        self.stop = self.stop or reason

    def cut(self) -> tuple[list[SearchState], dict[str, Any]]:
        explorer = self.explorer
        return [explorer.export()], counters(explorer.iterations, explorer.seconds(), explorer.g_min,
                                             explorer.improvements, self.first, self.owner)

    def finish(self) -> Ending:
        explorer, shard = self.explorer, self.explorer.shard
        proven = self.stop == StepEnd.IDLE
        final_bound = explorer.least_bound()  # a scan of every open branch: once
        found = outcome(shard.entries.get(explorer.final_key), self.first, proven,
                        StopReason.FINISHED if proven else self.stop, explorer.iterations, explorer.improvements,
                        final_bound, self.watch.peak_memory_mb, shard.lookup, len(shard.entries))
        return Ending(found, progress(explorer, self.watch, final_bound))


class OpenBound:
    """The least bound over an explorer's open branches, for progress reports. A scan
    reads every open branch (once a second, it cost a measurable share of a long
    search), so it is redone only once SCAN_SHARE times the last scan's time has passed;
    in between the last value stands: a lower bound found earlier still bounds the
    optimum."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.value = -math.inf
        self.due = 0.0

    def __call__(self) -> float:
        start = time.perf_counter()
        if start >= self.due:
            self.value = self.explorer.least_bound()
            self.due = start + SCAN_SHARE * (time.perf_counter() - start)
        return self.value


def progress(explorer: Explorer, watch: Stopwatch, open_bound: float) -> dict[str, Any]:
    """The figures of a progress report: iterations, best cost, lower bound (the least
    of ``G_min`` and ``open_bound``, a lower bound over the open branches), open
    branches, rate, elapsed seconds, memory."""
    stats = watch.progress(explorer.iterations, explorer.g_min, explorer.open_count())
    stats["lower_bound"] = min(explorer.g_min, open_bound)
    return stats


