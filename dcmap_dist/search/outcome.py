"""What a search hands back (:class:`SearchOutcome`, made by :func:`outcome` from the
final link table entry) and how it tells of improvements (:func:`announce`): shared by
the serial and Ray drivers, the baselines and the checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..limits import StopReason
from .branch import Branch
from .histories import Histories, MissingRecord, gather_histories, trail_path
from .linking import Entry
from .problem import Problem, joins_to_clusters
from .state import Improvement
from .tolerance import within

__all__ = ["OnImprovement", "SearchOutcome", "announce", "improvement_clusters", "outcome"]

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
    stop_reason: StopReason
    iterations: int
    trace: list[Improvement] = field(default_factory=list)
    peak_memory_mb: float = 0.0
    link_records: int = 0
    lower_bound: float = 0.0  # proven: no mapping costs less (the best cost once proven)
    histories: dict[int, Histories] = field(default_factory=dict)
    statistics: dict[str, Any] = field(default_factory=dict)  # the distributed search's figures
    # the search's first mapping (trail, cost): once proven it is also among ``trails``'
    # mappings if optimal, but it was known from iteration 0
    incumbent: tuple[tuple, float] | None = None
    # a search by contours: each contour's value and expansions, in order (the last is the
    # one it ended in; run/contours.py); None for the ordinary search
    contours: list[tuple[float, int]] | None = None


def announce(problem: Problem, improvements: list[Improvement], on_improvement: OnImprovement | None,
             fetch: Callable[[set[int]], dict[int, Histories]], lost: bool = False) -> None:
    """Tell ``on_improvement`` of ``improvements``, each with its mapping (rebuilt from its
    trail: ``fetch`` finds link records' histories). ``lost``: records may have been lost
    with a worker (a distributed search), and an improvement that reaches one is told
    without its mapping."""
    if on_improvement:
        for found in improvements:
            on_improvement(found.cost, found.iteration, found.seconds,
                           improvement_clusters(problem, found.trail, fetch, lost))


def improvement_clusters(problem: Problem, trail: tuple | None,
                         fetch: Callable[[set[int]], dict[int, Histories]],
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


def outcome(final: Entry | None, first: Branch, proven: bool, stop_reason: StopReason, iterations: int,
            improvements: list[Improvement], open_bound: float, peak_memory_mb: float,
            fetch: Callable[[set[int]], dict[int, Histories]], link_records: int,
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
