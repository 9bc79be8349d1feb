"""The baselines DCMAP is compared with: the paper's breadth-first search over the same
layers and proposals, and brute force (every feasible mapping enumerated and priced,
independently of the search's expansion; small networks only)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from ..cost.base import evaluate_mapping
from ..limits import Limits, SearchInterrupted, StopReason, Stopwatch
from ..model.mappings import enumerate_mappings
from ..model.network import Network
from ..model.topology import eta, scientific
from ..progress import Progress, Rescanned
from .branch import Branch
from .outcome import OnImprovement, SearchOutcome, announce
from .problem import Problem
from .state import Improvement
from .tolerance import within

__all__ = ["BRUTE_FORCE_LIMIT", "bfs_search", "brute_force", "brute_force_search", "mapping_bound"]

# brute force refuses a network with possibly more feasible mappings than this
# (a million evaluations take minutes; every network of up to 11 nodes passes)
BRUTE_FORCE_LIMIT = 10**6


def bfs_search(
    problem: Problem,
    limits: Limits | None = None,
    on_improvement: OnImprovement | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> SearchOutcome:
    """The paper's breadth-first search over the same layers and proposals: every
    branch is expanded in first-in first-out order, nothing is linked or pruned."""
    watch = Stopwatch(limits or Limits())
    queue: deque[Branch] = deque([problem.root()])
    iterations = 0
    best = math.inf
    found: list[tuple[Any, float, int]] = []
    trace: list[Improvement] = []
    stop_reason = StopReason.FINISHED
    open_bound = Rescanned(lambda: min((b.bound for b in queue), default=math.inf))

    def progress() -> Progress:
        return watch.progress(iterations, best, len(queue), min(best, open_bound()))

    while queue:
        reason = watch.check(iterations)
        if reason:
            stop_reason = reason
            break
        if on_progress and watch.progress_due():
            on_progress(progress())
        branch = queue.popleft()
        if branch.layer_done:
            if problem.is_complete(branch):
                if not within(best, branch.cost):
                    best = branch.cost
                    trace.append(Improvement(iterations, watch.elapsed(), best, branch.trail))
                    announce(problem, trace[-1:], on_improvement, lambda records: {})  # no records
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
    proven = stop_reason == StopReason.FINISHED
    lower = best if proven else min([best, *(b.bound for b in queue)])
    if on_progress:
        on_progress(watch.progress(iterations, best, len(queue), lower))
    return SearchOutcome(best, found, proven, stop_reason, iterations, trace, watch.peak_memory_mb,
                         lower_bound=lower)


def mapping_bound(network: Network, scheme: str) -> tuple[int, str]:
    """An upper bound on the number of feasible mappings of ``network``, and how it was
    counted: the least of Bell(n), the partitions of n nodes, and, generatively (SPEC
    section 2), 2^arcs for ``merge`` (a node joins any subset of its children's
    clusters) or the paper's eta for ``single`` (a node joins at most one)."""
    n = len(network.nodes)
    bell = _bell(n) if n <= 64 else None  # B(64) > 1e60: past it, only the other bound is worth counting
    if scheme == "single":
        other = (eta(network), "eta, the product of (children + 1) over the nodes with children")
    else:
        other = (2 ** len(network.edges), f"2^{len(network.edges)}: each node joins a subset of its children's clusters")
    return min(other, (bell, f"Bell({n}), the partitions of {n} nodes")) if bell is not None else other


def _bell(n: int) -> int:
    """The Bell number B(n), by the Bell triangle."""
    row = [1]
    for _ in range(n - 1):
        nxt = [row[-1]]
        for value in row:
            nxt.append(nxt[-1] + value)
        row = nxt
    return row[-1]


def brute_force(problem: Problem, limits: Limits | None = None, most: int | None = BRUTE_FORCE_LIMIT,
                on_progress: Callable[[Progress], None] | None = None) -> list[tuple[tuple[int, ...], float, int]]:
    """Every feasible mapping with its cost, by enumeration (small networks only).

    Returns ``(clusters, cost, index)`` triples; independent of the search's
    expansion: it enumerates set partitions into feasible clusters and evaluates
    each with :func:`cost.evaluate_mapping`. Raises TimeoutError past a limit, and a
    ValueError before it starts when the network may have more than ``most`` feasible
    mappings (:func:`mapping_bound`; None: no check). ``on_progress`` hears, about once
    a second, how many it has priced and the cheapest so far (no lower bound until all are).
    """
    if most is not None:
        bound, how = mapping_bound(problem.network, problem.scheme)
        if bound > most:
            raise ValueError(
                f"brute force would enumerate up to {scientific(bound)} mappings of {problem.network.name!r} "
                f"({how}), more than the {most:,} it is allowed: use --method dcmap, which is exact too"
            )
    watch = Stopwatch(limits or Limits())
    topo = problem.topo
    result = []
    best = math.inf
    for index, clusters in enumerate(enumerate_mappings(problem.network, problem.scheme), 1):
        if watch.check(index - 1):
            raise TimeoutError("brute force stopped by a limit before it enumerated every mapping")
        if on_progress and watch.progress_due():
            on_progress(watch.progress(index - 1, best, 0))
        names = [topo.names(c) for c in clusters]
        cost = sum(c.cost for c in evaluate_mapping(problem.network, names, problem.model))
        best = min(best, cost)
        result.append((clusters, cost, index))
    return result


def brute_force_search(problem: Problem, limits: Limits | None = None,
                       on_improvement: OnImprovement | None = None,
                       on_progress: Callable[[Progress], None] | None = None) -> SearchOutcome:
    """:func:`brute_force` as a search: its best mappings (cluster masks in place of
    trails), proven; ``on_improvement`` hears of the best one, ``on_progress`` of the
    enumeration and its end."""
    watch = Stopwatch(limits or Limits())
    found = brute_force(problem, limits, on_progress=on_progress)
    best = min(cost for _, cost, _ in found)
    if on_improvement:
        on_improvement(best, len(found), 0.0, next(c for c, cost, _ in found if within(cost, best)))
    if on_progress:
        on_progress(watch.progress(len(found), best, 0, best))
    keep = [(clusters, cost, index) for clusters, cost, index in found if within(cost, best)]
    return SearchOutcome(best, keep, True, StopReason.FINISHED, len(found), lower_bound=best)
