"""The coordinator of the distributed search (see :mod:`dcmap_dist.run.ray.driver` for the
design): it owns the workers, ``G_min``, the counters, the trace, termination, the
snapshots from which a lost worker is recovered and, with ``link_table="coordinator"``,
the link table."""

from __future__ import annotations

import pickle
import time
import uuid
from typing import Any

import ray

from ...search.explorer import Explorer
from ...search.limits import Limits, memory_mb
from ...search.linking import Improvement, LinkShard, gather_histories, route
from ...search.problem import Branch, within
from ...search.state import Resumption, SearchState
from .worker import SearchSpec, Worker, marshallable, packed, unpacked

STEP_SECONDS = 0.1  # how long a worker runs its loop per step
QUEUED_STEPS = 2  # steps submitted to a worker at once (the running one and the next)
BOUND_SECONDS = 5.0  # how often a worker computes its least open bound (it scans its open set)
SNAPSHOT_SPACING = 100  # and at least this many times the next snapshot's expected duration (1% of the time)
SNAPSHOT_ITEM_SECONDS = 3e-5  # expected snapshot seconds per open branch or link record, until measured
SNAPSHOT_MEASURED_ITEMS = 10_000  # a snapshot this large measures the seconds per item
LOOKUPS = "lookups"  # a worker's thread for history lookups (improvements' mappings while the search runs)
# a worker's statistics before its first step
IDLE_STATS = {"open": 0, "records": 0, "iterations": 0, "least_bound": None, "busy": 0.0, "cpu": 0.0}


class Coordinator:
    """The coordinator actor: owns the workers, ``G_min``, the counters, the trace,
    termination, the snapshots and (``link_table="coordinator"``) the link table."""

    def __init__(self, workers: int, cpus_per_worker: float) -> None:
        self.size = workers
        self.cpus = cpus_per_worker
        self.run = uuid.uuid4().hex[:8]
        self.spawned = 0
        self.workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> Any:
        self.spawned += 1
        actor = ray.remote(concurrency_groups={LOOKUPS: 1})(Worker).options(
            num_cpus=self.cpus, max_restarts=0, name=f"dcmap-worker-{self.run}-{self.spawned}",
            namespace="dcmap", scheduling_strategy="SPREAD", enable_task_events=False)
        return actor.remote()

    # -- one search -------------------------------------------------------------
    def begin(self, spec: SearchSpec, settings: dict[str, Any], limits: Limits, g_min: float,
              resume: Resumption | None = None) -> None:
        """Load a search into every worker and seed it with the root, or with the
        state it was checkpointed in (``resume``)."""
        self.spec = spec
        self.settings = settings
        self.limits = limits
        self.sharded = settings["link_table"] == "sharded"
        self.problem = spec.problem()
        self.clock = time.perf_counter()
        self.cpu = time.process_time()
        self.before = resume.elapsed if resume else 0.0  # seconds searched before a resumption
        self.owners = resume.next_owner if resume else 1  # owner numbers of link shards
        self.table = Explorer(self.problem, 0.0, 0, None if self.sharded else LinkShard(self.owners), notify=True)
        self.owners += 1
        self.table.g_min = g_min
        self.totals = {"steps": 0, "received": 0, "sent": 0, "bytes": 0, "coordinator_busy": 0.0,
                       "snapshots": 0, "snapshot_seconds": 0.0, "recoveries": 0}
        self.iterations = resume.iterations if resume else 0
        self.trace: list[Improvement] = list(resume.trace) if resume else []
        self.stats = [dict(IDLE_STATS) for _ in range(self.size)]  # each worker's last step
        self.stop: str | None = None
        self.histories: dict[int, list] = {}  # every history the final entry reaches, once finished
        self.peak_memory = 0.0  # of the coordinator and the workers together (MiB)
        self.coordinator_memory = 0.0  # of the coordinator alone (MiB)
        self.worker_memory = [0.0] * self.size  # each worker's, at its last step
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
        self.snapshot = None
        self.last_snapshot = 0.0  # when the last snapshot ended (elapsed seconds)
        self.item_seconds = SNAPSHOT_ITEM_SECONDS
        if settings["snapshot_every"] is not None:
            self._take_snapshot()

    def _deliver(self, arrivals: list[tuple[tuple, Branch]]) -> None:
        """Send completions to the owners of their keys (settled in their next step)."""
        if not self.sharded:
            self.table.receive(arrivals)
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
            self.table.load(state)  # the records first, then the arrivals settled against them
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
            self.stats[i] = dict(IDLE_STATS, open=len(part.branches))

    def _load_workers(self) -> None:
        shards = self.size if self.sharded else 0
        loads = []
        for i, w in enumerate(self.workers):
            loads.append(w.load.remote(self.spec, self.settings["alpha"], self.settings["seed"], i, shards,
                                       self.owners))
            self.owners += 1
        ray.get(loads)

    def elapsed(self) -> float:
        """Seconds of search, those before a resumption included."""
        return self.before + time.perf_counter() - self.clock

    def halt(self, reason: str) -> None:
        """Stop the search (e.g. ``interrupted``) before the next step."""
        self.stop = self.stop or reason

    def cut(self) -> dict[str, Any]:
        """A fresh consistent cut for a checkpoint: the snapshot's parts (Ray references
        to each worker's state and to the batches in flight) and the counters."""
        try:
            self._take_snapshot()
        except ray.exceptions.RayActorError:  # a worker died: recover, then cut again
            self._recover()
            self._take_snapshot()
        snap = self.snapshot
        return {"workers": list(snap["workers"]), "inbox": [ref for refs in snap["inbox"] for ref in refs],
                "table": snap["table"], "iterations": self.iterations, "elapsed": self.elapsed(),
                "g_min": self.table.g_min, "trace": list(self.trace), "next_owner": self.owners}

    def advance(self, seconds: float) -> dict[str, Any]:
        """Run the workers for about ``seconds``; the progress figures (``done`` at the end)."""
        until = time.perf_counter() + seconds
        while self.stop is None and time.perf_counter() < until:
            reason = self._limit_reached()
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

    def _limit_reached(self) -> str | None:
        limits = self.limits
        if limits.time_limit is not None and time.perf_counter() - self.clock >= limits.time_limit:
            return "time_limit"
        if limits.max_iterations is not None and self.iterations >= limits.max_iterations:
            return "max_iterations"
        if limits.memory_limit_mb is not None and self._memory() >= limits.memory_limit_mb:
            return "memory_limit"
        return None

    def _memory(self) -> float:
        """The memory of the search's processes together, the coordinator's own (which
        holds the link table with ``link_table="coordinator"``) included; the peak is kept
        and reported. The memory limit applies to this sum."""
        own = memory_mb()
        self.coordinator_memory = max(self.coordinator_memory, own)
        total = own + sum(self.worker_memory)
        self.peak_memory = max(self.peak_memory, total)
        return total

    def _turn(self) -> None:
        """Start a step on every free worker that has work, then absorb the steps that
        have ended (at least one). Steps overlap: a worker starts its next step as soon
        as its last one is absorbed, with what was addressed to it meanwhile, and never
        waits for the others."""
        busy = time.perf_counter()
        self._start_ready()
        running = {steps[0][0]: i for i, steps in enumerate(self.running) if steps}
        self.totals["coordinator_busy"] += time.perf_counter() - busy
        if running:
            ready, rest = ray.wait(list(running), num_returns=1)
            if rest:
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            busy = time.perf_counter()
            for ref in ready:
                self._absorb(running[ref])
            self.totals["coordinator_busy"] += time.perf_counter() - busy
        if self.stop is None and self._finished():
            self.stop = "finished"

    def _has_work(self, i: int) -> bool:
        return bool(self.stats[i]["open"] or self.inbox[i] or self.hands[i])

    def _start_ready(self) -> None:
        """Fill each worker's queue of steps (up to ``self.depth``) while it holds open
        branches or has arrivals or branches waiting for it, each step with its share
        of the iterations left (if limited)."""
        if not self.sharded:
            self._deal()
        ready = [i for i in range(self.size) if len(self.running[i]) < self.depth and self._has_work(i)]
        caps = self._iteration_caps(ready)
        for i in ready:
            if caps[i] != 0:
                while len(self.running[i]) < self.depth and self._has_work(i):
                    self._start(i, caps[i])

    def _start(self, i: int, allowance: int | None) -> None:
        """Start worker ``i``'s next step, with what waits for it, ``G_min``, the notices
        it has not heard, and at most ``allowance`` expansions (None: no limit)."""
        session = time.perf_counter() - self.clock
        time_left = None if self.limits.time_limit is None else max(1e-3, self.limits.time_limit - session)
        destinations = self.size if self.sharded else 1
        now = time.perf_counter()
        bound = now >= self.next_bound[i]  # its least bound for progress, now and then
        if bound:
            self.next_bound[i] = now + BOUND_SECONDS
        control = {
            "bound": bound,
            "g_min": self.table.g_min, "notices": self.unheard[i], "branches": self.hands[i],
            "iterations": self.iterations, "local_iterations": self.stats[i]["iterations"],
            "elapsed": self.elapsed(), "seconds": STEP_SECONDS,
            "time_left": time_left, "memory_limit_mb": self.limits.memory_limit_mb,
            "max_iterations": None if allowance is None else self.stats[i]["iterations"] + allowance,
            "destinations": destinations,
        }
        self.running[i].append(self.workers[i].step.options(num_returns=1 + destinations).remote(
            control, *self.inbox[i]))
        self.reserved[i] = allowance or 0
        self.inbox[i], self.hands[i], self.unheard[i] = [], [], []

    def _settle_arrivals(self) -> None:
        """Have every worker settle the batches waiting for it, expanding nothing: a
        stopped search's best mapping may be a completion still on its way to the
        final key's owner."""
        self._drain()
        for i in range(self.size):
            if self.inbox[i]:
                self._start(i, 0)
        self._drain()

    def _absorb(self, i: int) -> None:
        """Take in worker ``i``'s ended step: its counters, improvements and notices, and
        its outgoing batches (into the inboxes of their owners, or settled here when
        the coordinator holds the table)."""
        refs = self.running[i][0]
        s = ray.get(refs[0])
        self.running[i].pop(0)
        self.reserved[i] = 0
        if s["least_bound"] is None:  # not asked this step: keep the last one known
            s["least_bound"] = self.stats[i]["least_bound"]
        self.stats[i] = s
        self.totals["steps"] += 1
        self.iterations += s["expanded"]
        self.trace.extend(s["improvements"])
        self.table.g_min = min(self.table.g_min, s["g_min"])
        self._notify(s["notices"])
        self.totals["received"] += s["received"]
        self.totals["sent"] += sum(s["sent"])
        self.totals["bytes"] += s["bytes"]
        self.worker_memory[i] = s["memory_mb"]
        self._memory()
        arrivals = []
        for j, count in enumerate(s["sent"]):
            if count:
                if self.sharded:
                    self.inbox[j].append(refs[1 + j])
                else:
                    arrivals.append(refs[1 + j])
        if s["stop"] not in ("idle", "budget", "max_iterations"):
            self.stop = s["stop"]
        if arrivals:
            self.table.iteration_offset = self.iterations
            self.table.time_offset = self.elapsed()
            for batch in ray.get(arrivals):
                self.table.receive(unpacked(batch))
            self.trace.extend(self.table.improvements)
            self.table.improvements = []
            self._notify(self.table.notices)
            self.table.notices = []

    def _notify(self, notices: list[int]) -> None:
        """Dominated records, for every worker's next step."""
        if notices:
            for unheard in self.unheard:
                unheard.extend(notices)

    def _drain(self) -> None:
        """Absorb every running step without starting new ones: afterwards nothing runs
        and every batch in flight is in an inbox (a consistent cut)."""
        for i, steps in enumerate(self.running):
            while steps:
                self._absorb(i)

    def _finished(self) -> bool:
        return (not any(self.running) and not any(self.inbox) and not any(self.hands)
                and self.table.open_count() == 0 and all(s["open"] == 0 for s in self.stats))

    def _deal(self) -> None:
        """The coordinator's surviving branches, cheapest first, dealt to the workers
        holding the fewest open branches first, free workers before busy ones
        (coordinator placement only); each takes its hand with its next step."""
        if self.table.open_count() == 0:
            return
        loads = [(bool(self.running[i]), self.stats[i]["open"] + len(self.hands[i])) for i in range(self.size)]
        order = sorted(range(self.size), key=loads.__getitem__)
        k = 0
        while (branch := self.table.queue.pop(True)) is not None:
            if within(branch.bound, self.table.g_min) and branch.link not in self.table.dominated:
                self.hands[order[k % self.size]].append(branch)
                k += 1

    def _iteration_caps(self, ready: list[int]) -> list[int | None]:
        """Per-worker iteration allowances for the steps about to start, so the total
        never passes the limit: what is left after the allowances of running steps is
        shared among the ``ready`` workers (0: that worker waits)."""
        if self.limits.max_iterations is None:
            return [None] * self.size
        left = max(0, self.limits.max_iterations - self.iterations - sum(self.reserved))
        caps = [0] * self.size
        for k, i in enumerate(ready):
            caps[i] = left // len(ready) + (1 if k < left % len(ready) else 0)
        return caps

    # -- snapshots and recovery ---------------------------------------------------
    def _snapshot_due(self) -> bool:
        """``snapshot_every`` seconds have passed since the last snapshot, and at least
        :data:`SNAPSHOT_SPACING` times what the next one is expected to take (its seconds
        per item, measured on the last large one, times the items held now)."""
        every = self.settings["snapshot_every"]
        if every is None:
            return False
        since = self.elapsed() - self.last_snapshot
        return since >= every and since >= SNAPSHOT_SPACING * self.item_seconds * self._state_size()

    def _state_size(self) -> int:
        """Open branches and link records held by the workers and the coordinator."""
        table = self.table
        held = table.open_count() + (len(table.shard.entries) if table.shard is not None else 0)
        return held + sum(s["open"] + s["records"] for s in self.stats)

    def _take_snapshot(self) -> None:
        """A consistent cut (after the running steps end): every worker's state, the
        batches in flight, the coordinator's own."""
        start = time.perf_counter()
        self._drain()
        size = self._state_size()
        calls = [w.state.options(num_returns=2).remote() for w in self.workers]
        ray.get([flag for flag, _ in calls])  # raises here if a worker died while saving
        states = [state for _, state in calls]
        self.snapshot = {
            "workers": states, "inbox": [list(x) for x in self.inbox], "unheard": [list(x) for x in self.unheard],
            "table": pickle.dumps(self._table_state(), protocol=5), "iterations": self.iterations,
            "trace": list(self.trace), "stats": list(self.stats), "totals": dict(self.totals),
        }
        took = time.perf_counter() - start
        self.totals["snapshots"] += 1
        self.totals["snapshot_seconds"] += took
        if size >= SNAPSHOT_MEASURED_ITEMS:
            self.item_seconds = took / size
        self.last_snapshot = self.elapsed()

    def _table_state(self) -> dict[str, Any]:
        dealt = [branch for hand in self.hands for branch in hand]  # not yet taken: still the table's
        state = {"g_min": self.table.g_min, "branches": self.table.open_branches() + dealt,
                 "dominated": set(self.table.dominated)}
        state["shard"] = self.table.shard.state() if self.table.shard is not None else None
        return state

    def _recover(self) -> None:
        """A worker died: replace every dead worker and roll all of them back to the snapshot."""
        if self.snapshot is None:
            raise RuntimeError("a worker died and no snapshot was taken (snapshots are off), so the search "
                               "cannot go on exactly")
        alive = []
        for w in self.workers:
            try:
                ray.get(w.pid.remote(), timeout=30)
                alive.append(w)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                ray.kill(w, no_restart=True)
                alive.append(self._spawn())
        self.workers = alive
        snap = self.snapshot
        self._load_workers()
        ray.get([w.restore.remote(state) for w, state in zip(self.workers, snap["workers"])])
        table = pickle.loads(snap["table"])
        self.table = Explorer(self.problem, 0.0, 0, None, notify=True)
        self.table.g_min = table["g_min"]
        self.table.dominated = table["dominated"]
        self.table.adopt(table["branches"])
        if table["shard"] is not None:
            self.table.shard = LinkShard.from_state(table["shard"])
        self.inbox = [list(x) for x in snap["inbox"]]
        self.hands = [[] for _ in range(self.size)]  # the dealt branches are back in the table
        self.unheard = [list(x) for x in snap["unheard"]]
        self.running = [[] for _ in range(self.size)]
        self.reserved = [0] * self.size
        self.next_bound = [0.0] * self.size  # every worker's bound with its next step
        self.iterations = snap["iterations"]
        self.trace = list(snap["trace"])
        self.stats = list(snap["stats"])
        recoveries = self.totals["recoveries"] + 1
        self.totals = dict(snap["totals"], recoveries=recoveries)
        if self.stop == "finished":  # a snapshot is never of a finished search: it goes on
            self.stop = None

    # -- reports --------------------------------------------------------------------
    def least_bound(self) -> float:
        """The least bound of every open branch as last reported (progress figures); the
        root's bound for a worker that holds branches and has reported none yet."""
        bounds = [s["least_bound"] if s["least_bound"] is not None else self.root_bound
                  for s in self.stats if s["least_bound"] is not None or s["open"]]
        bounds += [b.bound for hand in self.hands for b in hand]
        return min([*bounds, self.table.least_bound(), self.table.g_min])

    def exact_least_bound(self) -> float:
        """The least bound over every open branch in every worker and every batch in flight."""
        self._drain()
        bounds = ray.get([w.open_bound.remote() for w in self.workers])
        bounds += [b.bound for hand in self.hands for b in hand]
        for ref in (ref for refs in self.inbox for ref in refs):
            batch = ray.get(ref) if isinstance(ref, ray.ObjectRef) else ref
            bounds += [branch.bound for _, branch in unpacked(batch)]
        return min([*bounds, self.table.least_bound(), self.table.g_min])

    def progress(self) -> dict[str, Any]:
        elapsed = self.elapsed()
        return {
            "done": self.stop is not None, "iterations": self.iterations, "best": self.table.g_min,
            "lower_bound": self.least_bound(),
            "open": sum(s["open"] for s in self.stats) + sum(map(len, self.hands)) + self.table.open_count(),
            "records": sum(s.get("records", 0) for s in self.stats)
            + (len(self.table.shard.entries) if self.table.shard is not None else 0),
            "workers": len(self.workers), "elapsed": elapsed,
            "rate": self.iterations / elapsed if elapsed > 0 else 0.0, "memory_mb": self.peak_memory,
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
            found = self.table.shard.entries.get(self.table.final_key)
            finals = [found] if found is not None else []
            records = len(self.table.shard.entries)
        self.histories = gather_histories([(f.record,) for f in finals], self._lookup)
        busy = [s["busy"] for s in self.stats]
        return {
            "worker_cpu": [s["cpu"] for s in self.stats], "coordinator_cpu": time.process_time() - self.cpu,
            "stop": self.stop, "iterations": self.iterations, "trace": list(self.trace),
            "final": finals[0] if finals else None,
            "lower_bound": self.table.g_min if self.stop == "finished" else self.exact_least_bound(),
            "memory_mb": self.peak_memory, "coordinator_memory_mb": self.coordinator_memory, "link_records": records,
            "elapsed": self.elapsed(), "worker_busy": busy, "workers": self.size,
            "link_table": self.settings["link_table"], **self.totals,
        }

    def lookup(self, records: set[int]) -> dict[int, list]:
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

    def paths(self, trails: list[tuple]) -> dict[int, list]:
        """The first history of every record on the paths that ``trails`` followed,
        fetched for all of them at once (see :func:`linking.gather_histories`).
        Improvements' mappings are rebuilt from this in one call while the search runs,
        instead of a call per record that leaves the workers without steps meanwhile."""
        return gather_histories(trails, self.lookup, first=True)

    def _lookup(self, records: set[int]) -> dict[int, list]:
        found = self.table.shard.lookup(records) if self.table.shard is not None else {}
        # answered between the expansions of a running step, not after the steps queued there
        calls = [w.lookup.options(concurrency_group=LOOKUPS).remote(records) for w in self.workers]
        for part in ray.get(calls):
            found.update(part)
        return found
