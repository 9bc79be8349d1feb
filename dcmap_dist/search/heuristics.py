"""Heuristics: the complete mappings a search starts from (the greedy dive, every node
its own cluster, the beam search of :mod:`.beam`, and the cheapest of them)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable

from ..limits import SearchInterrupted, Stopwatch
from ..model.topology import bits
from ..settings import FIRST_BUDGET
from .beam import beam_search, dive_from
from .branch import Branch
from .problem import Problem

__all__ = ["FIRST_BUDGET", "FIRST_SHARE", "all_singletons", "first_prices", "greedy_dive", "incumbent"]

FIRST_SHARE = 0.1  # the share of the time left that it may take, under a time limit


def all_singletons(problem: Problem, priced: Callable[[int], None] | None = None) -> Branch:
    """The complete mapping in which every node is its own cluster (always feasible);
    ``priced(node)`` hears each node priced."""
    topo = problem.topo
    messages: dict[int, Hashable] = {}  # each node's message as a singleton
    cost = 0.0
    for l in range(topo.l_max + 1):
        for i in bits(topo.layer_mask[l]):
            kids = tuple((1 << c, messages[c]) for c in bits(topo.children[i]))
            c, item = problem.cluster_layer_cost(1 << i, 1 << i, kids)
            messages[i] = item[1]
            cost += c
            if priced is not None:
                priced(i)
    return Branch(topo.l_max, -1, (), (), cost)


def greedy_dive(problem: Problem, watch: Stopwatch | None = None, breadth: int = 256) -> Branch:
    """A heuristic complete mapping: follow the cheapest child (by ``g_hat``) from the
    root, among the first ``breadth`` combinations of each step (a wide layer can have
    astronomically many). If a limit stops the dive, the mapping of all singletons."""
    try:
        return dive_from(problem, problem.root(), watch, breadth)[0]
    except SearchInterrupted:
        return all_singletons(problem)


def incumbent(problem: Problem, watch: Stopwatch, budget: int = FIRST_BUDGET) -> Branch:
    """The search's first complete mapping: the cheapest of the greedy dive, all
    singletons (both feasible, so their cost may prune) and, with a ``budget`` of
    expansions, the beam search from the root (:mod:`.beam`). The beam is as wide as the
    budget allows a beam as deep as the dive, and takes at most :data:`FIRST_SHARE` of the
    time left under a time limit; a limit of ``watch`` that stops it keeps the best found
    before."""
    try:
        dive, depth = dive_from(problem, problem.root(), watch)
    except SearchInterrupted:
        return all_singletons(problem)
    best = min(dive, all_singletons(problem), key=lambda b: b.cost)
    if budget <= 0:
        return best
    time_limit = watch.limits.time_limit
    seconds = None if time_limit is None else FIRST_SHARE * max(0.0, time_limit - watch.elapsed())
    try:
        return beam_search(problem, best, max(1, budget // (2 * max(1, depth))), budget, watch, seconds)[0]
    except SearchInterrupted:
        return best


def first_prices(problem: Problem, singletons: bool, watch: Stopwatch | None,
                 priced: Callable[[int], None] | None = None) -> tuple[float, float]:
    """What a solve knows of ``problem`` before its search: the cost of its all-singletons
    mapping (if ``singletons``; nan otherwise) and its root bound. A slow cost model's
    calls are followed by a check of ``watch``'s limits (SearchInterrupted), as in the
    search; ``priced(node)`` hears each node priced alone."""
    problem.watch = watch
    try:
        cost = all_singletons(problem, priced).cost if singletons else math.nan
        return cost, problem.score(problem.root()).bound
    finally:
        problem.watch = None
