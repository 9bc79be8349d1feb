"""The coordinator of the distributed search (see :mod:`dcmap_dist.run.ray.driver` for the
design): it owns the workers, ``G_min``, the counters, the trace, termination, the
snapshots from which a lost worker is recovered (:mod:`.snapshots`) and, with
``link_table="coordinator"``, the link table. The worker steps are in :mod:`.steps`."""

from __future__ import annotations

import time
import uuid
from typing import Any

import ray

from ...limits import Limits, StopReason, Stopwatch, memory_mb
from ...search.explorer import Explorer
from ...search.histories import gather_histories
from ...search.linking import Improvement, LinkShard, route
from ...search.branch import Branch
from ...search.state import Resumption, SearchState
from .protocol import Snapshot, StepReport
from .snapshots import SNAPSHOT_ITEM_SECONDS, Snapshots
from .steps import QUEUED_STEPS, WorkerSteps
from .worker import SearchSpec, Worker, marshallable, packed, unpacked

LOOKUPS = "lookups"  # a worker's thread for history lookups (improvements' mappings while the search runs)


class Coordinator(WorkerSteps, Snapshots):
    """The coordinator actor: owns the workers, ``G_min``, the counters, the trace,
    termination, the snapshots and (``link_table="coordinator"``) the link table. Its
    worker steps are :class:`steps.WorkerSteps`, its snapshots and recovery
    :class:`snapshots.Snapshots`; here are a search's beginning, its turns, limits and
    reports."""

    def __init__(self, workers: int, cpus_per_worker: float) -> None:
        self.size = workers
        self.cpus = cpus_per_worker
        self.run_id = uuid.uuid4().hex[:8]
        self.spawned = 0
        self.workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> Any:
        self.spawned += 1
        actor = ray.remote(concurrency_groups={LOOKUPS: 1})(Worker).options(
            num_cpus=self.cpus, max_restarts=0, name=f"dcmap-worker-{self.run_id}-{self.spawned}",
            namespace="dcmap", scheduling_strategy="SPREAD", enable_task_events=False)
        return actor.remote()

    # -- one search -------------------------------------------------------------
    def begin(self, spec: SearchSpec, settings: dict[str, Any], limits: Limits, g_min: float,
              resume: Resumption | None = None) -> None:
        """Load a search into every worker and seed it with the root, or with the
        state it was checkpointed in (``resume``)."""
        self.spec = spec
        self.settings = settings
        self.sharded = settings["link_table"] == "sharded"
        self.problem = spec.problem()
        self.coordinator_memory = 0.0  # of the coordinator alone (MiB)
        self.worker_memory = [0.0] * self.size  # each worker's, at its last step
        # the search's limits, on one clock; memory is the coordinator's and the workers' together
        self.watch = Stopwatch(limits, every=1, memory=self._memory)
        self.cpu = time.process_time()
        self.before = resume.elapsed if resume else 0.0  # seconds searched before a resumption
        self.owners = resume.next_owner if resume else 1  # owner numbers of link shards
        # its own explorer: G_min always; with the table on the coordinator, the link table
        # and the branches waiting to be dealt out
        self.explorer = Explorer(self.problem, 0.0, 0, None if self.sharded else LinkShard(self.owners), notify=True)
        self.owners += 1
        self.explorer.g_min = g_min
        self.totals = {"steps": 0, "received": 0, "sent": 0, "bytes": 0, "coordinator_busy": 0.0,
                       "snapshots": 0, "snapshot_seconds": 0.0, "recoveries": 0}
        self.iterations = resume.iterations if resume else 0
        self.trace: list[Improvement] = list(resume.trace) if resume else []
        self.stats = [StepReport.before_first_step() for _ in range(self.size)]  # each worker's last step
        self.stop: StopReason | None = None
        self.histories: dict[int, bytes] = {}  # every history the final entry reaches, once finished
        # each worker's submitted steps (their result refs), oldest first: it runs them in order
        self.running: list[list[list[Any]]] = [[] for _ in range(self.size)]
        self.depth = QUEUED_STEPS if limits.max_iterations is None else 1  # caps need each step's end
        self.reserved = [0] * self.size  # iterations allowed to running steps (with a limit)
        self.inbox: list[list[Any]] = [[] for _ in range(self.size)]  # batches for each worker's next step
        self.hands: list[list[Branch]] = [[] for _ in range(self.size)]  # branches dealt to each (coordinator table)
        self.unheard: list[list[int]] = [[] for _ in range(self.size)]  # notices each has not heard
        self.next_bound = [0.0] * self.size
        self._load_workers()
        root = self.problem.root()
        self.root_bound = root.bound  # a lower bound for a worker whose own is not known yet
        if resume is None:
            self._deliver([(self.problem.link_key(root), root)])
        else:
            self._distribute(resume.state)
        self.snapshot: Snapshot | None = None
        self.last_snapshot = 0.0  # when the last snapshot ended (elapsed seconds)
        self.item_seconds = SNAPSHOT_ITEM_SECONDS
        if settings["snapshot_every"] is not None:
            self._take_snapshot()

    def _deliver(self, arrivals: list[tuple[tuple, Branch]]) -> None:
        """Send completions to the owners of their keys (settled in their next step)."""
        if not self.sharded:
            self.explorer.receive(arrivals)
            return
        batches: dict[int, list] = {}
        for key, branch in arrivals:
            batches.setdefault(route(key, self.size), []).append((key, branch))
        for owner, batch in batches.items():
            self.inbox[owner].append(packed(batch, marshallable(self.spec.model)))

    def _distribute(self, state: SearchState) -> None:
        """Share a resumed state among the workers: each key to its owner, each branch to
        the owner of its last link's key (where its dominance is decided), arrivals to
        be settled in their first step. With the table on the coordinator, it keeps the
        table and deals the branches out."""
        if not self.sharded:
            self.explorer.load(state)  # the records first, then the arrivals settled against them
            return
        self._deliver(state.arrivals)
        parts = [SearchState(dominated=state.dominated) for _ in range(self.size)]
        holder = {}
        for key, entry in state.entries.items():
            holder[entry.record] = owner = route(key, self.size)
            parts[owner].entries[key] = entry
        for record, histories in state.histories.items():
            parts[holder.get(record, record % self.size)].histories[record] = histories
        for k, branch in enumerate(state.branches):
            parts[holder.get(branch.link, k % self.size)].branches.append(branch)
        ray.get([w.take_part.remote(part) for w, part in zip(self.workers, parts)])
        for i, part in enumerate(parts):  # so that each worker holding branches gets a step
            self.stats[i] = StepReport.before_first_step(len(part.branches))

    def _load_workers(self) -> None:
        loads = []
        for i, w in enumerate(self.workers):
            loads.append(w.load.remote(self.spec, self.settings["alpha"], self.settings["seed"], i, self.sharded,
                                       self.size, self.owners))
            self.owners += 1
        ray.get(loads)

    def elapsed(self) -> float:
        """Seconds of search, those before a resumption included."""
        return self.before + self.watch.elapsed()

    def halt(self, reason: StopReason) -> None:
        """Stop the search (e.g. ``interrupted``) before the next step."""
        self.stop = self.stop or reason

    def advance(self, seconds: float, reserve: float = 0.0) -> dict[str, Any]:
        """Run the workers for about ``seconds``, stopping ``reserve`` seconds before the
        time limit (the final checkpoint's write); the progress figures (``done`` at the end)."""
        self.watch.reserve = reserve
        until = time.perf_counter() + seconds
        while self.stop is None and time.perf_counter() < until:
            reason = self.watch.check(self.iterations)
            if reason:
                self.stop = reason
                break
            try:
                self._turn()
                if self.stop is None and self._snapshot_due():
                    self._take_snapshot()
            except ray.exceptions.RayActorError:
                self._recover()
        if self.stop is not None:
            try:
                self._drain()
            except ray.exceptions.RayActorError:  # a worker died in its last step: back to the snapshot
                self._recover()
        return self.progress()

    def _memory(self) -> float:
        """The memory of the search's processes together, the coordinator's own (which
        holds the link table with ``link_table="coordinator"``) included: the memory
        limit applies to this sum (the stopwatch keeps its peak)."""
        own = memory_mb()
        self.coordinator_memory = max(self.coordinator_memory, own)
        return own + sum(self.worker_memory)

    # -- reports --------------------------------------------------------------------
    def least_bound(self) -> float:
        """The least bound of every open branch as last reported (progress figures); the
        root's bound for a worker that holds branches and has reported none yet."""
        bounds = [s.least_bound if s.least_bound is not None else self.root_bound
                  for s in self.stats if s.least_bound is not None or s.open_branches]
        bounds += [b.bound for hand in self.hands for b in hand]
        return min([*bounds, self.explorer.least_bound(), self.explorer.g_min])

    def exact_least_bound(self) -> float:
        """The least bound over every open branch in every worker and every batch in flight."""
        self._drain()
        bounds = ray.get([w.open_bound.remote() for w in self.workers])
        bounds += [b.bound for hand in self.hands for b in hand]
        for ref in (ref for refs in self.inbox for ref in refs):
            batch = ray.get(ref) if isinstance(ref, ray.ObjectRef) else ref
            bounds += [branch.bound for _, branch in unpacked(batch)]
        return min([*bounds, self.explorer.least_bound(), self.explorer.g_min])

    def progress(self) -> dict[str, Any]:
        elapsed = self.elapsed()
        return {
            "done": self.stop is not None, "iterations": self.iterations, "best": self.explorer.g_min,
            "lower_bound": self.least_bound(),
            "open": sum(s.open_branches for s in self.stats) + sum(map(len, self.hands)) + self.explorer.open_count(),
            "records": sum(s.link_records for s in self.stats)
            + (len(self.explorer.shard.entries) if self.explorer.shard is not None else 0),
            "workers": len(self.workers), "elapsed": elapsed,
            "rate": self.iterations / elapsed if elapsed > 0 else 0.0, "memory_mb": self.watch.peak_memory_mb,
            "trace": list(self.trace),
        }

    def finish(self) -> dict[str, Any] | None:
        """The search's results: the final link entry, with every history it reaches
        gathered here (so that :meth:`lookup` needs no worker afterwards). None when a
        worker was lost after the proof (here, or in a :meth:`lookup` since): every
        worker was rolled back to the last snapshot and the search goes on (call
        :meth:`advance` again). A worker lost after a limit stopped the search leaves
        the older state, stopped; its results."""
        while self.stop is not None:
            try:
                return self._results()
            except ray.exceptions.RayActorError:
                self._recover()
        return None

    def _results(self) -> dict[str, Any]:
        self._settle_arrivals()
        if self.sharded:
            finals = [e for e in ray.get([w.final_entry.remote() for w in self.workers]) if e is not None]
            records = sum(ray.get([w.link_records.remote() for w in self.workers]))
        else:
            found = self.explorer.shard.entries.get(self.explorer.final_key)
            finals = [found] if found is not None else []
            records = len(self.explorer.shard.entries)
        self.histories = gather_histories([(f.record,) for f in finals], self._lookup)
        busy = [s.busy for s in self.stats]
        return {
            "worker_cpu": [s.cpu for s in self.stats], "coordinator_cpu": time.process_time() - self.cpu,
            "stop": self.stop, "iterations": self.iterations, "trace": list(self.trace),
            "final": finals[0] if finals else None,
            "lower_bound": self.explorer.g_min if self.stop == StopReason.FINISHED else self.exact_least_bound(),
            "memory_mb": self.watch.peak_memory_mb, "coordinator_memory_mb": self.coordinator_memory,
            "link_records": records,
            "elapsed": self.elapsed(), "worker_busy": busy, "workers": self.size,
            "link_table": self.settings["link_table"], **self.totals,
        }

    def lookup(self, records: set[int]) -> dict[int, bytes]:
        """Histories of ``records``: those :meth:`finish` gathered, the rest from every shard.
        If a worker has died, the search is recovered first, and the records made since
        the snapshot are missing from the answer (lost with the worker)."""
        found = {r: self.histories[r] for r in records if r in self.histories}
        rest = set(records) - found.keys()
        if rest:
            try:
                found.update(self._lookup(rest))
            except ray.exceptions.RayActorError:
                self._recover()
                found.update(self._lookup(rest))
        return found

    def paths(self, trails: list[tuple]) -> dict[int, bytes]:
        """The first history of every record on the paths that ``trails`` followed,
        fetched for all of them at once (see :func:`histories.gather_histories`).
        Improvements' mappings are rebuilt from this in one call while the search runs,
        instead of a call per record that leaves the workers without steps meanwhile."""
        return gather_histories(trails, self.lookup, first=True)

    def _lookup(self, records: set[int]) -> dict[int, bytes]:
        found = self.explorer.shard.lookup(records) if self.explorer.shard is not None else {}
        # answered between the expansions of a running step, not after the steps queued there
        calls = [w.lookup.options(concurrency_group=LOOKUPS).remote(records) for w in self.workers]
        for part in ray.get(calls):
            found.update(part)
        return found
