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
from dataclasses import replace
from typing import Any

from .limits import COST_CALL, SearchInterrupted, StopReason, Stopwatch, memory_mb
from .model.mappings import given_nodes, mapping_names
from .model.network import Network
from .progress import Progress
from .search.audit import Audit
from .search.heuristics import first_prices
from .search.problem import Problem
from .search.tolerance import within

__all__ = ["Anytime"]

BOUND_SPACING = 1.05  # a bound sample is kept when its time is this many times the last one's


class Anytime:
    """The trace (``{"iteration", "seconds", "cost", "clusters"}`` per improvement, node
    names as strings) and the bound samples (``{"iteration", "seconds", "lower_bound"}``)
    of a solve of ``network`` over ``problems`` (its components) started at ``start``
    (``time.perf_counter``)."""

    def __init__(self, network: Network, problems: list[Problem], method: str, start: float,
                 watch: Stopwatch | None = None) -> None:
        self.network = network
        self.start = start
        searched = method == "dcmap"
        self.costs = [math.nan] * len(problems)
        self.clusters: list[list[list[str]] | None] = [
            sorted([x] for x in p.network.nodes) if searched else None for p in problems]
        self.bounds_of = [0.0] * len(problems)
        self.stopped: StopReason | None = None  # a limit reached while pricing (see _price)
        self.doing: str | None = None  # and how far the pricing was then
        self.iterations = 0  # of the components searched so far (see finish)
        self._price(problems, searched, watch)
        self.nodes = [set(p.network.nodes) for p in problems]
        self.problems = problems
        # every reported mapping is checked first (search/audit.py)
        self.audits = [Audit(p.network, p.graph, p.model, p.scheme, p.topo, p.slow_answers) for p in problems]
        self.trace: list[dict[str, Any]] = []
        self.bounds: list[dict[str, float]] = []

    def _price(self, problems: list[Problem], searched: bool, watch: Stopwatch | None) -> None:
        """Before any search, price each component's all-singletons mapping (DCMAP's stand-in)
        and its root bound: one call of the cost model per node at least. A slow model's
        calls are followed by a check of ``watch``'s limits, as in the search: a limit
        reached stops the pricing (:attr:`stopped`), what is priced is kept, and
        :data:`COST_CALL` tells a signal's message how far the pricing is."""
        nodes = sum(len(p.network.nodes) for p in problems)
        done = 0

        def priced(_node: int) -> None:
            nonlocal done
            done += 1
            COST_CALL.doing = f"pricing each node as its own cluster before the search ({done} of {nodes} priced)"

        try:
            for k, problem in enumerate(problems):
                self.costs[k], self.bounds_of[k] = first_prices(problem, searched, watch, priced)
        except SearchInterrupted as stop:
            self.stopped = StopReason(stop.args[0])
            self.doing = COST_CALL.doing or "pricing the leaves before the search"
        finally:
            COST_CALL.doing = None

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

    def listeners(self, k: int, offset: int, on_improvement: Callable | None,
                  on_progress: Callable[[Progress], None] | None, searched_before: float = 0.0
                  ) -> tuple[Callable, Callable[[Progress], None]]:
        """The ``on_improvement`` and ``on_progress`` callbacks of component ``k``'s
        search (``offset``: the iterations of the components before it), which record
        and pass the totals on to the caller's. An improvement is timed by the search's
        own clock (its seconds, ``searched_before`` of them before a resumption), read
        on the solve's: a search on Ray workers is heard of a report later."""
        problem = self.problems[k]
        base = time.perf_counter() - self.start - searched_before  # the solve's seconds at the search's 0

        def improved(cost: float, iteration: int, searched: float, clusters: tuple[int, ...] | None) -> None:
            if clusters is not None:
                self.audits[k].check(clusters, cost)
            self.costs[k] = cost
            self.clusters[k] = mapping_names(problem.topo, clusters) if clusters is not None else None
            total = sum(self.costs)
            if math.isnan(total) or (self.trace and within(self.trace[-1]["cost"], total)):
                return  # not every component has a mapping yet, or the total did not fall
            seconds = min(time.perf_counter() - self.start, max(0.0, base + searched))
            point: dict[str, Any] = {"iteration": offset + iteration, "seconds": seconds, "cost": total}
            if all(c is not None for c in self.clusters):
                point["clusters"] = sorted(c for part in self.clusters for c in part)
            self.trace.append(point)
            if on_improvement:
                mapping = point.get("clusters")
                on_improvement(total, offset + iteration, seconds,
                               None if mapping is None else given_nodes(self.network, mapping))

        def progressed(progress: Progress) -> None:
            if progress.lower_bound is not None:
                self._sample(offset + progress.iterations, k, min(progress.lower_bound, progress.best_cost), False)
            if on_progress:
                on_progress(self._whole(k, offset, progress))

        return improved, progressed

    def _whole(self, k: int, offset: int, progress: Progress) -> Progress:
        """Component ``k``'s progress (``offset``: the iterations before it) as the whole
        solve's: its iterations and seconds, the best total known, the total bound."""
        part = progress.best_cost if math.isnan(self.costs[k]) else min(self.costs[k], progress.best_cost)
        best = sum(self.costs[:k]) + part + sum(self.costs[k + 1:])
        iterations = offset + progress.iterations
        elapsed = time.perf_counter() - self.start
        return replace(progress, iterations=iterations, best_cost=math.inf if math.isnan(best) else best,
                       lower_bound=None if progress.lower_bound is None else sum(self.bounds_of),
                       elapsed_seconds=elapsed, rate=iterations / elapsed if elapsed > 0 else 0.0, component=k,
                       components=len(self.problems))

    def finish(self, k: int, offset: int, best: float, lower_bound: float) -> None:
        """Component ``k`` ended at iteration ``offset`` of the solve: its best cost and bound."""
        self.costs[k] = best
        self.iterations = offset
        self._sample(offset, k, lower_bound, True)

    def listing_progress(self, listed: int) -> Progress:
        """The solve's progress once every component is searched, ``listed`` optimal
        mappings listed so far."""
        elapsed = time.perf_counter() - self.start
        return Progress(iterations=self.iterations, best_cost=sum(self.costs), lower_bound=sum(self.bounds_of),
                        open_branches=0, elapsed_seconds=elapsed, rate=0.0, peak_memory_mb=memory_mb(),
                        component=len(self.problems) - 1, components=len(self.problems), listed=listed)

    def _sample(self, iteration: int, k: int, bound: float, always: bool) -> None:
        """Keep a sample of the total bound, component ``k`` being at ``bound``, when
        ``always`` or when enough time has passed since the last one."""
        self.bounds_of[k] = bound
        seconds = time.perf_counter() - self.start
        if always or not self.bounds or seconds >= BOUND_SPACING * self.bounds[-1]["seconds"]:
            self.bounds.append({"iteration": iteration, "seconds": seconds, "lower_bound": sum(self.bounds_of)})
