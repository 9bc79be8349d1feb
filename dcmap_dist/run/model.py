"""A model of the distributed search on many workers, in one process: ``W`` engines
searched in deterministic rounds, through the same rules as the Ray workers and their
coordinator (:mod:`dcmap_dist.run.ray.rules`: the same engines, orders, routing of
completions to the owners of their keys, ``G_min`` and dominance news, and the same
queue of steps per worker). It counts the work (the expansions) a search on ``W``
workers makes, for any ``W``, on a machine with fewer cores.

Each round, every worker with a step queued runs it: ``expansions`` expansions (the
step of a Ray run whose steps are counted in expansions: ``RayOptions.step_iterations``;
a native worker expands about :data:`STEP_EXPANSIONS` in its step of 0.1 s), then the
coordinator takes every step in, in the workers' order, and fills each worker's queue
of steps up to ``depth`` (the Ray coordinator's :data:`~.ray.steps.QUEUED_STEPS`) while
it has work. An order is made when its step is queued, so what a busy worker sends
reaches a busy worker ``depth`` rounds later (an idle one, in the next round), and
``G_min`` likewise. With the link table sharded (the default of the Ray runs; the
coordinator's table is not modelled)."""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass

from ..limits import Limits, StepEnd, StopReason, Stopwatch
from ..search.heuristics import incumbent
from ..search.histories import Histories, trail_count
from ..search.outcome import SearchOutcome, outcome
from ..search.problem import Problem
from ..search.state import Improvement
from ..search.tolerance import within
from ..search.worklog import WorkLog
from .loop import drive
from .ray.protocol import SearchSpec, StepReport, Totals
from .ray.rules import deliver, next_order, notify, take_in, take_step, worker_engine
from .ray.steps import QUEUED_STEPS, WorkerSlot
from .serial import SerialSearch

__all__ = ["ModelRun", "STEP_EXPANSIONS", "model_search", "serial_run"]

STEP_EXPANSIONS = 30_000  # a native worker's expansions in a step of 0.1 s (issue 58, docs/distributed.md)


@dataclass(frozen=True, kw_only=True)
class ModelRun:
    """A proven search's work: ``workers`` (0: the serial search), its steps of
    ``expansions`` with ``depth`` queued, its expansions in all and by worker, its rounds
    and steps, the completions sent between workers, the optimum and how many optimal
    mappings it proved, the search's iteration at which it first found the optimum, the
    seconds the run took here, and with ``log``, each worker's :class:`WorkLog`."""

    workers: int
    expansions: int
    depth: int
    iterations: int
    worker_iterations: list[int]
    rounds: int
    steps: int
    sent: int
    optimal_cost: float
    solution_count: int
    found_at: int
    seconds: float
    logs: list[WorkLog] | None = None


def model_search(problem: Problem, workers: int, expansions: int = STEP_EXPANSIONS, depth: int = QUEUED_STEPS,
                 alpha: float = 0.6, seed: int = 0, log: bool = False) -> ModelRun:
    """Prove ``problem`` on ``workers`` modelled workers (see the module docstring), each
    step ``expansions`` long with ``depth`` steps queued per worker; with ``log``, each
    worker's engine logs its work."""
    if workers < 1 or expansions < 1 or depth < 1:
        raise ValueError(f"workers, expansions and depth must be positive, got {workers}, {expansions}, {depth}")
    started = time.perf_counter()
    spec = SearchSpec.of(problem, alpha, seed)
    engines = [worker_engine(spec, i, True, workers, i + 1) for i in range(workers)]
    if log:
        for engine in engines:
            engine.keep_log()
    slots = [WorkerSlot(actor=None, report=StepReport()) for _ in range(workers)]
    first = incumbent(problem, Stopwatch(Limits()))
    g_min, iterations, rounds = first.cost, 0, 0
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
        if not ready:
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
            notify(slots, report.notices)
    finals = [entry for engine in engines if (entry := engine.final_entry()) is not None]

    def fetch(records: set[int]) -> dict[int, Histories]:
        found: dict[int, Histories] = {}
        for engine in engines:
            found.update(engine.lookup(records))
        return found

    found = outcome(finals[0] if finals else None, first, True, StopReason.FINISHED, iterations, trace, g_min, 0.0,
                    fetch, 0)
    return ModelRun(workers=workers, expansions=expansions, depth=depth, iterations=iterations,
                    worker_iterations=[slot.report.iterations for slot in slots], rounds=rounds, steps=totals.steps,
                    sent=totals.sent, optimal_cost=found.best_cost, solution_count=_count(found),
                    found_at=_found_at(trace, found.best_cost), seconds=time.perf_counter() - started,
                    logs=[engine.take_log() for engine in engines] if log else None)


def serial_run(problem: Problem, alpha: float = 0.6, seed: int = 0, log: bool = False) -> ModelRun:
    """The serial search of ``problem`` (:class:`~.serial.SerialSearch`), told as a
    :class:`ModelRun` of 0 workers: the reference of the model's work and exactness."""
    started = time.perf_counter()
    search = SerialSearch(problem, alpha, seed, None, None, None, reports=False)
    if log:
        search.engine.keep_log()
    found = drive(search, None, None)
    logs = [search.engine.take_log()] if log else None
    return ModelRun(workers=0, expansions=0, depth=0, iterations=found.iterations,
                    worker_iterations=[found.iterations], rounds=0, steps=0, sent=0, optimal_cost=found.best_cost,
                    solution_count=_count(found), found_at=_found_at(found.trace, found.best_cost),
                    seconds=time.perf_counter() - started, logs=logs)


def _count(found: SearchOutcome) -> int:
    """The optimal mappings a proven outcome's trails stand for."""
    memo: dict[int, int] = {}
    return sum(trail_count(trail, found.histories, memo) for trail, cost, _ in found.trails
               if within(cost, found.best_cost))


def _found_at(trace: list[Improvement], optimum: float) -> int:
    """The iteration at which ``trace`` first reached ``optimum`` (0: the first mapping was optimal)."""
    return min((found.iteration for found in trace if within(found.cost, optimum)), default=0)
