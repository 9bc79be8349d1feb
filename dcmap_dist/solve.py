"""``solve``: the public entry point. Splits a network into weakly connected
components, runs the chosen method on each, and combines the results."""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .baselines import bfs_search, brute_force
from .cost import CostModel, load_cost, model_params
from .engine import Problem, joins_to_clusters, within
from .limits import Limits
from .linking import trail_count, trail_joins
from .mappings import check_scheme, mapping_names
from .network import Network
from .search import SearchOutcome, dcmap_search

METHODS = ("dcmap", "bfs", "brute")


@dataclass
class Solution:
    """One optimal (or best found) mapping: clusters of sorted node names."""

    clusters: list[list[str]]
    cost: float
    iteration: int


@dataclass
class SolveResult:
    """The result of :func:`solve` (SPEC section 7); :meth:`to_json` writes it."""

    network: str
    network_hash: str
    cost_model: dict[str, Any]
    scheme: str
    method: str
    optimal_cost: float
    proven_optimal: bool
    lower_bound: float
    gap: float
    solution_count: int
    solutions_complete: bool
    solutions: list[Solution]
    iterations: int
    first_optimal_iteration: int | None
    first_optimal_seconds: float | None
    elapsed_seconds: float
    trace: list[dict[str, float]]
    stop_reason: str
    alpha: float
    seed: int
    link_key: str
    use_bound: bool
    peak_memory_mb: float
    components: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data; a cost that was never found (breadth-first search stopped before
        completing a mapping) is None."""
        data = asdict(self)
        for name in ("optimal_cost", "gap"):
            if not math.isfinite(data[name]):
                data[name] = None
        for part in data["components"]:
            if not math.isfinite(part["optimal_cost"]):
                part["optimal_cost"] = None
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def solve(
    network: Network,
    cost: str | CostModel | Callable = "dcmap",
    scheme: str = "merge",
    method: str = "dcmap",
    alpha: float = 0.6,
    seed: int = 0,
    time_limit: float | None = None,
    max_iterations: int | None = None,
    memory_limit_mb: float | None = None,
    order: str = "cpt",
    addition: float = 0.6,
    on_improvement: Callable[[float, int, float], None] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    key: str = "lean",
    use_bound: bool = True,
    max_solutions: int | None = 10_000,
) -> SolveResult:
    """Find every optimal cluster mapping of ``network``.

    ``cost`` is ``"dcmap"`` (with ``order`` and ``addition``), ``"module:name"``, a
    cost model or a callable (see :mod:`dcmap_dist.cost`). ``method`` is ``dcmap``,
    ``bfs`` or ``brute``. Limits stop the search cleanly with the best mappings so
    far and ``proven_optimal = False``. ``on_improvement(cost, iteration, seconds)``
    hears every improved total; ``on_progress(stats)`` about once a second.
    ``key`` (``lean`` or ``full``) picks the dominance key and ``use_bound=False``
    switches off pruning by the model's lower bound (both for comparisons).

    Optimal mappings can be astronomically many when costs tie: ``solution_count``
    always counts them all, and ``solutions`` lists at most ``max_solutions`` of
    them (None: all); ``solutions_complete`` says whether the list is whole.
    """
    if max_solutions is not None and max_solutions < 1:
        raise ValueError(f"max_solutions must be a positive integer or None, got {max_solutions!r}")
    check_scheme(scheme)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    model = load_cost(cost, order=order, addition=addition)
    start = time.perf_counter()
    problems = [Problem(part, model, scheme, graph=network, key=key, lower_bound=use_bound)
                for part in network.components()]
    # until a component is searched, its greedy mapping stands in for the anytime total
    standing = [p.singletons().cost for p in problems] if method == "dcmap" else [math.nan] * len(problems)
    outcomes: list[SearchOutcome] = []
    trace: list[dict[str, float]] = []
    offset = 0
    for k, problem in enumerate(problems):
        limits = _remaining(time_limit, max_iterations, memory_limit_mb, start, offset)

        def improved(value: float, iteration: int, _seconds: float, k: int = k, offset: int = offset) -> None:
            standing[k] = value
            total = sum(standing)
            if math.isnan(total):
                return
            seconds = time.perf_counter() - start
            trace.append({"iteration": offset + iteration, "seconds": seconds, "cost": total})
            if on_improvement:
                on_improvement(total, offset + iteration, seconds)

        if isinstance(limits, str):  # the budget is spent: keep the all-singletons mapping
            fallback = problem.singletons()
            outcomes.append(SearchOutcome(fallback.cost, [((None,), fallback.cost, 0)], False, limits, 0,
                                          lower_bound=problem.score(problem.root()).bound))
            continue
        outcome = _run(problem, method, alpha, seed, limits, improved, on_progress)
        outcomes.append(outcome)
        offset += outcome.iterations
    settings = {"scheme": scheme, "method": method, "alpha": alpha, "seed": seed,
                "link_key": key, "use_bound": use_bound}
    return _combine(network, model, settings, problems, outcomes, trace, start, max_solutions)


def _remaining(time_limit, max_iterations, memory_limit_mb, start, used) -> Limits | str:
    """The limits left for the next component, or the name of the one used up."""
    left_time = None if time_limit is None else time_limit - (time.perf_counter() - start)
    left_iterations = None if max_iterations is None else max_iterations - used
    if left_time is not None and left_time <= 0:
        return "time_limit"
    if left_iterations is not None and left_iterations <= 0:
        return "max_iterations"
    return Limits(left_time, left_iterations, memory_limit_mb)


def _run(problem: Problem, method: str, alpha: float, seed: int, limits: Limits,
         improved: Callable, on_progress: Callable | None) -> SearchOutcome:
    if method == "dcmap":
        return dcmap_search(problem, alpha, seed, limits, improved, on_progress)
    if method == "bfs":
        return bfs_search(problem, limits, improved, on_progress)
    found = brute_force(problem, limits)
    best = min(c for _, c, _ in found)
    improved(best, len(found), 0.0)
    keep = [(clusters, c, i) for clusters, c, i in found if within(c, best)]
    return SearchOutcome(best, keep, True, "finished", len(found), lower_bound=best)


def _mappings(problem: Problem, method: str, outcome: SearchOutcome,
              limit: int | None) -> tuple[list[tuple[tuple[int, ...], float, int]], int]:
    """Distinct best mappings of one component, at most ``limit`` of them, as (cluster
    masks, cost, iteration found), and how many there are in all."""
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
            if clusters not in best and limit is not None and len(best) >= limit:
                complete = False
                break
            if clusters not in best or found < best[clusters][1]:
                best[clusters] = (cost, found)
    # a listing that ran to its end counts exactly (the unproven dive may repeat one)
    return [(c, cost, found) for c, (cost, found) in best.items()], total if not complete else len(best)


def _combine(network, model, settings, problems, outcomes, trace, start, max_solutions) -> SolveResult:
    per_component = []
    parts = []
    counts = []
    offset = 0
    for problem, outcome in zip(problems, outcomes):
        found, count = _mappings(problem, settings["method"], outcome, max_solutions)
        counts.append(count)
        parts.append([(mapping_names(problem.topo, c), cost, offset + it) for c, cost, it in found])
        per_component.append({
            "nodes": len(problem.network.nodes), "optimal_cost": outcome.best_cost,
            "lower_bound": outcome.lower_bound,
            "proven_optimal": outcome.proven, "iterations": outcome.iterations,
            "solutions": count, "stop_reason": outcome.stop_reason,
            "link_records": outcome.link_records,
        })
        offset += outcome.iterations
    solutions = []
    for combo in itertools.islice(itertools.product(*parts), max_solutions):
        clusters = sorted(c for part, _, _ in combo for c in part)
        solutions.append(Solution(clusters, sum(c for _, c, _ in combo), max(i for _, _, i in combo)))
    solutions.sort(key=lambda s: (s.iteration, s.clusters))
    solution_count = math.prod(counts)
    optimal = sum(o.best_cost for o in outcomes)
    lower = sum(o.lower_bound for o in outcomes)
    first_traced = next((t["iteration"] for t in trace if within(t["cost"], optimal)), None)
    first = min((i for i in [first_traced, *(s.iteration for s in solutions)] if i is not None), default=None)
    first_seconds = next((t["seconds"] for t in trace if within(t["cost"], optimal)), None)
    stops = [o.stop_reason for o in outcomes if o.stop_reason != "finished"]
    return SolveResult(
        network=network.name,
        network_hash=network.content_hash(),
        cost_model={"name": getattr(model, "name", "user"), **model_params(model)},
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
        trace=trace,
        stop_reason=stops[0] if stops else "finished",
        peak_memory_mb=max((o.peak_memory_mb for o in outcomes), default=0.0),
        components=per_component,
        **settings,
    )
