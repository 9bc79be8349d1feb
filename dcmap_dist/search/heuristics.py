"""Heuristics: the complete mappings a search starts from (the greedy dive, every node
its own cluster, and the cheaper of the two)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable

from ..limits import SearchInterrupted, Stopwatch
from ..model.topology import bits
from .branch import Branch
from .problem import Problem

__all__ = ["all_singletons", "first_prices", "greedy_dive", "incumbent"]


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
