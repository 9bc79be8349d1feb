"""DCMAP (the paper's section 4) with the two corrections of SPEC section 5, run
serially: one :class:`explorer.Explorer` that owns the whole link table.

The loop itself (activation with ``alpha``, pruning of dominated branches and of
branches that cannot beat ``G_min``, expansion, linking at completed layers) is in
:mod:`dcmap_dist.explorer`, shared with the distributed search; the link table and
the tied histories that rebuild every optimal mapping are in
:mod:`dcmap_dist.linking`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .engine import Branch, Problem, within
from .explorer import Explorer
from .limits import Limits, SearchInterrupted, Stopwatch
from .linking import History, LinkShard, gather_histories

STEP_SECONDS = 0.25  # how often the serial loop pauses to report progress


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
    trace: list[tuple[int, float, float]] = field(default_factory=list)
    peak_memory_mb: float = 0.0
    link_records: int = 0
    lower_bound: float = 0.0  # proven: no mapping costs less (the best cost once proven)
    histories: dict[int, list[History]] = field(default_factory=dict)


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


def dcmap_search(
    problem: Problem,
    alpha: float = 0.6,
    seed: int = 0,
    limits: Limits | None = None,
    on_improvement: Callable[[float, int, float], None] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> SearchOutcome:
    """Run DCMAP serially on one connected problem (see the module docstring)."""
    explorer = Explorer(problem, alpha, seed, LinkShard(owner=0))
    watch = Stopwatch(limits or Limits())
    first = incumbent(problem, watch)
    explorer.watch = watch
    explorer.improve(first.cost)
    heard = 0

    def report() -> None:
        nonlocal heard
        if on_improvement:
            for iteration, seconds, cost in explorer.improvements[heard:]:
                on_improvement(cost, iteration, seconds)
        heard = len(explorer.improvements)

    root = problem.root()
    explorer.active = explorer.offer(problem.link_key(root), root)
    while True:
        stop = explorer.step(watch, until=time.perf_counter() + STEP_SECONDS)
        report()
        if stop != "budget":
            break
        if on_progress and watch.progress_due():
            on_progress(watch.progress(explorer.iterations, explorer.g_min, explorer.open_count()))
    proven = stop == "idle"
    if on_progress:
        on_progress(watch.progress(explorer.iterations, explorer.g_min, 0 if proven else explorer.open_count()))
    return outcome(problem, explorer.shard, first, proven, "finished" if proven else stop,
                   explorer.iterations, explorer.improvements, explorer.least_bound(), watch.peak_memory_mb,
                   lambda records: explorer.shard.lookup(records))


def outcome(problem: Problem, final_shard: LinkShard | None, first: Branch, proven: bool, stop_reason: str,
            iterations: int, improvements: list[tuple[int, float, float]], open_bound: float,
            peak_memory_mb: float, fetch: Callable, link_records: int | None = None) -> SearchOutcome:
    """The outcome of a DCMAP search from its final link record (held by
    ``final_shard``), its incumbent ``first`` and the least bound of its open branches."""
    trails: list[tuple[Any, float, int]] = []
    final = final_shard.entries.get((problem.topo.l_max, (), ())) if final_shard is not None else None
    if final is not None:
        trails.append(((final.record,), final.best, 0))
    # once proven, every optimal mapping (the incumbent's too, if optimal) is in the final record
    if final is None or (not proven and within(first.cost, final.best)):
        trails.append((first.trail, first.cost, 0))
    best = min(cost for _, cost, _ in trails)
    lower_bound = best if proven else min(best, open_bound)
    histories = gather_histories([t for t, _, _ in trails], fetch)
    trace = [(iteration, seconds, cost) for iteration, seconds, cost in improvements]
    records = link_records if link_records is not None else len(final_shard.entries) if final_shard else 0
    return SearchOutcome(best, trails, proven, stop_reason, iterations, trace, peak_memory_mb,
                         records, lower_bound, histories)
