"""The coordinator's worker actors (see :mod:`dcmap_dist.run.ray.driver` for the design):
started spread over the cluster's nodes or on a given one, and waited on, never without
a time-out: a worker that has not answered for the silence that makes it lost raises
:class:`WorkerSilent`, as Ray raises its own error for a dead one."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .protocol import LOOKUPS, SILENT_STEPS, SearchSpec
from .steps import silence
from .worker import Worker

__all__ = ["Crew", "INTERRUPTED_SECONDS", "POLL_SECONDS", "SAVE_SECONDS", "WorkerSilent"]

SAVE_SECONDS = 600.0  # how long a worker may take to save, send or take back its share of a snapshot
POLL_SECONDS = 0.25  # how often a wait looks whether the search was halted meanwhile
INTERRUPTED_SECONDS = 5.0  # a signal stopped the search: a worker that takes longer to answer is lost


class WorkerSilent(ray.exceptions.RayActorError):
    """A worker has not answered within its time (a frozen node, a cut network): it is
    treated as lost, as a dead one is."""

    def __init__(self, what: str) -> None:
        super().__init__(error_msg=what)
        self.what = what

    def __str__(self) -> str:
        return self.what


class Crew:
    """The worker actors of one coordinator: the ``workers`` asked for, those that search
    (:attr:`actors`, of ``cpus`` CPUs each), each one's node once it answered, and the
    seconds a worker may go without answering before it is lost (:attr:`silent`)."""

    def __init__(self, workers: int, cpus: float) -> None:
        self.requested = workers  # the workers asked for; self.size of them search
        self.cpus = cpus
        self.run_id = uuid.uuid4().hex[:8]
        self.spawned = 0
        self.actors = [self.spawn() for _ in range(workers)]
        self.nodes: list[str | None] = [None] * workers  # each actor's node, once it answered
        self.silent = silence(SILENT_STEPS, workers)  # seconds without an answer after which a worker is lost

    @property
    def size(self) -> int:
        """The workers that search."""
        return len(self.actors)

    def spawn(self, node: str | None = None) -> Any:
        """A new worker actor: spread over the cluster's nodes, or on ``node`` (failing
        at once if that node is gone)."""
        self.spawned += 1
        where = "SPREAD" if node is None else NodeAffinitySchedulingStrategy(node, soft=False,
                                                                              _fail_on_unavailable=True)
        actor = ray.remote(concurrency_groups={LOOKUPS: 1})(Worker).options(
            num_cpus=self.cpus, max_restarts=0, name=f"dcmap-worker-{self.run_id}-{self.spawned}",
            namespace="dcmap", scheduling_strategy=where, enable_task_events=False)
        return actor.remote()

    def load(self, spec: SearchSpec, sharded: bool, owner: int, seconds: float | None) -> None:
        """A new search in every worker (worker ``i`` numbering its link records as owner
        ``owner + i``; ``sharded``: it owns shard ``i`` of the link table), and each one's
        node; the workers have ``seconds`` to answer (None: the silence)."""
        self.get([actor.load.remote(spec, i, sharded, self.size, owner + i) for i, actor in enumerate(self.actors)],
                 seconds)
        self.nodes = self.get([actor.node.remote() for actor in self.actors], seconds)

    def get(self, refs: Any, seconds: float | None = None,
            interrupted: Callable[[], float | None] | None = None) -> Any:
        """``ray.get`` of workers' answers, given up after ``seconds`` (the silence that
        makes a worker lost, by default) with :class:`WorkerSilent`. A step's answer
        comes with ``interrupted`` (when a signal halted the search, or None; asked on
        each poll), and is given up :data:`INTERRUPTED_SECONDS` after the halt at most
        (the search must end within seconds, and a step ends within a step length)."""
        seconds = self.silent if seconds is None else seconds
        pending = [refs] if isinstance(refs, ray.ObjectRef) else list(refs)
        start = time.perf_counter()
        deadline = start + seconds
        while pending:
            now = time.perf_counter()
            halted = None if interrupted is None else interrupted()
            if halted is not None:
                deadline = min(deadline, max(halted, start) + INTERRUPTED_SECONDS)
            if now >= deadline:
                raise WorkerSilent(f"a worker has not answered for {now - start:.0f} s")
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=min(POLL_SECONDS, deadline - now))
        return ray.get(refs)

    def save_get(self, refs: list[Any]) -> list[Any]:
        """Workers' answers that may take long to make or send (a share of a snapshot of
        gigabytes, a scan of the open branches, the histories of many records)."""
        return self.get(refs, max(self.silent, SAVE_SECONDS))
