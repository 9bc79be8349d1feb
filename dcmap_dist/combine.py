"""A solve's result from the outcomes of its components (SPEC section 7): each
component's optimal mappings listed from its search's trails and tied histories (each
audited), their cross product over the components, and the figures of the whole."""

from __future__ import annotations

import itertools
import math
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .anytime import Anytime
from .cost.base import CostModel
from .cost.user import model_description
from .limits import SearchInterrupted, StopReason, Stopwatch, available_mb
from .model.mappings import given_nodes, mapping_names
from .model.network import Network
from .progress import Progress
from .result import Solution, SolveResult, environment
from .search.audit import Audit
from .search.histories import trail_count, trail_joins
from .search.outcome import SearchOutcome
from .search.problem import Problem, joins_to_clusters
from .search.tolerance import within
from .settings import SearchSettings
from .text import readable

__all__ = ["Listing", "combine", "listable", "optimal_mappings"]


def optimal_mappings(problem: Problem, method: str, outcome: SearchOutcome, limit: int | None, listing: Listing,
                     audit: Audit) -> tuple[list[tuple[list[list[str]], float, int]], int]:
    """Distinct best mappings of one component, at most ``limit`` of them and until
    ``listing`` is stopped by a limit, as (clusters of node names, cost, iteration
    found), and how many there are in all (counted exactly, without listing them). Each
    listed mapping passes ``audit`` (feasible, and costing what the search says) or the
    solve fails with AuditError; a mapping whose audit a limit cuts short is not listed."""
    best: dict[tuple[int, ...], tuple[float, int]] = {}
    names: dict[tuple[int, ...], list[list[str]]] = {}  # named as they are listed, on the listing's clock
    total = 0
    complete = True
    memo: dict[int, int] = {}
    listing.begin()
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
            if clusters in best:
                if found < best[clusters][1]:
                    best[clusters] = (cost, found)
                continue
            if not complete or limit is not None and len(best) >= limit or not listing.admit(
                    lambda check: audit.check(clusters, cost, check)):
                complete = False  # the rest is counted only
                break
            best[clusters] = (cost, found)
            names[clusters] = mapping_names(problem.topo, clusters)
    if outcome.incumbent is not None and within(outcome.incumbent[1], outcome.best_cost):
        # the search's first mapping was known from iteration 0 (listed, and counted, once)
        for joins, _ in trail_joins(outcome.incumbent[0], {}):
            clusters = joins_to_clusters(problem.topo, joins)
            if clusters in best:
                best[clusters] = (best[clusters][0], 0)
    # a listing that ran to its end counts exactly (the unproven dive may repeat one)
    return [(names[c], cost, found) for c, (cost, found) in best.items()], total if not complete else len(best)


# seconds to make and write a result's JSON, per node of each listed mapping (measured:
# 10,000 mappings of chain300's 300 nodes, 0.44 s; 30,000 of 40 3-node chains, 1.6 s)
WRITE_SECONDS_PER_NODE = 5e-7


class Listing:
    """The listing of a solve's optimal mappings under the solve's limits (``watch``:
    its time limit, memory limit and signals; iterations are the search's alone). Each
    component's first mapping is always listed, and of their combinations as many as
    the component with the most listed; every other one only while no limit is
    reached, checked before it is listed and before each question its audit asks the
    cost model; the time limit keeps what writing the listed mappings will take. Once stopped, :attr:`stopped`
    names the limit. ``on_progress`` hears, about once a second from the first second
    on, ``standing(listed)``: the solve's progress with so many mappings listed."""

    def __init__(self, watch: Stopwatch, nodes: int, on_progress: Callable[[Progress], None] | None,
                 standing: Callable[[int], Progress]) -> None:
        self.watch = watch
        self.nodes = nodes  # of a whole mapping: the result's size grows with it
        self.on_progress = on_progress
        self.standing = standing
        self.listed = 0  # mappings listed, every component's
        self.here = 0  # listed of the part being listed (a component's, or the combinations)
        self.free = 1  # listed first in each part, whatever the limits
        self.stopped: StopReason | None = None
        self.started = time.perf_counter()

    def begin(self, free: int = 1) -> None:
        """A new part of the listing begins: its first ``free`` mappings are listed
        whatever the limits."""
        self.here = 0
        self.free = free

    def check(self) -> None:
        """Raise SearchInterrupted once a limit is reached (not before a part's first
        ``free`` mappings)."""
        if self.here < self.free:
            return
        if self.stopped is None:
            reason = self.watch.resources_exceeded()
            if reason:
                self.stopped = StopReason(reason)
        if self.stopped is not None:
            raise SearchInterrupted(self.stopped)

    def admit(self, audit: Callable[[Callable[[], None]], None] | None = None) -> bool:
        """True if the next mapping may be listed (it is counted as listed): no limit is
        reached, and ``audit(check)``, given :meth:`check` to call before each question
        to the cost model, passed; false once a limit is reached."""
        try:
            self.check()
            if audit is not None:
                audit(self.check)
        except SearchInterrupted:
            return False
        self.listed += 1
        self.here += 1
        self.watch.reserve = WRITE_SECONDS_PER_NODE * self.nodes * self.listed  # the result is written in time
        if self.on_progress is not None and time.perf_counter() - self.started >= 1 and self.watch.progress_due():
            self.on_progress(self.standing(self.listed))
        return True


def combine(network: Network, model: CostModel, settings: SearchSettings, problems: list[Problem],
            outcomes: list[SearchOutcome], anytime: Anytime, start: float, max_solutions: int | None,
            listing: Listing) -> SolveResult:
    """The result of a solve from the outcomes of its components. A solution's iteration
    is the first at which every component's part of it was known; with DCMAP, a
    component's all-singletons mapping is known from the start (it is the anytime
    total's stand-in until the component is searched), so it counts iteration 0. The
    listing of the optimal mappings stops at ``max_solutions``, at what the memory at
    hand can hold (:func:`listable`), and at the limits of ``listing`` (their count is
    exact either way)."""
    per_component = []
    parts = []
    counts = []
    offset = 0
    for problem, outcome, audit in zip(problems, outcomes, anytime.audits):
        most = listable(len(problem.network.nodes), max_solutions)
        found, count = optimal_mappings(problem, settings.method, outcome, most, listing, audit)
        _held_by_memory(len(found), count, most, max_solutions, listing)
        counts.append(count)
        singletons = sorted([x] for x in problem.network.nodes) if settings.method == "dcmap" else None
        parts.append([(names, cost, 0 if names == singletons else offset + it) for names, cost, it in found])
        per_component.append({
            "nodes": len(problem.network.nodes), "names": [network.label(x) for x in problem.network.nodes],
            "optimal_cost": outcome.best_cost,
            "lower_bound": outcome.lower_bound,
            "proven_optimal": outcome.proven, "iterations": outcome.iterations,
            "solutions": count, "stop_reason": outcome.stop_reason,
            "link_records": outcome.link_records,
            **({"distributed": outcome.statistics} if outcome.statistics else {}),
            **({"contours": [list(c) for c in outcome.contours]} if outcome.contours is not None else {}),
        })
        offset += outcome.iterations
    solutions = []
    listing.begin(free=max(map(len, parts), default=1))  # one component's listed mappings are all kept
    most = listable(len(network.nodes), max_solutions)
    for combo in itertools.islice(itertools.product(*parts), most):
        if not listing.admit():
            break
        clusters = sorted(c for part, _, _ in combo for c in part)
        solutions.append(Solution(clusters, sum(c for _, c, _ in combo), max(i for _, _, i in combo)))
    _held_by_memory(len(solutions), math.prod(len(part) for part in parts), most, max_solutions, listing)
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
    if listing.stopped is not None:  # a proven search whose listing a limit cut short says so
        stops.append(listing.stopped)
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
        peak_memory_mb=max(listing.watch.sample_memory(), *(o.peak_memory_mb for o in outcomes)),
        components=per_component,
        started_at=datetime.fromtimestamp(time.time() - (time.perf_counter() - start), timezone.utc)
        .isoformat(timespec="seconds"),
        environment=environment(),
        source=network.origin.get("source"),
        slices=network.origin.get("slices"),
        observed=sorted(network.observed),
        **settings.of_result(),
    )


BYTES_PER_NODE = 64  # what a listed mapping holds per node: 11 bytes measured (chain300, 10,000 mappings in 32 MiB)


def listable(nodes: int, max_solutions: int | None) -> int | None:
    """How many mappings of ``nodes`` nodes a listing may hold: ``max_solutions``, and
    no more than half the memory the machine has available now can hold (a count past
    that, as 2^40 mappings of 40 separate chains, would be killed by the machine before
    its result: the listing stops there, its count still exact)."""
    room = available_mb()
    most = None if room is None else max(1, int(room * 2**20 / 2 / (BYTES_PER_NODE * max(1, nodes))))
    if max_solutions is None:
        return most
    return max_solutions if most is None else min(max_solutions, most)


def _held_by_memory(listed: int, count: int, most: int | None, max_solutions: int | None, listing: Listing) -> None:
    """Say so when the memory at hand (:func:`listable`), not ``max_solutions``, cut a
    listing of ``count`` mappings at ``most``: the listing stops as at the memory limit."""
    if most is None or listed < most or count <= listed or (max_solutions is not None and most >= max_solutions):
        return
    if listing.stopped is None:
        listing.stopped = StopReason.MEMORY_LIMIT
        warnings.warn(f"{readable(count)} optimal mappings are more than the memory at hand can hold: "
                      f"{readable(listed)} of them are listed (their count is exact); give --max-solutions "
                      "(max_solutions) to list fewer, or run where there is more memory", stacklevel=3)
