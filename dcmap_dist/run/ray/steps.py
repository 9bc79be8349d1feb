"""The coordinator's worker steps (see :mod:`dcmap_dist.run.ray.driver` for the design):
starting each worker's next steps with what waits for it, taking ended steps in,
passing batches to their owners (or settling them, with the table on the
coordinator), dealing branches out, sharing an iteration limit, and telling when the
search is finished. Mixed into :class:`coordinator.Coordinator`, whose
:meth:`~coordinator.Coordinator.begin` sets the attributes used here."""

from __future__ import annotations

import time

import ray

from ...limits import StepEnd, StopReason
from ...search.problem import within
from .protocol import StepOrder
from .worker import unpacked

STEP_SECONDS = 0.1  # how long a worker runs its loop per step
QUEUED_STEPS = 2  # steps submitted to a worker at once (the running one and the next)
BOUND_SECONDS = 5.0  # how often a worker computes its least open bound (it scans its open set)


class WorkerSteps:
    """The worker steps of a :class:`coordinator.Coordinator` (whose :meth:`begin` sets
    the attributes read here: workers, running steps, inboxes, hands, notices, stats)."""

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
            self.stop = StopReason.FINISHED

    def _has_work(self, i: int) -> bool:
        return bool(self.stats[i].open_branches or self.inbox[i] or self.hands[i])

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
        destinations = self.size if self.sharded else 1
        now = time.perf_counter()
        bound = now >= self.next_bound[i]  # its least bound for progress, now and then
        if bound:
            self.next_bound[i] = now + BOUND_SECONDS
        own = self.stats[i].iterations
        order = StepOrder(self.explorer.g_min, self.unheard[i], self.hands[i], self.iterations, own, self.elapsed(),
                          STEP_SECONDS, self.watch.remaining(), None if allowance is None else own + allowance,
                          destinations, bound)
        self.running[i].append(self.workers[i].step.options(num_returns=1 + destinations).remote(
            order, *self.inbox[i]))
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
        if s.least_bound is None:  # not asked this step: keep the last one known
            s.least_bound = self.stats[i].least_bound
        self.stats[i] = s
        self.totals["steps"] += 1
        self.iterations += s.expanded
        self.trace.extend(s.improvements)
        self.explorer.g_min = min(self.explorer.g_min, s.g_min)
        self._notify(s.notices)
        self.totals["received"] += s.received
        self.totals["sent"] += sum(s.sent)
        self.totals["bytes"] += s.bytes
        self.worker_memory[i] = s.memory_mb
        self.watch.sample_memory()
        arrivals = []
        for j, count in enumerate(s.sent):
            if count:
                if self.sharded:
                    self.inbox[j].append(refs[1 + j])
                else:
                    arrivals.append(refs[1 + j])
        if s.stop not in (StepEnd.IDLE, StepEnd.BUDGET, StopReason.MAX_ITERATIONS):
            self.stop = s.stop
        if arrivals:
            self.explorer.iteration_offset = self.iterations
            self.explorer.time_offset = self.elapsed()
            for batch in ray.get(arrivals):
                self.explorer.receive(unpacked(batch))
            self.trace.extend(self.explorer.improvements)
            self.explorer.improvements = []
            self._notify(self.explorer.notices)
            self.explorer.notices = []

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
                and self.explorer.open_count() == 0 and all(s.open_branches == 0 for s in self.stats))

    def _deal(self) -> None:
        """The coordinator's surviving branches, cheapest first, dealt to the workers
        holding the fewest open branches first, free workers before busy ones
        (coordinator placement only); each takes its hand with its next step."""
        if self.explorer.open_count() == 0:
            return
        loads = [(bool(self.running[i]), self.stats[i].open_branches + len(self.hands[i])) for i in range(self.size)]
        order = sorted(range(self.size), key=loads.__getitem__)
        k = 0
        while (branch := self.explorer.queue.pop(True)) is not None:
            if within(branch.bound, self.explorer.g_min) and branch.link not in self.explorer.dominated:
                self.hands[order[k % self.size]].append(branch)
                k += 1

    def _iteration_caps(self, ready: list[int]) -> list[int | None]:
        """Per-worker iteration allowances for the steps about to start, so the total
        never passes the limit: what is left after the allowances of running steps is
        shared among the ``ready`` workers (0: that worker waits)."""
        limit = self.watch.limits.max_iterations
        if limit is None:
            return [None] * self.size
        left = max(0, limit - self.iterations - sum(self.reserved))
        caps = [0] * self.size
        for k, i in enumerate(ready):
            caps[i] = left // len(ready) + (1 if k < left % len(ready) else 0)
        return caps
