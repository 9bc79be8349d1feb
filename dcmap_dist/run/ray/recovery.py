"""Recovery from lost workers: the coordinator's recovery (:class:`Recovery`), and the
parts it is made of: which workers still answer, which of them must start anew and which
nodes are suspect (:func:`sort_out`), where a replacement may go (:func:`free_spots`),
and a snapshot's state merged to be shared out over another number of workers
(:func:`merged`). A worker is lost when Ray says so (:data:`LOST`) or when it has not
answered in time (:class:`~.crew.WorkerSilent`)."""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ray

from ...limits import StopReason
from ...search import batches
from ...search.engine import share_state
from ...search.problem import Problem
from ...search.state import SearchState
from .crew import INTERRUPTED_SECONDS, POLL_SECONDS
from .exchange import Exchange
from .protocol import LOOKUPS, Snapshot, StepReport, WorkersLost
from .search import Search

__all__ = ["LOST", "PING_SECONDS", "PLACE_SECONDS", "Recovery", "answering", "free_spots", "merged", "said",
           "sort_out"]

PLACE_SECONDS = 60.0  # how long a new worker may take to start (Ray starts its process) before it is given up
PING_SECONDS = 10.0  # how long a worker may take to answer whether it lives, in a recovery
# what says a worker is lost: Ray's word that it died or is unreachable, a batch it made lost
# with its node (a step that takes it fails), or no answer in time (WorkerSilent)
LOST = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError)


def answering(actors: list[Any], seconds: float, grace: float, halted: Callable[[], float | None]) -> set[int]:
    """The indices of the ``actors`` whose ping, asked in their lookups thread (a live
    worker answers it even while its queued steps wait on a lost worker's batches),
    answers within ``seconds``; once the search is interrupted (``halted()`` gives when,
    else None), within ``grace`` seconds of the interruption."""
    pings = {actor.pid.options(concurrency_group=LOOKUPS).remote(): i for i, actor in enumerate(actors)}
    answered: set[int] = set()
    start = time.perf_counter()
    deadline = start + seconds
    while pings:
        when = halted()
        if when is not None:
            deadline = min(deadline, max(when, start) + grace)
        if time.perf_counter() >= deadline:
            break
        ready, _ = ray.wait(list(pings), num_returns=len(pings), timeout=POLL_SECONDS)
        for ref in ready:
            i = pings.pop(ref)
            try:
                ray.get(ref)
                answered.add(i)
            except ray.exceptions.RayError:
                pass
    return answered


def sort_out(actors: list[Any], nodes: list[str | None], answered: set[int],
             fed: list[set[int]] | None) -> tuple[list[Any], set[str], list[str]]:
    """The ``actors`` that go on: those that ``answered`` and whose steps take no batch of
    one that did not (``fed``: the workers whose batches each one's steps take; None:
    not known, every one starts anew), since those would wait for the batches until Ray
    gives them up (as long as Ray takes to notice a lost node). The others are killed.
    Also the suspect nodes: those of workers that did not answer, where none did, other
    than this one (Ray may report a lost node alive, with its CPUs free, for many
    seconds: no replacement is placed there); and the nodes of live workers started anew
    (a CPU each, free again). ``nodes``: each actor's, where known."""
    silent = set(range(len(actors))) - answered
    live, suspects, freed, sound = [], set(), [], {ray.get_runtime_context().get_node_id()}
    for i, actor in enumerate(actors):
        node = nodes[i] if i < len(nodes) else None
        stuck = fed is None or bool(fed[i] & silent)
        if i in answered and not stuck:
            live.append(actor)
            sound.add(node)
        else:
            ray.kill(actor, no_restart=True)
            if i in answered:
                sound.add(node)
                freed.append(node)
            else:
                suspects.add(node)
    return live, suspects - sound - {None}, [node for node in freed if node is not None]


def said(error: Exception | None) -> str:
    """An error's first line, short."""
    if error is None:
        return "no answer"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def merged(snap: Snapshot, problem: Problem) -> SearchState:
    """A snapshot's whole state in one (each worker's share, the coordinator's, the
    batches in flight as arrivals, the notices unheard as dominated records), to be
    shared out over another number of workers (of a search of ``problem``)."""
    merged = pickle.loads(snap.own)
    histories = dict(merged.histories.items())
    for part in snap.workers:
        state = share_state(problem, pickle.loads(part).share)
        merged.branches += state.branches
        merged.arrivals += state.arrivals
        merged.entries.update(state.entries)
        histories.update(state.histories.items())
        merged.dominated.update(state.dominated)
    merged.histories = histories
    for inbox in snap.inbox:
        for batch in inbox:
            if batch:
                merged.arrivals += batches.decode(batch, problem.topo.n)
    for notices in snap.unheard:
        merged.dominated.update(notices)
    return merged


def free_spots(cpus: float, suspects: set[str]) -> list[str]:
    """A node for each worker of ``cpus`` CPUs that the live nodes other than the
    ``suspects`` have room for now."""
    alive = [node["NodeID"] for node in ray.nodes() if node.get("Alive")]
    try:  # Ray's own view of each node's free resources
        free = ray._private.state.available_resources_per_node()
    except Exception:  # noqa: BLE001 - another Ray layout: count on every live node's CPUs
        free = {node["NodeID"]: node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")}
    spots = []
    for node in (n for n in alive if n not in suspects):
        room = free.get(node, {}).get("CPU", 0.0)
        while room >= cpus - 1e-9:
            spots.append(node)
            room -= cpus
    return spots


class Recovery:
    """The recovery of a ``search`` from lost workers (:meth:`recover`; on fewer workers,
    the snapshot's state is shared out anew by the ``exchange``). What each recovery did
    is noted for the driver (:attr:`notes`)."""

    def __init__(self, search: Search, exchange: Exchange) -> None:
        self.search = search
        self.exchange = exchange
        self.notes: list[str] = []  # what the recoveries since the last turn did (for the driver)
        self.freed: list[str] = []  # nodes of live workers a recovery started anew (a CPU each)

    def recover(self, lost: Exception | None = None) -> None:
        """A worker was lost (``lost``: what said so): roll every worker back to the
        latest snapshot, on the workers that live and replacements placed on live
        nodes, or on fewer workers when no CPU is left for one. Anything that fails
        meanwhile (another worker lost, Ray itself) ends in :class:`WorkersLost`."""
        snap = self.search.snapshots.latest
        if snap is None:
            raise WorkersLost(f"a worker was lost ({said(lost)}) and no snapshot was taken (snapshots are off), "
                              "so the search cannot go on exactly")
        for attempt in range(3):  # a node lost takes its workers one after another
            try:
                self._roll_back(snap, lost)
                return
            except LOST as again:
                lost = again
            except WorkersLost:
                raise
            except Exception as exc:  # noqa: BLE001 - Ray's own failures: the lost-Ray path, not a bug report
                raise WorkersLost(f"the recovery from a lost worker failed: {said(exc)}") from exc
        raise WorkersLost(f"workers went on being lost during the recovery ({said(lost)})")

    def _roll_back(self, snap: Snapshot, lost: Exception | None) -> None:
        """One attempt of :meth:`recover`: every worker back to ``snap``."""
        search, crew = self.search, self.search.crew
        started = time.perf_counter()
        before, rolled = crew.size, search.iterations - snap.iterations
        live, suspects = self._live_actors()
        answered, missing = len(live), crew.requested - len(live)
        if missing > 0 and search.stop != StopReason.INTERRUPTED:
            live += self.replacements(missing, suspects)
        if not live:
            raise WorkersLost(f"every worker was lost ({said(lost)}) and no live node has a CPU free for another")
        crew.actors = live
        now = search.totals  # what the recoveries and snapshots cost is not undone
        totals = replace(snap.totals, recoveries=now.recoveries + 1, rolled_back=now.rolled_back + rolled,
                         coordinator_busy=now.coordinator_busy, snapshots=now.snapshots,
                         snapshot_seconds=now.snapshot_seconds, snapshot_longest=now.snapshot_longest)
        if len(live) == len(snap.workers):  # as many workers as the snapshot's: each takes its own share back
            search.build(pickle.loads(snap.own), snap.g_min, snap.iterations, snap.trace, totals, list(snap.reports),
                         snap.inbox, snap.unheard, PLACE_SECONDS)
            crew.save_get([slot.actor.restore.remote(state) for slot, state in zip(search.slots, snap.workers)])
        else:  # the snapshot's state shared out anew, as a resumption on this many workers is
            whole = merged(snap, search.engine.problem)
            empty = [[] for _ in range(crew.size)]
            search.build(SearchState(), snap.g_min, snap.iterations, snap.trace, totals,
                         [StepReport() for _ in range(crew.size)], empty, empty, PLACE_SECONDS)
            self.exchange.distribute(whole)
        if search.stop == StopReason.FINISHED:  # a snapshot is never of a finished search: it goes on
            search.stop = None
        self.notes.append(
            f"a worker was lost ({said(lost)}); the search went back to its snapshot at iteration "
            f"{snap.iterations:,} ({rolled:,} iterations to do again) and goes on with {crew.size} workers"
            f"{'' if crew.size == before else f' (was {before})'}: {answered} went on, {len(live) - answered} "
            f"started of {missing} missing; the recovery took {time.perf_counter() - started:.1f} s")

    def _live_actors(self) -> tuple[list[Any], set[str]]:
        """The workers that answer within :data:`PING_SECONDS` and were fed by none that
        did not (the others are killed), and the suspect nodes (:func:`sort_out`)."""
        search, crew = self.search, self.search.crew
        # a live worker answers at once: once interrupted, no need to wait long
        answered = answering(crew.actors, min(crew.silent, PING_SECONDS), INTERRUPTED_SECONDS, search.interrupted)
        fed = [set().union(*slot.fed) for slot in search.slots] if len(search.slots) == len(crew.actors) else None
        live, suspects, self.freed = sort_out(crew.actors, crew.nodes, answered, fed)
        return live, suspects

    def replacements(self, wanted: int, suspects: set[str]) -> list[Any]:
        """Up to ``wanted`` new workers, on nodes Ray reports alive with a CPU free, but
        not on the ``suspects`` (nodes of lost workers); those not started within
        :data:`PLACE_SECONDS` (or before the search is interrupted) are given up."""
        crew = self.search.crew
        spots = (self.freed + free_spots(crew.cpus, suspects))[:wanted]
        self.freed = []
        if not spots:
            return []
        started = [crew.spawn(node) for node in spots]
        answered = answering(started, PLACE_SECONDS, 0.0, self.search.interrupted)
        for i, actor in enumerate(started):
            if i not in answered:
                ray.kill(actor, no_restart=True)
        return [actor for i, actor in enumerate(started) if i in answered]
