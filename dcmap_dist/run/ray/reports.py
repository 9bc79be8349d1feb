"""What the coordinator reports of a search (see :mod:`dcmap_dist.run.ray.driver` for the
design): where it stands while it runs, its results once it has stopped (the final link
entry, with every history it reaches gathered on the coordinator), and the histories of
records looked up in every shard."""

from __future__ import annotations

import time

import ray

from ...limits import StopReason
from ...progress import Progress
from ...search import batches
from ...search.histories import Histories, gather_histories
from .protocol import LOOKUPS, Results, Statistics
from .search import Search
from .turns import Turns

__all__ = ["Reports"]


class Reports:
    """The reports of a ``search`` whose steps run in ``turns``: its progress, its results,
    and the histories they reach (:attr:`histories`, gathered with the results)."""

    def __init__(self, search: Search, turns: Turns) -> None:
        self.search = search
        self.turns = turns
        self.root_bound = 0.0  # a lower bound for a worker whose own is not known yet
        self.histories: dict[int, Histories] = {}  # every history the final entry reaches, once finished

    def least_bound(self) -> float:
        """The least bound of every open branch as last reported (progress figures), and of
        every branch sent to a worker since (:meth:`WorkerSlot.unreported_bound`); the
        root's bound for a worker that holds branches and has reported none yet."""
        search = self.search
        bounds = [s.report.least_bound if s.report.least_bound is not None else self.root_bound
                  for s in search.slots if s.report.least_bound is not None or s.report.open_branches]
        bounds += [b.bound for slot in search.slots for b in slot.hand]
        bounds += [slot.unreported_bound() for slot in search.slots]
        return min([*bounds, search.engine.least_bound(), search.engine.g_min])

    def exact_least_bound(self) -> float:
        """The least bound over every open branch in every worker and every batch in flight."""
        search = self.search
        self.turns.drain()
        bounds = search.crew.save_get([slot.actor.open_bound.remote() for slot in search.slots])
        bounds += [b.bound for slot in search.slots for b in slot.hand]
        for ref in (ref for slot in search.slots for ref in slot.inbox):
            batch = search.crew.get(ref) if isinstance(ref, ray.ObjectRef) else ref
            bounds.append(batches.least_bound(batch, search.engine.problem.topo.n))
        return min([*bounds, search.engine.least_bound(), search.engine.g_min])

    def progress(self) -> Progress:
        """Where the search stands (its lower bound as last reported by the workers)."""
        search = self.search
        elapsed = search.elapsed()
        return Progress(
            iterations=search.iterations, best_cost=search.engine.g_min, lower_bound=self.least_bound(),
            open_branches=sum(slot.holding() for slot in search.slots) + search.engine.open_count(),
            elapsed_seconds=elapsed, rate=search.iterations / elapsed if elapsed > 0 else 0.0,
            peak_memory_mb=search.watch.peak_memory_mb,
            link_records=sum(slot.report.link_records for slot in search.slots) + search.engine.link_records,
            workers=search.crew.size)

    def results(self) -> Results:
        """The stopped search's results, the histories of its final entry gathered into
        :attr:`histories` (raises Ray's error if a worker is lost meanwhile)."""
        search, crew = self.search, self.search.crew
        self.turns.settle_arrivals()
        if search.sharded:
            finals = [e for e in crew.save_get([slot.actor.final_entry.remote() for slot in search.slots])
                      if e is not None]
            records = sum(crew.save_get([slot.actor.link_records.remote() for slot in search.slots]))
        else:
            found = search.engine.final_entry()
            finals = [found] if found is not None else []
            records = search.engine.link_records
        self.histories = gather_histories([(f.record,) for f in finals], self.lookup)
        totals = search.totals
        statistics = Statistics(
            workers=crew.size, link_table=search.options.link_table, steps=totals.steps, elapsed=search.elapsed(),
            worker_iterations=[slot.report.iterations for slot in search.slots],
            worker_busy=[slot.report.busy for slot in search.slots],
            worker_cpu=[slot.report.cpu for slot in search.slots],
            coordinator_busy=totals.coordinator_busy, coordinator_cpu=time.process_time() - search.cpu,
            coordinator_memory_mb=search.coordinator_memory, sent=totals.sent, received=totals.received,
            bytes=totals.bytes, snapshots=totals.snapshots, snapshot_seconds=totals.snapshot_seconds,
            snapshot_longest_seconds=totals.snapshot_longest,
            recoveries=totals.recoveries, rolled_back=totals.rolled_back,
            workers_lost=crew.requested - crew.size)
        return Results(
            stop=search.stop, iterations=search.iterations, trace=list(search.trace),
            final=finals[0] if finals else None,
            lower_bound=search.engine.g_min if search.stop == StopReason.FINISHED else self.exact_least_bound(),
            peak_memory_mb=search.watch.peak_memory_mb, link_records=records, statistics=statistics)

    def lookup(self, records: set[int]) -> dict[int, Histories]:
        """The histories of ``records`` from the coordinator's table and every worker's
        shard (raises Ray's error if a worker is lost)."""
        search = self.search
        found = search.engine.lookup(records)
        # answered between the expansions of a running step, not after the steps queued there
        calls = [slot.actor.lookup.options(concurrency_group=LOOKUPS).remote(records) for slot in search.slots]
        for part in search.crew.save_get(calls):
            found.update(part)
        return found
