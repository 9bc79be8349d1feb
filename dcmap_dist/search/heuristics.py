"""Heuristics and baselines: the greedy dive that gives a search its first mapping, and
breadth-first search and brute force (for tests and comparison)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from ..cost.base import evaluate_mapping
from ..limits import Limits, SearchInterrupted, StopReason, Stopwatch
from ..model.mappings import enumerate_mappings
from ..model.network import Network
from ..model.topology import bits, eta, scientific
from .linking import Improvement
from .outcome import OnImprovement, SearchOutcome, announce
from .branch import Branch
from .problem import Problem, within

# brute force refuses a network with possibly more feasible mappings than this
# (a million evaluations take minutes; every network of up to 11 nodes passes)
BRUTE_FORCE_LIMIT = 10**6


def bfs_search(
    problem: Problem,
    limits: Limits | None = None,
    on_improvement: OnImprovement | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
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
                    trace.append((iterations, watch.elapsed(), best, branch.trail))
                    announce(problem, trace, len(trace) - 1, on_improvement, lambda records: {})  # no records
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


def brute_force(problem: Problem, limits: Limits | None = None,
                most: int | None = BRUTE_FORCE_LIMIT) -> list[tuple[tuple[int, ...], float, int]]:
    """Every feasible mapping with its cost, by enumeration (small networks only).

    Returns ``(clusters, cost, index)`` triples; independent of the search's
    expansion: it enumerates set partitions into feasible clusters and evaluates
    each with :func:`cost.evaluate_mapping`. Raises TimeoutError past a limit, and a
    ValueError before it starts when the network may have more than ``most`` feasible
    mappings (:func:`mapping_bound`; None: no check).
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
    for index, clusters in enumerate(enumerate_mappings(problem.network, problem.scheme), 1):
        if watch.check(index - 1):
            raise TimeoutError("brute force stopped by a limit before it enumerated every mapping")
        names = [topo.names(c) for c in clusters]
        cost = sum(c.cost for c in evaluate_mapping(problem.network, names, problem.model))
        result.append((clusters, cost, index))
    return result


def all_singletons(problem: Problem) -> Branch:
    """The complete mapping in which every node is its own cluster (always feasible)."""
    topo = problem.topo
    messages: dict[int, Hashable] = {}  # each node's message as a singleton
    cost = 0.0
    for l in range(topo.l_max + 1):
        for i in bits(topo.layer_mask[l]):
            kids = tuple((1 << c, messages[c]) for c in bits(topo.children[i]))
            c, item = problem.cluster_layer_cost(1 << i, 1 << i, kids)
            messages[i] = item[1]
            cost += c
    return Branch(topo.l_max, -1, (), (), cost)


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
        return all_singletons(problem)


def incumbent(problem: Problem, watch: Stopwatch) -> Branch:
    """The search's first complete mapping: the cheaper of the greedy dive and all
    singletons (both feasible, so their cost may prune)."""
    return min(greedy_dive(problem, watch), all_singletons(problem), key=lambda b: b.cost)
