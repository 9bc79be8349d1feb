"""The rules of a worker's step, on both of its sides and without Ray: the engine a
worker searches with (:func:`worker_engine`), how the coordinator hands out
completions (:func:`deliver`), what it puts in a worker's next step
(:func:`next_order`), what the worker does with its engine in a step
(:func:`take_step`), and how the coordinator takes the step's report and batches in
(:func:`take_in`, :func:`notify`). The coordinator's turns and exchange
(:mod:`.turns`, :mod:`.exchange`) and the worker actor (:mod:`.worker`) apply them over
Ray; the model of many workers
(:mod:`dcmap_dist.run.model`) applies them in one process, in rounds."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Sequence
from typing import Any

from ...limits import Limits, Stopwatch
from ...search import batches
from ...search.engine import Arrival, Engine, new_engine
from ...search.batches import rows_in
from ...search.linking import route
from ...search.problem import Problem
from .protocol import SearchSpec, StepOrder, StepReport, Totals
from .steps import WorkerSlot

__all__ = ["deliver", "next_order", "notify", "take_in", "take_step", "worker_engine"]


def worker_engine(spec: SearchSpec, index: int, sharded: bool, workers: int, owner: int) -> Engine:
    """The engine of worker ``index`` of ``workers``: its own random stream, and shard
    ``index`` of the link table (its records numbered as owner ``owner``) when
    ``sharded``, else none (the coordinator holds the table); logging its work if the
    spec says so."""
    engine = new_engine(spec.problem(), spec.alpha, spec.seed + index, owner if sharded else None, index,
                        workers if sharded else 1)
    if spec.log:
        engine.keep_log()
    return engine


def deliver(slots: list[WorkerSlot], arrivals: list[Arrival], problem: Problem,
            dumps: Callable[[object], bytes]) -> None:
    """Completions (with the table sharded) into the inboxes of the owners of their keys,
    one batch per owner (:mod:`dcmap_dist.search.batches`; a model's messages pickled
    with ``dumps``), settled in their next steps."""
    owned: dict[int, list[Arrival]] = {}
    for key, branch in arrivals:
        owned.setdefault(route(key, len(slots)), []).append((key, branch))
    for owner, batch in owned.items():
        slots[owner].receive(batches.encode(batch, problem.topo.n, batches.codes_fit(problem), dumps),
                             min(branch.bound for _, branch in batch))


def next_order(slot: WorkerSlot, *, g_min: float, iterations: int, elapsed: float, seconds: float,
               limits: Limits, allowance: int | None, expansions: int | None, destinations: int,
               bound: bool) -> tuple[StepOrder, list[Any]]:
    """The order of ``slot``'s next step and the batches it takes in: what waits for it
    (its inbox, the branches dealt to it, the notices it has not heard) is taken out of
    the slot, and its ``allowance`` of an iteration limit reserved (None: no limit). The
    step runs ``seconds``, or, with ``expansions``, until it has expanded that many
    branches (its length counted in expansions, not on a clock)."""
    own = slot.report.iterations
    order = StepOrder(g_min=g_min, notices=slot.unheard, branches=slot.hand, iterations=iterations,
                      local_iterations=own, elapsed=elapsed, seconds=seconds if expansions is None else math.inf,
                      limits=limits, max_iterations=None if allowance is None else own + allowance,
                      destinations=destinations, bound=bound, expansions=expansions)
    # by sender (the coordinator first), as the model of many workers delivers them, not in
    # the order the senders' steps happened to end: which of two rival arrivals is settled
    # first decides how many are stopped (dominance by fewer limits)
    inbox = [slot.inbox[k] for k in sorted(range(len(slot.inbox)), key=slot.inbox_from.__getitem__)]
    slot.reserved = allowance or 0
    slot.fed_bounds.append(slot.waiting_bound)
    slot.inbox, slot.inbox_from, slot.hand, slot.unheard, slot.waiting_bound = [], [], [], [], math.inf
    return order, inbox


def take_step(engine: Engine, order: StepOrder, arrived: Sequence[bytes], start: float,
              dumps: Callable[[object], bytes] = pickle.dumps) -> tuple[StepReport, list[bytes]]:
    """A worker's step on its ``engine``: the news and the arrivals (``arrived``) taken in,
    the loop run until ``start + order.seconds`` (a ``time.perf_counter()``) or for
    ``order.expansions`` expansions, then its report (without its times: the worker's)
    and its outgoing batches, one per destination (a model's messages pickled with
    ``dumps``)."""
    engine.hear(order.g_min, order.notices)
    watch = Stopwatch(order.limits)
    # stamps: the search's count when the step was sent, plus what this worker did since
    # the coordinator last heard from it (a step may have run in between)
    engine.place(order.iterations - order.local_iterations, order.elapsed, watch)
    received = 0
    before = engine.iterations
    most = order.max_iterations
    if order.expansions is not None:
        most = before + order.expansions if most is None else min(most, before + order.expansions)
    # the Python engine's arrivals are tens of thousands of small objects: the collector
    # would scan them over and over while they are taken in
    with engine.collector_paused():
        engine.adopt(order.branches)
        for batch in arrived:
            received += engine.receive_batch(batch)
        stop = engine.step(watch, until=start + order.seconds, max_iterations=most)
        lower = engine.least_bound() if order.bound else None  # O(open branches): when asked
        out = engine.take_batches(order.destinations, dumps)
    report = StepReport(
        stop=stop, iterations=engine.iterations, expanded=engine.iterations - before,
        open_branches=engine.open_count(), link_records=engine.link_records, least_bound=lower,
        g_min=engine.g_min, improvements=engine.take_improvements(), notices=engine.take_notices(),
        received=received, sent=[rows_in(batch) for batch in out], bytes=sum(len(b) for b in out),
        sent_bounds=[batches.least_bound(batch, engine.problem.topo.n) for batch in out],
        memory_mb=watch.peak_memory_mb)
    return report, out


def take_in(slots: list[WorkerSlot], i: int, report: StepReport, outgoing: Sequence[Any], sharded: bool,
            totals: Totals) -> list[Any]:
    """Worker ``i``'s ended step into its slot (its last least bound kept when the step
    was not asked for one) and into the ``totals``, the records it found dominated into
    every worker's next step (:func:`notify`); its ``outgoing`` batches (one per
    destination) into the inboxes of their owners with the table sharded, else
    returned, for the coordinator's table."""
    slot = slots[i]
    taken = slot.fed_bounds.pop(0) if slot.fed_bounds else math.inf  # the batches this step took in
    if report.least_bound is None:  # not asked this step: keep the last one known, and what it took in
        report.least_bound = slot.report.least_bound
        slot.carried_bound = min(slot.carried_bound, taken)
    else:  # its open set now: it covers all it took in
        slot.carried_bound = math.inf
    slot.report = report
    slot.memory_mb = report.memory_mb
    totals.steps += 1
    totals.received += report.received
    totals.sent += sum(report.sent)
    totals.bytes += report.bytes
    notify(slots, report.notices)
    arrivals = []
    for j, count in enumerate(report.sent):
        if count:
            if sharded:
                slots[j].receive(outgoing[j], report.sent_bounds[j], i)
                slots[j].sources.add(i)
            else:
                arrivals.append(outgoing[j])
    return arrivals


def notify(slots: list[WorkerSlot], notices: list[int]) -> None:
    """Dominated records, for every worker's next step."""
    if notices:
        for slot in slots:
            slot.unheard.extend(notices)
