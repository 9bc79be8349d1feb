"""A beam search for the search's first mapping (issue 57, "an early incumbent").

From the root, every branch of the beam is expanded once per step (its next proposal,
among the first ``breadth`` combinations); of the children, the ``width`` with the least
bound (cost plus the admissible lower bound, then cost) and distinct dominance keys
(equal keys mean equal futures, docs/search.md: one of them is enough) form the next
beam (a key is computed only for the children taken, in that order). A child that
completes the mapping lowers the best cost, and a child whose bound cannot beat it is
dropped. Once the budget of expansions (or of seconds) is spent, the
beam's first branch is completed by the greedy dive. Ranking by the bound, not by the
naive-cost estimate the greedy dive follows, is what finds good mappings: the estimate
counts every node still to place at its cost alone and so favours branches that merged
little (docs/search.md, "The first mapping").
"""

from __future__ import annotations

import time

from ..limits import Stopwatch
from .branch import Branch
from .problem import Problem
from .tolerance import within

__all__ = ["beam_search", "dive_from"]


def dive_from(problem: Problem, branch: Branch, watch: Stopwatch | None = None,
              breadth: int = 256) -> tuple[Branch, int]:
    """The greedy dive from ``branch``: follow the cheapest child (by ``g_hat``) among the
    first ``breadth`` combinations of each step, to a complete mapping; with the number
    of expansions it took. A limit of ``watch`` raises SearchInterrupted."""
    expansions = 0
    while not problem.is_complete(branch):
        if branch.layer_done:
            branch = branch.advanced()
        children = problem.expand(branch, problem.next_proposal(branch), watch=watch, most=breadth)
        expansions += 1
        branch = min(children, key=lambda b: b.estimate)
    return branch, expansions


def beam_search(problem: Problem, best: Branch, width: int, budget: int, watch: Stopwatch | None = None,
                seconds: float | None = None, breadth: int = 256) -> tuple[Branch, int]:
    """The cheapest complete mapping the beam finds (``best``, a complete mapping, if it
    finds none cheaper), with the number of expansions it took: about ``budget`` at most
    (the greedy completion of an unfinished beam adds one dive). The beam stops early
    when ``seconds`` have passed since the call. A limit of ``watch`` raises
    SearchInterrupted."""
    until = None if seconds is None else time.perf_counter() + seconds
    root = problem.root()
    beam = [] if problem.is_complete(root) else [root]  # one layer: the root is the only mapping
    expansions = 0
    while beam:
        if expansions >= budget or (until is not None and time.perf_counter() >= until):
            finished, used = dive_from(problem, beam[0], watch, breadth)
            return finished if not within(best.cost, finished.cost) else best, expansions + used
        children = []
        for branch in beam:
            if branch.layer_done:
                branch = branch.advanced()
            for child in problem.expand(branch, problem.next_proposal(branch), best.cost, watch, breadth):
                if not problem.is_complete(child):
                    children.append(child)
                elif not within(best.cost, child.cost):
                    best = child
            expansions += 1
        beam = []
        keys = set()  # the dominance keys in the beam: one branch each (the least bound's)
        for child in sorted(children, key=lambda b: (b.bound, b.cost)):
            if len(beam) == width or within(best.cost, child.bound):
                break
            key = problem.link_key(child)
            if key not in keys:
                keys.add(key)
                beam.append(child)
    return best, expansions
