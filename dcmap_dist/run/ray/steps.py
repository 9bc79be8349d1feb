"""The coordinator's worker steps (see :mod:`dcmap_dist.run.ray.driver` for the design):
a :class:`WorkerSlot` per worker (its running steps and what waits for its next one),
how an iteration limit is shared out among the steps about to start, and how the
coordinator's branches are dealt out when it holds the link table. The coordinator's
turns (:mod:`.turns`) start and take in the steps."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...search.branch import Branch
from .protocol import StepReport

__all__ = ["BOUND_SECONDS", "QUEUED_STEPS", "STEP_SECONDS", "STEP_WORKERS", "WorkerSlot", "deal",
           "iteration_caps", "silence", "step_seconds"]

STEP_SECONDS = 0.1  # how long a worker runs its loop per step (up to STEP_WORKERS workers)
STEP_WORKERS = 12  # past this many workers, the step grows with them (the coordinator's share of a core)
QUEUED_STEPS = 2  # steps submitted to a worker at once (the running one and the next)
BOUND_SECONDS = 5.0  # how often a worker computes its least open bound (it scans its open set)


def step_seconds(workers: int) -> float:
    """The step length for ``workers`` workers: :data:`STEP_SECONDS`, growing in
    proportion to the workers past :data:`STEP_WORKERS`, so that the coordinator takes
    in about the same number of steps a second however many workers there are (its
    share of a core: docs/distributed.md, "The coordinator's share of a core")."""
    return STEP_SECONDS * max(1.0, workers / STEP_WORKERS)


def silence(steps: float, workers: int) -> float:
    """The seconds a worker may go without answering before it is lost: ``steps``
    lengths of the base step (:data:`STEP_SECONDS`), and at least 4 of the step of
    ``workers`` workers (a step must have had the time to end)."""
    return max(steps * STEP_SECONDS, 4 * step_seconds(workers))


@dataclass
class WorkerSlot:
    """One worker as the coordinator sees it: the actor, its last step's report, the
    steps it runs, and what waits for its next step."""

    actor: Any  # the Ray actor handle
    report: StepReport  # its last step's (before its first: the branches it was given)
    running: list[list[Any]] = field(default_factory=list)  # submitted steps' result refs, oldest first
    reserved: int = 0  # iterations allowed to its running steps (under an iteration limit)
    inbox: list[Any] = field(default_factory=list)  # batches for its next step (refs or bytes)
    hand: list[Branch] = field(default_factory=list)  # branches dealt to it (the table on the coordinator)
    unheard: list[int] = field(default_factory=list)  # dominated records it has not heard of
    next_bound: float = 0.0  # when its step next reports its least bound (perf_counter)
    memory_mb: float = 0.0  # its process's peak in its last step
    heard: float = 0.0  # when it last answered, or was given a step while idle (perf_counter)
    sources: set[int] = field(default_factory=set)  # workers whose batches wait in its inbox as Ray references
    fed: list[set[int]] = field(default_factory=list)  # for each running step, the workers whose batches it takes
    # the least bound over the branches it has been sent and has not yet reported a least bound
    # after taking in: those in its inbox, those each running step takes, those of ended steps
    waiting_bound: float = math.inf
    fed_bounds: list[float] = field(default_factory=list)
    carried_bound: float = math.inf
    inbox_from: list[int] = field(default_factory=list)  # for each batch in its inbox, the worker that sent it

    def receive(self, batch: Any, bound: float, source: int = -1) -> None:
        """A batch (a Ray reference or bytes) whose branches' least bound is ``bound``, sent
        by worker ``source`` (-1: the coordinator), into its inbox, for its next step."""
        self.inbox.append(batch)
        self.inbox_from.append(source)
        self.waiting_bound = min(self.waiting_bound, bound)

    def unreported_bound(self) -> float:
        """The least bound over the branches sent to it that its reports do not cover yet:
        a worker's least bound is asked now and then (its last one is kept between), and
        a branch in flight is in no worker's open set, so without these a bound read from
        the reports could pass a branch on its way and claim more than is proven."""
        return min([self.waiting_bound, self.carried_bound, *self.fed_bounds])

    def has_work(self) -> bool:
        """Whether it holds open branches or has arrivals or branches waiting for it."""
        return bool(self.report.open_branches or self.inbox or self.hand)

    def holding(self) -> int:
        """The open branches it holds or has been dealt."""
        return self.report.open_branches + len(self.hand)


def iteration_caps(left: int | None, ready: list[int], size: int) -> list[int | None]:
    """Per-worker iteration allowances for the steps about to start, so the total never
    passes the limit: ``left`` (what the limit leaves after the allowances of running
    steps; None: no limit) shared among the ``ready`` workers of ``size`` (0: that worker
    waits)."""
    if left is None:
        return [None] * size
    caps = [0] * size
    for k, i in enumerate(ready):
        caps[i] = left // len(ready) + (1 if k < left % len(ready) else 0)
    return caps


def deal(branches: list[Branch], slots: list[WorkerSlot]) -> None:
    """Deal ``branches`` (cheapest first) to the workers holding the fewest open branches
    first, free workers before busy ones (the link table on the coordinator); each
    takes its hand with its next step."""
    loads = [(bool(slot.running), slot.holding()) for slot in slots]
    order = sorted(range(len(slots)), key=loads.__getitem__)
    for k, branch in enumerate(branches):
        slots[order[k % len(slots)]].hand.append(branch)
