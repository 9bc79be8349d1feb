"""DCMAP (the paper's section 4) with the two corrections of SPEC section 5.

The loop: pop the active branch's proposal, or activate a queued branch (the
cheapest ``g_hat`` with probability ``alpha``, else one at the lowest layer);
prune it if it is dominated by a linked branch or cannot beat ``G_min``; expand
it; link every child that completes a layer. The first (cheapest) child stays
active, the others wait in the queue.

Linking: branches that complete layer ``l`` with the same :meth:`Problem.link_key`
have identical futures. The link table keeps, per key, the best cost and every
tied history; only the first branch of a key goes on. A later, cheaper arrival
marks the old record dominated, and branches that went through it are pruned
when popped. Ties are kept as alternative histories, so every optimal mapping is
rebuilt at the end (:func:`engine.trail_joins`), each partition once.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .engine import Branch, Problem, within
from .limits import Limits, SearchInterrupted, Stopwatch


@dataclass(slots=True)
class LinkRecord:
    """One entry of the link table: the best cost of a key and its tied histories."""

    best: float
    prefixes: list[tuple[Any, int]]
    dominated: bool = False


@dataclass
class SearchOutcome:
    """What a search hands back: the best histories, the counters and the trace."""

    best_cost: float
    trails: list[tuple[Any, float, int]]  # (trail, cost, iteration found)
    proven: bool
    stop_reason: str
    iterations: int
    trace: list[tuple[int, float, float]] = field(default_factory=list)
    peak_memory_mb: float = 0.0
    link_records: int = 0
    lower_bound: float = 0.0  # proven: no mapping costs less (the best cost once proven)


def greedy_dive(problem: Problem, watch: Stopwatch | None = None, breadth: int = 256) -> Branch:
    """A heuristic complete mapping: follow the cheapest child (by ``g_hat``) from the
    root, among the first ``breadth`` combinations of each step (a wide layer can have
    astronomically many). If a limit stops the dive, the mapping of all singletons."""
    try:
        branch = problem.root()
        while not problem.is_complete(branch):
            if branch.layer_done:
                branch = problem.advance(branch)
            children = problem.expand(branch, problem.next_proposal(branch), watch=watch, most=breadth)
            branch = min(children, key=lambda b: b.estimate)
        return branch
    except SearchInterrupted:
        return problem.singletons()


class _Queue:
    """Queued branches, reachable both by ``g_hat`` and by (layer, ``g_hat``)."""

    def __init__(self) -> None:
        self.by_cost: list[tuple[float, int, Branch]] = []
        self.by_layer: list[tuple[int, float, int, Branch]] = []
        self.size = 0
        self._seq = 0

    def push(self, branch: Branch) -> None:
        self._seq += 1
        branch.queued = True
        heapq.heappush(self.by_cost, (branch.estimate, self._seq, branch))
        heapq.heappush(self.by_layer, (branch.layer, branch.estimate, self._seq, branch))
        self.size += 1

    def least_bound(self) -> float:
        """The smallest ``bound`` among queued branches (inf if none)."""
        return min((entry[-1].bound for entry in self.by_cost if entry[-1].queued), default=math.inf)

    def pop(self, cheapest: bool) -> Branch | None:
        heap = self.by_cost if cheapest else self.by_layer
        while heap:
            branch = heapq.heappop(heap)[-1]
            if branch.queued:
                branch.queued = False
                self.size -= 1
                return branch
        return None


def dcmap_search(
    problem: Problem,
    alpha: float = 0.6,
    seed: int = 0,
    limits: Limits | None = None,
    on_improvement: Callable[[float, int, float], None] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> SearchOutcome:
    """Run DCMAP on one connected problem; see the module docstring."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    limits = limits or Limits()
    watch = Stopwatch(limits)
    rng = random.Random(seed)
    table: dict[tuple, LinkRecord] = {}
    queue = _Queue()
    iterations = 0
    trace: list[tuple[int, float, float]] = []

    # two feasible mappings to start from: the greedy dive, and all singletons
    incumbent = min(greedy_dive(problem, watch), problem.singletons(), key=lambda b: b.cost)
    g_min = incumbent.cost
    trace.append((0, watch.elapsed(), g_min))
    if on_improvement:
        on_improvement(g_min, 0, watch.elapsed())
    final_key = (problem.topo.l_max, (), ())

    def settle(branch: Branch) -> Branch | None:
        """Link a branch that completed a layer; return it advanced, or None if it stops."""
        nonlocal g_min
        key = problem.link_key(branch)
        record = table.get(key)
        if record is not None:
            if within(record.best, branch.cost):  # not cheaper: a tie is kept, then it stops
                if within(branch.cost, record.best):
                    record.prefixes.append((branch.trail, iterations))
                    record.best = min(record.best, branch.cost)
                return None
            record.dominated = True
        record = table[key] = LinkRecord(branch.cost, [(branch.trail, iterations)])
        if key == final_key:
            if not within(g_min, branch.cost):
                g_min = branch.cost
                trace.append((iterations, watch.elapsed(), g_min))
                if on_improvement:
                    on_improvement(g_min, iterations, watch.elapsed())
            return None
        advanced = problem.advance(branch)
        advanced.trail = record
        advanced.links = branch.links + (record,)
        return advanced

    active = settle(problem.root())
    stop_reason = "finished"
    while True:
        reason = watch.check(iterations)
        if reason:
            stop_reason = reason
            break
        if on_progress and watch.progress_due():
            on_progress(watch.progress(iterations, g_min, queue.size + (active is not None)))
        if active is not None:
            branch, active = active, None
        else:
            branch = queue.pop(rng.random() < alpha)
            if branch is None:
                break
        if any(record.dominated for record in branch.links) or not within(branch.bound, g_min):
            continue
        iterations += 1
        try:
            children = problem.expand(branch, problem.next_proposal(branch), g_min, watch)
        except SearchInterrupted as stop:
            stop_reason = stop.args[0]
            queue.push(branch)  # not expanded: it still stands for its mappings
            break
        survivors = []
        for child in children:
            if child.layer_done:
                child = settle(child)
            if child is not None:
                survivors.append(child)
        survivors.sort(key=lambda b: b.estimate)
        if survivors:
            active = survivors[0]
            for child in survivors[1:]:
                queue.push(child)

    proven = stop_reason == "finished"
    # every mapping still possible lies below an open branch (or was pruned above g_min)
    open_bound = min(queue.least_bound(), active.bound if active is not None else math.inf)
    trails: list[tuple[Any, float, int]] = []
    final = table.get(final_key)
    if final is not None:
        trails.append((final, final.best, 0))
    # once proven, every optimal mapping (the dive's too, if optimal) is in the final record
    if final is None or (not proven and within(incumbent.cost, final.best)):
        trails.append((incumbent.trail, incumbent.cost, 0))
    best = min(cost for _, cost, _ in trails)
    if on_progress:
        on_progress(watch.progress(iterations, g_min, 0 if proven else queue.size))
    lower_bound = best if proven else min(best, open_bound)
    return SearchOutcome(best, trails, proven, stop_reason, iterations, trace,
                         watch.peak_memory_mb, len(table), lower_bound)

