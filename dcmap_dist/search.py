"""DCMAP (the paper's section 4) with the two corrections of SPEC section 5, run
serially: one :class:`explorer.Explorer` that owns the whole link table.

The loop itself (activation with ``alpha``, pruning of dominated branches and of
branches that cannot beat ``G_min``, expansion, linking at completed layers) is in
:mod:`dcmap_dist.explorer`, shared with the distributed search; the link table and
the tied histories that rebuild every optimal mapping are in
:mod:`dcmap_dist.linking`.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .engine import Branch, Problem, joins_to_clusters, within
from .explorer import Explorer
from .limits import Limits, SearchInterrupted, Stopwatch
from .state import Resumption, SearchState, counters, write_size
from .linking import Entry, History, Improvement, LinkShard, MissingRecord, gather_histories, trail_path

STEP_SECONDS = 0.25  # how often the serial loop pauses to report progress
SCAN_SHARE = 100  # a progress report rescans the open branches after this many times the last scan's time

# on_improvement(cost, iteration, seconds, clusters): clusters are the improved
# mapping's cluster masks (None for an improvement saved without its mapping)
OnImprovement = Callable[[float, int, float, "tuple[int, ...] | None"], None]


@dataclass
class SearchOutcome:
    """What a search hands back: the best histories, the counters and the trace.

    ``trails`` are ``(trail, cost, iteration found)`` (for brute force, cluster masks
    instead of a trail); ``histories`` holds every link record they reach."""

    best_cost: float
    trails: list[tuple[Any, float, int]]
    proven: bool
    stop_reason: str
    iterations: int
    trace: list[Improvement] = field(default_factory=list)
    peak_memory_mb: float = 0.0
    link_records: int = 0
    lower_bound: float = 0.0  # proven: no mapping costs less (the best cost once proven)
    histories: dict[int, list[History]] = field(default_factory=dict)
    statistics: dict[str, Any] = field(default_factory=dict)  # the distributed search's figures
    # the search's first mapping (trail, cost): once proven it is also among ``trails``'
    # mappings if optimal, but it was known from iteration 0
    incumbent: tuple[tuple, float] | None = None


def greedy_dive(problem: Problem, watch: Stopwatch | None = None, breadth: int = 256) -> Branch:
    """A heuristic complete mapping: follow the cheapest child (by ``g_hat``) from the
    root, among the first ``breadth`` combinations of each step (a wide layer can have
    astronomically many). If a limit stops the dive, the mapping of all singletons."""
    try:
        branch = problem.root()
        while not problem.is_complete(branch):
            if branch.layer_done:
                branch = branch.advanced()
            children = problem.expand(branch, problem.next_proposal(branch), watch=watch, most=breadth)
            branch = min(children, key=lambda b: b.estimate)
        return branch
    except SearchInterrupted:
        return problem.singletons()



def incumbent(problem: Problem, watch: Stopwatch) -> Branch:
    """The search's first complete mapping: the cheaper of the greedy dive and all
    singletons (both feasible, so their cost may prune)."""
    return min(greedy_dive(problem, watch), problem.singletons(), key=lambda b: b.cost)


class Saver(Protocol):
    """Where a search sends its checkpoints (see :class:`checkpointing.Checkpointer`)."""

    def due(self) -> bool:
        """True when the checkpoint interval has passed."""

    def reserve(self, rows: int) -> float:
        """Seconds that writing a checkpoint of about ``rows`` rows would take."""

    def save(self, parts: Iterable[SearchState], counters: dict[str, Any]) -> None:
        """Write a checkpoint of the component being searched."""


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
        explorer.shard.entries, explorer.shard.histories = state.entries, state.histories
        explorer.dominated = state.dominated
        explorer.iterations = resume.iterations
        explorer.time_offset = resume.elapsed
        explorer.g_min = resume.g_min
        explorer.improvements = list(resume.trace)
        explorer.adopt(state.branches)
        explorer.receive(state.arrivals)
        owner = resume.next_owner + 1
    heard = len(explorer.improvements) if resume else 0
    open_bound = OpenBound(explorer)

    def report() -> None:
        nonlocal heard
        heard = announce(problem, explorer.improvements, heard, on_improvement, explorer.shard.lookup)

    def save() -> None:
        state = SearchState(explorer.open_branches(), [], explorer.shard.entries, explorer.shard.histories,
                            explorer.dominated)
        saver.save([state], counters(explorer.iterations, explorer.seconds(), explorer.g_min,
                                     explorer.improvements, first, owner))

    try:
        while True:
            if saver is not None:  # the final checkpoint is written inside the time limit
                watch.reserve = saver.reserve(write_size(explorer.open_count(), len(explorer.shard.entries)))
            stop = explorer.step(watch, until=time.perf_counter() + STEP_SECONDS)
            report()
            if stop != "budget":
                break
            if on_progress and watch.progress_due():
                on_progress(progress(explorer, watch, open_bound()))
            if saver is not None and saver.due():
                save()
    finally:
        gc.unfreeze()  # each step froze what was alive (Explorer.step): give it back to the collector
    proven = stop == "idle"
    if saver is not None and not proven:
        save()
    final_bound = explorer.least_bound()  # a scan of every open branch: once
    if on_progress:
        on_progress(progress(explorer, watch, final_bound))
    shard = explorer.shard
    return outcome(shard.entries.get(explorer.final_key), first, proven, "finished" if proven else stop,
                   explorer.iterations, explorer.improvements, final_bound, watch.peak_memory_mb,
                   shard.lookup, len(shard.entries))


def announce(problem: Problem, improvements: list[Improvement], heard: int,
             on_improvement: OnImprovement | None, fetch: Callable[[set[int]], dict[int, list[History]]],
             lost: bool = False) -> int:
    """Tell ``on_improvement`` of every improvement after the first ``heard``, with its
    mapping (rebuilt from its trail: ``fetch`` finds link records' histories); the
    number heard. ``lost``: records may have been lost with a worker (a distributed
    search), and an improvement that reaches one is told without its mapping."""
    if on_improvement:
        for iteration, seconds, cost, trail in improvements[heard:]:
            on_improvement(cost, iteration, seconds, improvement_clusters(problem, trail, fetch, lost))
    return len(improvements)


def improvement_clusters(problem: Problem, trail: tuple | None,
                         fetch: Callable[[set[int]], dict[int, list[History]]],
                         lost: bool = False) -> tuple[int, ...] | None:
    """The cluster masks of the mapping an improvement's trail reached (None: no trail,
    or, when ``lost`` allows it, a record of it was lost with a worker of a distributed
    search; otherwise a missing record is an error)."""
    if trail is None:
        return None
    try:
        return joins_to_clusters(problem.topo, trail_path(trail, fetch))
    except MissingRecord:
        if not lost:
            raise
        return None


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


def outcome(final: Entry | None, first: Branch, proven: bool, stop_reason: str, iterations: int,
            improvements: list[Improvement], open_bound: float, peak_memory_mb: float,
            fetch: Callable[[set[int]], dict[int, list[History]]], link_records: int,
            statistics: dict[str, Any] | None = None) -> SearchOutcome:
    """The outcome of a DCMAP search from its final link table entry, its incumbent
    ``first`` and the least bound of its open branches; ``fetch`` finds histories."""
    trails: list[tuple[Any, float, int]] = []
    if final is not None:
        trails.append(((final.record,), final.best, 0))
    # once proven, every optimal mapping (the incumbent's too, if optimal) is in the final record
    if final is None or (not proven and within(first.cost, final.best)):
        trails.append((first.trail, first.cost, 0))
    best = min(cost for _, cost, _ in trails)
    lower_bound = best if proven else min(best, open_bound)
    histories = gather_histories([t for t, _, _ in trails], fetch)
    return SearchOutcome(best, trails, proven, stop_reason, iterations, list(improvements), peak_memory_mb,
                         link_records, lower_bound, histories, statistics or {}, (first.trail, first.cost))
