"""DCMAP (the paper's section 4) with the two corrections of SPEC section 5, run
serially: one :class:`explorer.Explorer` that owns the whole link table.

The loop itself (activation with ``alpha``, pruning of dominated branches and of
branches that cannot beat ``G_min``, expansion, linking at completed layers) is in
:mod:`dcmap_dist.search.explorer`, shared with the distributed search; the link table and
the tied histories that rebuild every optimal mapping are in
:mod:`dcmap_dist.search.linking`.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from typing import Any

from ..search.explorer import Explorer
from ..search.heuristics import incumbent
from ..search.limits import Limits, StepEnd, StopReason, Stopwatch
from ..search.linking import LinkShard
from ..search.outcome import OnImprovement, Saver, SearchOutcome, announce, outcome
from ..search.problem import Problem
from ..search.state import Resumption, counters, write_size

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
    watch = Stopwatch(limits or Limits())
    explorer = Explorer(problem, alpha, seed)
    explorer.watch = watch
    if resume is None:
        explorer.shard = LinkShard(owner=0)
        first = incumbent(problem, watch)
        explorer.improve(first.cost, first.trail)
        root = problem.root()
        explorer.active = explorer.offer(problem.link_key(root), root)
        owner = 1
    else:
        first = resume.first
        state = resume.state
        explorer.shard = LinkShard(owner=resume.next_owner)
        explorer.iterations = resume.iterations
        explorer.time_offset = resume.elapsed
        explorer.g_min = resume.g_min
        explorer.improvements = list(resume.trace)
        explorer.load(state)
        owner = resume.next_owner + 1
    heard = len(explorer.improvements) if resume else 0
    open_bound = OpenBound(explorer)

    def report() -> None:
        nonlocal heard
        heard = announce(problem, explorer.improvements, heard, on_improvement, explorer.shard.lookup)

    def save() -> None:
        saver.save([explorer.export()], counters(explorer.iterations, explorer.seconds(), explorer.g_min,
                                     explorer.improvements, first, owner))

    try:
        while True:
            if saver is not None:  # the final checkpoint is written inside the time limit
                watch.reserve = saver.reserve(write_size(explorer.open_count(), len(explorer.shard.entries)))
            stop = explorer.step(watch, until=time.perf_counter() + TURN_SECONDS)
            report()
            if stop != StepEnd.BUDGET:
                break
            if on_progress and watch.progress_due():
                on_progress(progress(explorer, watch, open_bound()))
            if saver is not None and saver.due():
                save()
    finally:
        gc.unfreeze()  # each step froze what was alive (Explorer.step): give it back to the collector
    proven = stop == StepEnd.IDLE
    if saver is not None and not proven:
        save()
    final_bound = explorer.least_bound()  # a scan of every open branch: once
    if on_progress:
        on_progress(progress(explorer, watch, final_bound))
    shard = explorer.shard
    return outcome(shard.entries.get(explorer.final_key), first, proven, StopReason.FINISHED if proven else stop,
                   explorer.iterations, explorer.improvements, final_bound, watch.peak_memory_mb,
                   shard.lookup, len(shard.entries))


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


