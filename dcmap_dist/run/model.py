"""A model of the distributed search on many workers, in one process: ``W`` engines
searched in deterministic rounds, through the same rules as the Ray workers and their
coordinator (:mod:`dcmap_dist.run.ray.rules`: the same engines, orders, routing of
completions to the owners of their keys, ``G_min`` and dominance news, and the same
queue of steps per worker). It counts the work (the expansions) a search on ``W``
workers makes, for any ``W``, on a machine with fewer cores.

Each round, every worker with a step queued runs it: ``expansions`` expansions (the
step of a Ray run whose steps are counted in expansions: ``RayOptions.step_iterations``;
by default, what a native worker expands in a Ray step: :func:`step_expansions`), then the
coordinator takes every step in, in the workers' order, and fills each worker's queue
of steps up to ``depth`` (the Ray coordinator's :data:`~.ray.steps.QUEUED_STEPS`) while
it has work. An order is made when its step is queued, so what a busy worker sends
reaches a busy worker ``depth`` rounds later (an idle one, in the next round), and
``G_min`` likewise. With the link table sharded (the default of the Ray runs; the
coordinator's table is not modelled)."""

from __future__ import annotations

import math
import pickle
import time
from dataclasses import dataclass

from ..limits import Limits, StepEnd, StopReason, Stopwatch
from ..search.engine import Engine
from ..search.heuristics import incumbent
from ..search.histories import Histories, trail_count
from ..search.outcome import SearchOutcome, outcome
from ..search.problem import Problem
from ..search.state import Improvement
from ..search.tolerance import within
from ..search.worklog import WorkLog
from ..settings import FIRST_BUDGET
from .loop import drive
from .ray.protocol import SearchSpec, StepReport, Totals
from .ray.rules import deliver, next_order, take_in, take_step, worker_engine
from .ray.steps import QUEUED_STEPS, WorkerSlot, step_seconds
from .serial import SerialSearch

__all__ = ["ModelRun", "RATE", "footprint", "found_at", "mapping_count", "model_search", "serial_run",
           "step_expansions"]

RATE = 300_000  # a native worker's expansions a second: about 30,000 in its step of 0.1 s (issue 58)


def step_expansions(workers: int) -> int:
    """A worker's expansions in the step of a Ray run on ``workers`` workers
    (:func:`~.ray.steps.step_seconds`) at :data:`RATE`."""
    return round(RATE * step_seconds(workers))


@dataclass(frozen=True, kw_only=True)
class ModelRun:
    """A search's work: ``workers`` (0: the serial search), its steps of ``expansions``
    with ``depth`` queued, its expansions in all and by worker, its rounds and steps,
    its span (the rounds' longest steps' expansions added up: the search's time on
    ``workers`` cores, in expansions, if every step took the time of its expansions),
    the completions sent between workers, whether it was ``proven`` (else it stopped
    at its iteration limit), the optimum and how many optimal mappings it proved (0
    unproven), the search's iteration at which it first found its best, the seconds the
    run took here, with ``log``, each worker's :class:`WorkLog`, and what the engines
    held at the end, summed over them (``Engine.footprint``'s ``{structure: (items,
    bytes)}``; None on the Python engine, which has none)."""

    workers: int
    expansions: int
    depth: int
    iterations: int
    worker_iterations: list[int]
    rounds: int
    span: int
    steps: int
    sent: int
    proven: bool
    optimal_cost: float
    solution_count: int
    found_at: int
    seconds: float
    logs: list[WorkLog] | None = None
    footprint: dict[str, tuple[int, int]] | None = None


def model_search(problem: Problem, workers: int, expansions: int | None = None, depth: int = QUEUED_STEPS,
                 alpha: float = 0.6, seed: int = 0, log: bool = False, limit: int | None = None,
                 g_min: float = math.inf, first_budget: int = FIRST_BUDGET) -> ModelRun:
    """Prove ``problem`` on ``workers`` modelled workers (see the module docstring), each
    step ``expansions`` long (default: :func:`step_expansions`) with ``depth`` steps
    queued per worker; with ``log``, each worker's engine logs its work. With ``limit``,
    it stops unproven after the round in which its expansions reach ``limit``. ``G_min``
    starts at the first mapping's cost, or at ``g_min`` if lower (the optimum: what the
    proof alone costs); the first mapping is the beam's of ``first_budget`` expansions,
    as a Ray run's."""
    expansions = step_expansions(workers) if expansions is None else expansions
    if workers < 1 or expansions < 1 or depth < 1:
        raise ValueError(f"workers, expansions and depth must be positive, got {workers}, {expansions}, {depth}")
    started = time.perf_counter()
    spec = SearchSpec.of(problem, alpha, seed, log)
    engines = [worker_engine(spec, i, True, workers, i + 1) for i in range(workers)]
    slots = [WorkerSlot(actor=None, report=StepReport()) for _ in range(workers)]
    first = incumbent(problem, Stopwatch(Limits()), first_budget)
    g_min, iterations, rounds, span = min(first.cost, g_min), 0, 0, 0
    trace: list[Improvement] = []
    totals = Totals()
    root = problem.root()
    deliver(slots, [(problem.link_key(root), root)], problem, pickle.dumps)
    while True:
        for slot in slots:
            while len(slot.running) < depth and slot.has_work():
                slot.running.append(next_order(slot, g_min=g_min, iterations=iterations, elapsed=0.0, seconds=0.0,
                                               limits=Limits(), allowance=None, expansions=expansions,
                                               destinations=workers, bound=False))
        ready = [i for i, slot in enumerate(slots) if slot.running]
        if not ready or limit is not None and iterations >= limit:
            break
        rounds += 1
        ended = [(i, take_step(engines[i], *slots[i].running.pop(0), 0.0)) for i in ready]
        for i, (report, out) in ended:
            if report.stop not in (StopReason.MAX_ITERATIONS, StepEnd.IDLE):
                raise RuntimeError(f"worker {i}'s step stopped: {report.stop}")
            take_in(slots, i, report, out, True, totals)
            iterations += report.expanded
            trace.extend(report.improvements)
            g_min = min(g_min, report.g_min)
        span += max(report.expanded for _, (report, _) in ended)
    proven = not ready
    finals = [entry for engine in engines if (entry := engine.final_entry()) is not None]

    def fetch(records: set[int]) -> dict[int, Histories]:
        found: dict[int, Histories] = {}
        for engine in engines:
            found.update(engine.lookup(records))
        return found

    found = outcome(finals[0] if finals else None, first, proven,
                    StopReason.FINISHED if proven else StopReason.MAX_ITERATIONS, iterations, trace, g_min, 0.0,
                    fetch, 0)
    return ModelRun(workers=workers, expansions=expansions, depth=depth, iterations=iterations,
                    worker_iterations=[slot.report.iterations for slot in slots], rounds=rounds, span=span, steps=totals.steps,
                    sent=totals.sent, proven=proven, optimal_cost=found.best_cost,
                    solution_count=mapping_count(found) if proven else 0,
                    found_at=found_at(trace, found.best_cost), seconds=time.perf_counter() - started,
                    logs=[engine.take_log() for engine in engines] if log else None, footprint=footprint(engines))


def serial_run(problem: Problem, alpha: float = 0.6, seed: int = 0, log: bool = False,
               g_min: float = math.inf, first_budget: int = FIRST_BUDGET) -> ModelRun:
    """The serial search of ``problem`` (:class:`~.serial.SerialSearch`), told as a
    :class:`ModelRun` of 0 workers: the reference of the model's work and exactness
    (``g_min`` and ``first_budget``: as :func:`model_search`'s)."""
    started = time.perf_counter()
    search = SerialSearch(problem, alpha, seed, None, None, None, reports=False, first_budget=first_budget)
    search.engine.hear(g_min)
    if log:
        search.engine.keep_log()
    found = drive(search, None, None)
    logs = [search.engine.take_log()] if log else None
    return ModelRun(workers=0, expansions=0, depth=0, iterations=found.iterations,
                    worker_iterations=[found.iterations], rounds=0, span=found.iterations, steps=0, sent=0, proven=found.proven,
                    optimal_cost=found.best_cost, solution_count=mapping_count(found),
                    found_at=found_at(found.trace, found.best_cost), seconds=time.perf_counter() - started, logs=logs,
                    footprint=footprint([search.engine]))


def footprint(engines: list[Engine]) -> dict[str, tuple[int, int]] | None:
    """What ``engines`` hold, summed by structure (None if they cannot tell: the Python engine)."""
    if not all(hasattr(engine, "footprint") for engine in engines):
        return None
    total: dict[str, tuple[int, int]] = {}
    for engine in engines:
        for name, (items, size) in engine.footprint().items():
            had = total.get(name, (0, 0))
            total[name] = (had[0] + items, had[1] + size)
    return total


def mapping_count(found: SearchOutcome) -> int:
    """The optimal mappings a proven outcome's trails stand for (counted, not listed)."""
    memo: dict[int, int] = {}
    return sum(trail_count(trail, found.histories, memo) for trail, cost, _ in found.trails
               if within(cost, found.best_cost))


def found_at(trace: list[Improvement], optimum: float) -> int:
    """The iteration at which ``trace`` first reached ``optimum`` (0: never, or the first
    mapping was optimal)."""
    return min((found.iteration for found in trace if within(found.cost, optimum)), default=0)
