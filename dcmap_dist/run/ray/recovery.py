"""Recovery from lost workers, the parts the coordinator's recovery
(:meth:`~.coordinator.Coordinator._recover`) is made of: which workers still answer,
which of them must start anew and which nodes are suspect (:func:`sort_out`), where a
replacement may go (:func:`free_spots`), and a snapshot's state merged to be shared out
over another number of workers (:func:`merged`). A worker is lost when Ray says so
(:data:`LOST`) or when it has not answered in time (:class:`WorkerSilent`)."""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from typing import Any

import ray

from ...search import batches
from ...search.engine import share_state
from ...search.problem import Problem
from ...search.state import SearchState
from .protocol import LOOKUPS, Snapshot

__all__ = ["INTERRUPTED_SECONDS", "LOST", "PING_SECONDS", "PLACE_SECONDS", "POLL_SECONDS", "WorkerSilent",
           "answering", "free_spots", "merged", "said", "sort_out"]

PLACE_SECONDS = 60.0  # how long a new worker may take to start (Ray starts its process) before it is given up
PING_SECONDS = 10.0  # how long a worker may take to answer whether it lives, in a recovery
POLL_SECONDS = 0.25  # how often a wait looks whether the search was halted meanwhile
INTERRUPTED_SECONDS = 5.0  # a signal stopped the search: a worker that takes longer to answer is lost
# what says a worker is lost: Ray's word that it died or is unreachable, a batch it made lost
# with its node (a step that takes it fails), or no answer in time (WorkerSilent)
LOST = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError)


class WorkerSilent(ray.exceptions.RayActorError):
    """A worker has not answered within its time (a frozen node, a cut network): it is
    treated as lost, as a dead one is."""

    def __init__(self, what: str) -> None:
        super().__init__(error_msg=what)
        self.what = what

    def __str__(self) -> str:
        return self.what


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
