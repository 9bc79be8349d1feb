"""A solve's result from the outcomes of its components (SPEC section 7): each
component's optimal mappings listed from its search's trails and tied histories (each
audited), their cross product over the components, and the figures of the whole."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .anytime import Anytime
from .cost.base import CostModel
from .cost.user import model_description
from .limits import StopReason, memory_mb
from .model.mappings import given_nodes, mapping_names
from .model.network import Network
from .result import Solution, SolveResult, environment
from .search.audit import Audit
from .search.histories import trail_count, trail_joins
from .search.outcome import SearchOutcome
from .search.problem import Problem, joins_to_clusters
from .search.tolerance import within
from .settings import SearchSettings

__all__ = ["combine", "optimal_mappings"]


def optimal_mappings(problem: Problem, method: str, outcome: SearchOutcome, limit: int | None,
                     has_room: Callable[[], bool], audit: Audit
                     ) -> tuple[list[tuple[tuple[int, ...], float, int]], int]:
    """Distinct best mappings of one component, at most ``limit`` of them and while
    ``has_room()``, as (cluster masks, cost, iteration found), and how many there are
    in all (counted exactly, without listing them). Each listed mapping passes ``audit``
    (feasible, and costing what the search says) or the solve fails with AuditError."""
    best: dict[tuple[int, ...], tuple[float, int]] = {}
    total = 0
    complete = True
    memo: dict[int, int] = {}
    for trail, cost, iteration in outcome.trails:
        if not within(cost, outcome.best_cost):
            continue
        if method == "brute":
            candidates: Any = [(trail, iteration)]
            total += 1
        else:
            histories = outcome.histories
            candidates = ((joins_to_clusters(problem.topo, j), max(f, iteration))
                          for j, f in trail_joins(trail, histories))
            total += trail_count(trail, histories, memo)
        for clusters, found in candidates:
            if clusters not in best and best and (limit is not None and len(best) >= limit or not has_room()):
                complete = False
                break
            if clusters not in best or found < best[clusters][1]:
                best[clusters] = (cost, found)
    if outcome.incumbent is not None and within(outcome.incumbent[1], outcome.best_cost):
        # the search's first mapping was known from iteration 0 (listed, and counted, once)
        for joins, _ in trail_joins(outcome.incumbent[0], {}):
            clusters = joins_to_clusters(problem.topo, joins)
            if clusters in best:
                best[clusters] = (best[clusters][0], 0)
    for clusters, (cost, _) in best.items():
        audit.check(clusters, cost)
    # a listing that ran to its end counts exactly (the unproven dive may repeat one)
    return [(c, cost, found) for c, (cost, found) in best.items()], total if not complete else len(best)


def combine(network: Network, model: CostModel, settings: SearchSettings, problems: list[Problem],
            outcomes: list[SearchOutcome], anytime: Anytime, start: float, max_solutions: int | None,
            memory_limit_mb: float | None) -> SolveResult:
    """The result of a solve from the outcomes of its components. A solution's iteration
    is the first at which every component's part of it was known; with DCMAP, a
    component's all-singletons mapping is known from the start (it is the anytime
    total's stand-in until the component is searched), so it counts iteration 0. The
    listing of the optimal mappings stops at ``max_solutions`` and at the memory limit
    (their count is exact either way)."""
    has_room = memory_left(memory_limit_mb)
    per_component = []
    parts = []
    counts = []
    offset = 0
    for problem, outcome, audit in zip(problems, outcomes, anytime.audits):
        found, count = optimal_mappings(problem, settings.method, outcome, max_solutions, has_room, audit)
        counts.append(count)
        singletons = sorted([x] for x in problem.network.nodes) if settings.method == "dcmap" else None
        part = [(mapping_names(problem.topo, c), cost, offset + it) for c, cost, it in found]
        parts.append([(names, cost, 0 if names == singletons else it) for names, cost, it in part])
        per_component.append({
            "nodes": len(problem.network.nodes), "names": [network.label(x) for x in problem.network.nodes],
            "optimal_cost": outcome.best_cost,
            "lower_bound": outcome.lower_bound,
            "proven_optimal": outcome.proven, "iterations": outcome.iterations,
            "solutions": count, "stop_reason": outcome.stop_reason,
            "link_records": outcome.link_records,
            **({"distributed": outcome.statistics} if outcome.statistics else {}),
        })
        offset += outcome.iterations
    solutions = []
    for combo in itertools.islice(itertools.product(*parts), max_solutions):
        if solutions and not has_room():  # one at least, even past the limit
            break
        clusters = sorted(c for part, _, _ in combo for c in part)
        solutions.append(Solution(clusters, sum(c for _, c, _ in combo), max(i for _, _, i in combo)))
    solutions.sort(key=lambda s: (s.iteration, s.clusters))
    for solution in solutions:
        solution.clusters = given_nodes(network, solution.clusters)
    solution_count = math.prod(counts)
    optimal = sum(o.best_cost for o in outcomes)
    lower = sum(o.lower_bound for o in outcomes)
    trace = anytime.trace
    first_traced = next((t["iteration"] for t in trace if within(t["cost"], optimal)), None)
    first = min((i for i in [first_traced, *(s.iteration for s in solutions)] if i is not None), default=None)
    first_seconds = next((t["seconds"] for t in trace if within(t["cost"], optimal)), None)
    stops = [o.stop_reason for o in outcomes if o.stop_reason != StopReason.FINISHED]
    return SolveResult(
        network=network.name,
        network_hash=network.content_hash(),
        cost_model=model_description(model),
        optimal_cost=optimal,
        proven_optimal=all(o.proven for o in outcomes),
        lower_bound=lower,
        solution_count=solution_count,
        solutions_complete=len(solutions) == solution_count,
        gap=(optimal - lower) / optimal if optimal > 0 and math.isfinite(optimal) else math.nan,
        solutions=solutions,
        iterations=sum(o.iterations for o in outcomes),
        first_optimal_iteration=first,
        first_optimal_seconds=first_seconds,
        elapsed_seconds=time.perf_counter() - start,
        trace=[{**t, "clusters": given_nodes(network, t["clusters"])} if "clusters" in t else dict(t)
               for t in trace],
        bounds=list(anytime.bounds),
        stop_reason=StopReason(stops[0]) if stops else StopReason.FINISHED,
        peak_memory_mb=max((o.peak_memory_mb for o in outcomes), default=0.0),
        components=per_component,
        started_at=datetime.fromtimestamp(time.time() - (time.perf_counter() - start), timezone.utc)
        .isoformat(timespec="seconds"),
        environment=environment(),
        source=network.origin.get("source"),
        slices=network.origin.get("slices"),
        observed=sorted(network.observed),
        **settings.of_result(),
    )


def memory_left(limit_mb: float | None, every: int = 4096) -> Callable[[], bool]:
    """A check cheap enough to call for every mapping listed: false once this process
    uses ``limit_mb`` MiB or more (read on the first call and every ``every`` calls)."""
    if limit_mb is None:
        return lambda: True
    calls = itertools.count()
    return lambda: bool(next(calls) % every) or memory_mb() < limit_mb
