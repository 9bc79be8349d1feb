"""Baselines for tests and comparison: breadth-first search and brute force."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from .cost import evaluate_mapping
from .engine import Branch, Problem, within
from .limits import Limits, SearchInterrupted, Stopwatch
from .mappings import enumerate_mappings
from .search import SearchOutcome


def bfs_search(
    problem: Problem,
    limits: Limits | None = None,
    on_improvement: Callable[[float, int, float], None] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> SearchOutcome:
    """The paper's breadth-first search over the same layers and proposals: every
    branch is expanded in first-in first-out order, nothing is linked or pruned."""
    watch = Stopwatch(limits or Limits())
    queue: deque[Branch] = deque([problem.root()])
    iterations = 0
    best = math.inf
    found: list[tuple[Any, float, int]] = []
    trace: list[tuple[int, float, float]] = []
    stop_reason = "finished"
    while queue:
        reason = watch.check(iterations)
        if reason:
            stop_reason = reason
            break
        if on_progress and watch.progress_due():
            on_progress(watch.progress(iterations, best, len(queue)))
        branch = queue.popleft()
        if branch.layer_done:
            if problem.is_complete(branch):
                if not within(best, branch.cost):
                    best = branch.cost
                    trace.append((iterations, watch.elapsed(), best))
                    if on_improvement:
                        on_improvement(best, iterations, watch.elapsed())
                    found = [f for f in found if within(f[1], best)]
                if within(branch.cost, best):
                    found.append((branch.trail, branch.cost, iterations))
            else:
                queue.append(branch.advanced())
            continue
        iterations += 1
        try:
            queue.extend(problem.expand(branch, problem.next_proposal(branch), watch=watch))
        except SearchInterrupted as stop:
            stop_reason = stop.args[0]
            break
    proven = stop_reason == "finished"
    lower = best if proven else min([best, *(b.bound for b in queue)])
    return SearchOutcome(best, found, proven, stop_reason, iterations, trace, watch.peak_memory_mb,
                         lower_bound=lower)


def brute_force(problem: Problem, limits: Limits | None = None) -> list[tuple[tuple[int, ...], float, int]]:
    """Every feasible mapping with its cost, by enumeration (small networks only).

    Returns ``(clusters, cost, index)`` triples; independent of the search's
    expansion: it enumerates set partitions into feasible clusters and evaluates
    each with :func:`cost.evaluate_mapping`. Raises TimeoutError past a limit.
    """
    watch = Stopwatch(limits or Limits())
    topo = problem.topo
    result = []
    for index, clusters in enumerate(enumerate_mappings(problem.network, problem.scheme), 1):
        if watch.check(index - 1):
            raise TimeoutError("brute force stopped by a limit before it enumerated every mapping")
        names = [topo.names(c) for c in clusters]
        cost = sum(c.cost for c in evaluate_mapping(problem.network, names, problem.model))
        result.append((clusters, cost, index))
    return result
