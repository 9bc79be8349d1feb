"""The anytime record of a solve: every improvement of the best known mapping (its
total cost and the whole mapping) and samples of the global lower bound.

A solve searches a network's weakly connected components one after another. Until
a component is searched, its all-singletons mapping stands in for it (DCMAP; the
baselines have no stand-in, so their totals start once every component has
reported); a finished component keeps its best mapping. An improvement in one
component is therefore an improvement of the total, recorded with the mapping made
of every component's standing mapping. The lower bound adds up the same way: the
bound of every finished component, the search's current bound of the one being
searched, and the root bound of those not yet searched.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .model.mappings import given_nodes, mapping_names
from .model.network import Network
from .search.audit import Audit
from .search.heuristics import all_singletons
from .search.problem import Problem, within

BOUND_SPACING = 1.05  # a bound sample is kept when its time is this many times the last one's


class Anytime:
    """The trace (``{"iteration", "seconds", "cost", "clusters"}`` per improvement, node
    names as strings) and the bound samples (``{"iteration", "seconds", "lower_bound"}``)
    of a solve of ``network`` over ``problems`` (its components) started at ``start``
    (``time.perf_counter``)."""

    def __init__(self, network: Network, problems: list[Problem], method: str, start: float) -> None:
        self.network = network
        self.start = start
        searched = method == "dcmap"
        self.costs = [all_singletons(p).cost if searched else math.nan for p in problems]
        self.clusters: list[list[list[str]] | None] = [
            sorted([x] for x in p.network.nodes) if searched else None for p in problems]
        self.bounds_of = [p.score(p.root()).bound for p in problems]
        self.nodes = [set(p.network.nodes) for p in problems]
        self.problems = problems
        # every reported mapping is checked first (search/audit.py)
        self.audits = [Audit(p.network, p.graph, p.model, p.scheme, p.topo) for p in problems]
        self.trace: list[dict[str, Any]] = []
        self.bounds: list[dict[str, float]] = []

    def restore(self, trace: list[dict[str, Any]], bounds: list[dict[str, float]],
                costs: dict[int, tuple[float, float]]) -> None:
        """Go on from a checkpoint: its trace and bound samples, and ``costs[k] =
        (standing cost, lower bound)`` of the components searched before it. Each
        component's standing mapping is its part of the last traced mapping."""
        self.trace, self.bounds = trace, bounds
        for k, (cost, bound) in costs.items():
            self.costs[k], self.bounds_of[k] = cost, bound
        if trace and "clusters" in trace[-1]:
            for k, nodes in enumerate(self.nodes):
                self.clusters[k] = [c for c in trace[-1]["clusters"] if c[0] in nodes]

    def listeners(self, k: int, offset: int, on_improvement: Callable | None, on_progress: Callable | None
                  ) -> tuple[Callable, Callable | None]:
        """The ``on_improvement`` and ``on_progress`` callbacks of component ``k``'s
        search (``offset``: the iterations of the components before it), which record
        and pass the totals on to the caller's."""
        problem = self.problems[k]

        def improved(cost: float, iteration: int, _seconds: float, clusters: tuple[int, ...] | None) -> None:
            if clusters is not None:
                self.audits[k].check(clusters, cost)
            self.costs[k] = cost
            self.clusters[k] = mapping_names(problem.topo, clusters) if clusters is not None else None
            total = sum(self.costs)
            if math.isnan(total) or (self.trace and within(self.trace[-1]["cost"], total)):
                return  # not every component has a mapping yet, or the total did not fall
            seconds = time.perf_counter() - self.start
            point: dict[str, Any] = {"iteration": offset + iteration, "seconds": seconds, "cost": total}
            if all(c is not None for c in self.clusters):
                point["clusters"] = sorted(c for part in self.clusters for c in part)
            self.trace.append(point)
            if on_improvement:
                mapping = point.get("clusters")
                on_improvement(total, offset + iteration, seconds,
                               None if mapping is None else given_nodes(self.network, mapping))

        def progressed(stats: dict[str, Any]) -> None:
            if "lower_bound" in stats:
                self._sample(offset + stats["iterations"], k, min(stats["lower_bound"], stats["best"]), False)
            if on_progress:
                on_progress(stats)

        return improved, progressed

    def finish(self, k: int, offset: int, best: float, lower_bound: float) -> None:
        """Component ``k`` ended at iteration ``offset`` of the solve: its best cost and bound."""
        self.costs[k] = best
        self._sample(offset, k, lower_bound, True)

    def _sample(self, iteration: int, k: int, bound: float, always: bool) -> None:
        """Keep a sample of the total bound, component ``k`` being at ``bound``, when
        ``always`` or when enough time has passed since the last one."""
        self.bounds_of[k] = bound
        seconds = time.perf_counter() - self.start
        if always or not self.bounds or seconds >= BOUND_SPACING * self.bounds[-1]["seconds"]:
            self.bounds.append({"iteration": iteration, "seconds": seconds, "lower_bound": sum(self.bounds_of)})
