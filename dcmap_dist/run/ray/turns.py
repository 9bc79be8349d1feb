"""The coordinator's turns (see :mod:`dcmap_dist.run.ray.driver` for the design): each
starts the steps of the free workers that have work and takes in those that end, never
waiting for a worker past the silence that makes it lost. A step's report and batches
are taken in by the rules of :mod:`.rules`; what the coordinator passes on besides is
:mod:`.exchange`'s."""

from __future__ import annotations

import time

import ray

from ...limits import StepEnd, StopReason
from .crew import WorkerSilent
from .exchange import Exchange
from .rules import next_order, take_in
from .search import Search
from .steps import BOUND_SECONDS, QUEUED_STEPS, WorkerSlot, iteration_caps, step_seconds

__all__ = ["LAG_STEPS", "Turns"]

LAG_STEPS = 10  # a step running this many step lengths after its worker's last answer is late


class Turns:
    """The worker steps of a ``search``, in turns: steps of :attr:`step` seconds, up to
    :attr:`depth` queued per worker, overlapping (a worker starts its next step as soon
    as its last one is taken in, with what was addressed to it meanwhile, and never waits
    for the others)."""

    def __init__(self, search: Search, exchange: Exchange) -> None:
        self.search = search
        self.exchange = exchange
        self.step = step_seconds(search.crew.requested)
        self.depth = QUEUED_STEPS  # steps queued per worker (1 under an iteration limit: caps need each end)

    def turn(self, until: float) -> None:
        """Start a step on every free worker that has work, then absorb the steps that
        have ended (at least one, waiting no longer than ``until``, a perf_counter)."""
        search = self.search
        busy = time.perf_counter()
        self.start_ready()
        running = {slot.running[0][0]: i for i, slot in enumerate(search.slots) if slot.running}
        search.totals.coordinator_busy += time.perf_counter() - busy
        if running:
            # waits no longer than the turn, nor past the moment a worker would count as lost
            lost_at = min(search.slots[i].heard for i in running.values()) + search.crew.silent
            ready, rest = ray.wait(list(running), num_returns=1,
                                   timeout=max(0.0, min(until, lost_at) - time.perf_counter()))
            if not ready:
                self.check_silence()
                return
            if rest:
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            busy = time.perf_counter()
            for ref in ready:
                self.absorb(running[ref])
            search.totals.coordinator_busy += time.perf_counter() - busy
        if search.stop is None and self.finished():
            search.stop = StopReason.FINISHED

    def start_ready(self) -> None:
        """Fill each worker's queue of steps (up to ``depth``) while it holds open
        branches or has arrivals or branches waiting for it, each step with its share
        of the iterations left (if limited)."""
        search = self.search
        self.exchange.deal_out()
        ready = [i for i, slot in enumerate(search.slots) if len(slot.running) < self.depth and slot.has_work()]
        limit = search.watch.limits.max_iterations
        left = None if limit is None else max(0, limit - search.iterations - sum(s.reserved for s in search.slots))
        caps = iteration_caps(left, ready, search.crew.size)
        for i in ready:
            slot = search.slots[i]
            if caps[i] != 0:
                while len(slot.running) < self.depth and slot.has_work():
                    self.start(slot, caps[i])

    def start(self, slot: WorkerSlot, allowance: int | None) -> None:
        """Start a worker's next step, with what waits for it, ``G_min``, the notices it
        has not heard, and at most ``allowance`` expansions (None: no limit)."""
        search = self.search
        destinations = search.crew.size if search.sharded else 1
        now = time.perf_counter()
        if not slot.running:  # it has been idle: its silence counts from now
            slot.heard = now
        bound = now >= slot.next_bound  # its least bound for progress, now and then
        if bound:
            slot.next_bound = now + BOUND_SECONDS
        order, inbox = next_order(slot, g_min=search.engine.g_min, iterations=search.iterations,
                                  elapsed=search.elapsed(), seconds=self.step, limits=search.watch.remaining(),
                                  allowance=allowance, expansions=search.options.step_iterations,
                                  destinations=destinations, bound=bound)
        slot.running.append(slot.actor.step.options(num_returns=1 + destinations).remote(order, *inbox))
        slot.fed.append(slot.sources)
        slot.sources = set()

    def settle_arrivals(self) -> None:
        """Have every worker settle the batches waiting for it, expanding nothing: a
        stopped search's best mapping may be a completion still on its way to the
        final key's owner."""
        self.drain()
        for slot in self.search.slots:
            if slot.inbox:
                self.start(slot, 0)
        self.drain()

    def absorb(self, i: int) -> None:
        """Take in worker ``i``'s ended step: its counters, improvements and notices, and
        its outgoing batches (into the inboxes of their owners, or settled on the
        coordinator when it holds the table)."""
        search = self.search
        slot = search.slots[i]
        refs = slot.running[0]
        report = search.crew.get(refs[0], max(1.0, slot.heard + search.crew.silent - time.perf_counter()),
                                 interrupted=search.interrupted)
        slot.heard = time.perf_counter()
        slot.running.pop(0)
        slot.fed.pop(0)
        slot.reserved = 0
        arrivals = take_in(search.slots, i, report, refs[1:], search.sharded, search.totals)
        search.count(report)
        search.watch.sample_memory()
        if report.stop not in (StepEnd.IDLE, StepEnd.BUDGET, StopReason.MAX_ITERATIONS):
            search.stop = report.stop
        if arrivals:
            self.exchange.settle(arrivals)

    def drain(self) -> None:
        """Absorb every running step without starting new ones: afterwards nothing runs
        and every batch in flight is in an inbox (a consistent cut)."""
        for i, slot in enumerate(self.search.slots):
            while slot.running:
                self.absorb(i)

    def finished(self) -> bool:
        """Whether the search is proven: nothing runs, and no open branch, batch or
        dealt branch is left anywhere."""
        search = self.search
        return (search.engine.open_count() == 0
                and not any(slot.running or slot.inbox or slot.hand or slot.report.open_branches
                            for slot in search.slots))

    def check_silence(self) -> None:
        """A :class:`WorkerSilent` if a worker with a step running has not answered for
        the silence that makes it lost."""
        now = time.perf_counter()
        for slot in self.search.slots:
            if slot.running and now - slot.heard >= self.search.crew.silent:
                raise WorkerSilent(f"a worker has not answered for {now - slot.heard:.0f} s")

    def lagging(self) -> bool:
        """Whether a running step is late (:data:`LAG_STEPS` step lengths, 2 s at least): a
        snapshot then waits, since its drain would wait for that step (a frozen node's
        for the whole silence, with no progress meanwhile)."""
        late = time.perf_counter() - max(2.0, LAG_STEPS * self.step)
        return any(slot.running and slot.heard < late for slot in self.search.slots)
