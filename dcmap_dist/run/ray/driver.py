"""The distributed DCMAP search on Ray: one coordinator actor
(:class:`coordinator.Coordinator`) and W worker actors (:class:`worker.Worker`); this
module attaches to Ray, keeps the pool of actors, and runs a search from the driver.

Every worker runs the serial loop (:class:`explorer.Explorer`) on its own open
branches, in steps of about :data:`steps.STEP_SECONDS`. A step takes the batches of
completions addressed to the worker since its last step, the global ``G_min`` and
the dominance notices it has not heard; it returns its statistics and its outgoing
batches (:func:`worker.packed`, one Ray object per destination, passed on by reference so the
coordinator never unpacks them). Steps are not synchronised in rounds: the
coordinator waits for whichever step ends first, takes it in, and starts that
worker's next step at once, so no worker waits for the slowest one. Each worker
has one step queued behind the one it runs (:data:`steps.QUEUED_STEPS`, unless an
iteration limit is shared out), so it goes from one step to the next without
waiting for the coordinator to take the last one in. A worker with
no open branches and nothing addressed to it rests until something is. Placement
of the link table (``link_table``):

* ``sharded`` (default): worker ``i`` owns the keys that :func:`linking.route`
  sends to ``i``; it settles every arrival at them and keeps the branches that go
  on. Dominance is then always decided, and checked, where the branch lives.
* ``coordinator``: the coordinator owns the whole table (the product brief's
  design). Workers send it every completion; it settles them, deals the survivors
  out to the workers, cheapest first (free and least-loaded workers first), and
  broadcasts dominated records.

Termination: when no step is running, no worker holds an open branch, and no batch
or dealt branch waits for a worker (and the coordinator's pool is empty), the
search is proven; nothing can be in flight, since every batch a step sends is in
an inbox once the coordinator has taken the step in.

A lost worker loses nothing: the coordinator keeps a consistent snapshot of
every worker's state (taken when no step runs, when the batches in flight are its
own objects) and, if a worker dies, starts a fresh one and rolls every worker
back to the snapshot. The work since the snapshot is redone. A worker lost after the
proof, while the coordinator gathers the results, is recovered the same way and the
search goes on from the snapshot to a new proof; the histories of the optimal
mappings are gathered on the coordinator before it reports the results, so the
driver's lookups need no worker.
"""


from __future__ import annotations

import contextlib
import math
import os
import pickle
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import ray
import ray.cloudpickle

from ...cost.base import CostModel
from ...limits import Limits, StopReason, Stopwatch
from ...search.heuristics import incumbent
from ...search.histories import MissingRecord, gather_histories
from ...search.linking import Improvement
from ...search.outcome import Saver, SearchOutcome, announce, outcome
from ...search.branch import Branch
from ...search.problem import Problem, within
from ...search.state import Resumption, SearchState, counters, write_size
from ..loop import Ending, Turn, drive
from .coordinator import Coordinator
from .worker import SearchSpec, unpacked

LINK_TABLES = ("sharded", "coordinator")
PROGRESS_SECONDS = 1.0  # how often the driver hears from the coordinator
REACH_SECONDS = 5.0  # how long an --address HOST:PORT has to answer
# the figures a distributed search reports (in the result's components)
STATISTICS = ("workers", "link_table", "steps", "elapsed", "worker_busy", "worker_cpu", "coordinator_busy",
              "coordinator_cpu", "coordinator_memory_mb", "sent", "received", "bytes", "snapshots",
              "snapshot_seconds", "recoveries")


_pool: dict[tuple[int, float], Any] = {}  # the live coordinator (one at a time), by its size


def coordinator(workers: int) -> Any:
    """A coordinator with ``workers`` live workers, reused across the searches of one Ray
    session. Only one pool lives at a time: another size replaces it (its workers
    die with their coordinator), so pools never wait on each other's CPUs."""
    total = ray.cluster_resources().get("CPU", 1.0)
    cpus = min(1.0, total / (workers + 1))
    key = (workers, cpus)
    handle = _pool.get(key)
    if handle is not None:
        return handle
    for old in _pool.values():
        ray.kill(old)
    _pool.clear()
    handle = _pool[key] = ray.remote(Coordinator).options(num_cpus=0, enable_task_events=False).remote(workers, cpus)
    return handle


def connect(address: str | None, workers: int) -> bool:
    """Attach to Ray (``auto``, ``local`` or ``HOST:PORT``; None: ``local``, a private
    Ray on this machine); true if this call started it. An attached Ray is used as is.

    Checked first, so that a typo costs seconds, not the machine: ``workers`` must not
    exceed the CPUs that Ray offers (this machine's, for a private Ray), and a
    ``HOST:PORT`` must answer. A private Ray starts lean (no dashboard), and its
    processes in a process group of their own (:func:`_own_process_group`)."""
    if ray.is_initialized():
        check_workers(workers, ray.cluster_resources().get("CPU", 0), "this Ray")
        return False
    address = address or "local"
    if address == "local":
        check_workers(workers, len(os.sched_getaffinity(0)), "this machine")
    elif address != "auto":
        _check_reachable(address)
    handlers = {}
    if threading.current_thread() is threading.main_thread():  # Ray replaces SIGTERM's handler
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        # a private Ray offers as many CPUs as there are workers: Ray starts no idle
        # worker processes for the machine's other cores
        cpus = {"num_cpus": workers} if address == "local" else {}
        with _own_process_group():
            ray.init(address=address, include_dashboard=False, logging_level="ERROR",
                     log_to_driver=False, configure_logging=False, **cpus)
    except ConnectionError as exc:
        raise ValueError(f"--address {address}: no Ray cluster answers there ({exc})") from None
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if address != "local":
        try:
            check_workers(workers, ray.cluster_resources().get("CPU", 0), f"the Ray cluster at {address}")
        except ValueError:
            ray.shutdown()
            raise
    return True


def check_workers(workers: int, cpus: float, where: str) -> None:
    """A ValueError unless ``workers`` fit the ``cpus`` of ``where``: each worker is a
    process that searches full time, so more workers than CPUs only share them (and a
    typo such as 10000 would start thousands of processes)."""
    if workers > cpus:
        raise ValueError(f"--workers {workers}: {where} offers {cpus:g} CPUs; give at most {int(cpus)} workers")


def _check_reachable(address: str) -> None:
    """A ValueError within seconds when nothing listens at ``HOST:PORT`` (Ray itself
    would retry for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--address {address}: expected auto, local or HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
    except OSError as exc:
        raise ValueError(f"--address {address}: no Ray cluster answers there ({exc.strerror or exc})") from None


@contextlib.contextmanager
def _own_process_group() -> Iterator[None]:
    """The processes of a Ray started inside (its head, and the workers its raylet
    starts) get a process group of their own: a signal to the user's process group
    (Ctrl-C, ``timeout``, a batch system's SIGTERM) reaches this driver, which stops
    the search, writes its checkpoint and result, and then stops Ray; before, Ray's
    processes died with the driver's and took the search's state with them. They still
    die with the driver if it is killed (Ray ties them to their parent)."""
    services = ray._private.services
    original = getattr(services, "ConsolePopen", None)
    if original is None:  # another Ray layout: its processes share our group
        yield
        return

    class OwnGroup(original):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("process_group", 0)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = OwnGroup
    try:
        yield
    finally:
        services.ConsolePopen = original


def disconnect() -> None:
    """Stop the Ray that :func:`connect` started, with every actor of the cached pools."""
    _pool.clear()
    ray.shutdown()


def ship_by_value(model: CostModel) -> None:
    """Let workers unpickle a user cost defined outside an installed package (a module
    in the working directory, a test file) by sending its module's code along."""
    seen: list[Any] = [model]
    while seen:
        target = seen.pop()
        seen += [getattr(target, name) for name in ("model", "function") if hasattr(target, name)]
        owner = target if isinstance(target, type) or callable(target) and hasattr(target, "__code__") else type(target)
        module = sys.modules.get(getattr(owner, "__module__", "") or "")
        if module is None or module.__name__ in ("__main__", "builtins") or module.__name__.startswith("dcmap_dist"):
            continue
        path = getattr(module, "__file__", "") or ""
        if path and "site-packages" not in path and "dist-packages" not in path:
            ray.cloudpickle.register_pickle_by_value(module)


def distributed_search(problem: Problem, workers: int, settings: dict[str, Any], limits: Limits,
                       on_improvement: Callable | None = None, on_progress: Callable | None = None,
                       saver: Saver | None = None, resume: Resumption | None = None) -> SearchOutcome:
    """Run DCMAP on one connected problem with ``workers`` Ray workers (Ray must be
    connected, see :func:`connect`); the same outcome as :func:`run.serial.dcmap_search`,
    with the same checkpoints (``saver``) and resumption (``resume``). If Ray itself is
    lost, the best mapping heard of (:meth:`RaySearch.lost`)."""
    search = RaySearch(problem, workers, settings, limits, on_improvement, resume)
    try:
        return drive(search, saver, on_progress)
    except ray.exceptions.RayError as exc:
        if isinstance(exc, ray.exceptions.RayTaskError):  # an error of the search itself (a user cost's)
            raise
        return search.lost(exc)


class RaySearch:
    """The distributed search as a backend of the driver loop (:mod:`dcmap_dist.run.loop`):
    a coordinator actor from the pool, run in turns of :data:`PROGRESS_SECONDS`; new
    improvements are announced with their mappings as the driver hears of them."""

    def __init__(self, problem: Problem, workers: int, settings: dict[str, Any], limits: Limits,
                 on_improvement: Callable | None, resume: Resumption | None) -> None:
        self.problem = problem
        self.on_improvement = on_improvement
        spec = SearchSpec(problem.network, problem.graph, problem.model, problem.scheme, problem.keys.kind,
                          problem.use_bound)
        self.first = first = resume.first if resume else incumbent(problem, Stopwatch(limits))
        ship_by_value(spec.model)
        g_min = resume.g_min if resume else first.cost
        try:
            self.handle = coordinator(workers)
            ray.get(self.handle.begin.remote(spec, settings, limits, g_min, resume))
        except ray.exceptions.RayActorError:  # the pool died since its last search: a new one
            _pool.clear()
            self.handle = coordinator(workers)
            ray.get(self.handle.begin.remote(spec, settings, limits, g_min, resume))
        # the cost last announced: a recovery rolls the trace back, so what is new is what is
        # cheaper, not what comes after a count
        announced = _improving(list(resume.trace), first)[-1][2] if resume else math.inf
        self.heard = _Heard(announced, first)
        self.report: dict[str, Any] = {"iterations": resume.iterations if resume else 0,
                                       "lower_bound": -math.inf, "memory_mb": 0.0,
                                       "open": len(resume.state.branches) if resume else 1,
                                       "records": len(resume.state.entries) if resume else 0}

    def advance(self, saver: Saver | None) -> Turn:
        """The coordinator runs the search for a while, stopping in time for the final
        checkpoint (its size judged by the last report); new improvements are announced."""
        handle, heard, first, report = self.handle, self.heard, self.first, self.report
        reserve = saver.reserve(write_size(report["open"], report["records"])) if saver is not None else 0.0
        report = self.report = _advance(handle, reserve)
        fresh = [found for found in _improving(report.pop("trace"), first) if not within(heard.announced, found[2])]
        if fresh:  # the records on the improvements' paths, in one call
            heard.known.update(ray.get(handle.paths.remote([trail for *_, trail in fresh if trail is not None])))
            if fresh[-1][3] is not None:
                heard.best = (fresh[-1][3], fresh[-1][2])
        announce(self.problem, fresh, 0, self.on_improvement, heard.recall, lost=True)
        heard.announced = fresh[-1][2] if fresh else heard.announced
        # a recovery rolls G_min back to the snapshot's; the announced cost was found all the
        # same, so it is still the best known and bounds the optimum
        report["best"] = min(report["best"], heard.announced)
        report["lower_bound"] = min(report["lower_bound"], report["best"])
        return Turn(report["done"], report)

    def halt(self, reason: StopReason) -> None:
        ray.get(self.handle.halt.remote(reason))

    def cut(self) -> tuple[Iterator[SearchState], dict[str, Any]]:
        """A consistent cut, each worker's state fetched as the checkpoint is written."""
        cut = ray.get(self.handle.cut.remote())

        def parts() -> Iterator[SearchState]:
            for ref in cut.workers:
                yield ray.get(ref).state
            yield pickle.loads(cut.own)
            for ref in cut.inbox:
                yield SearchState(arrivals=unpacked(ray.get(ref)))

        return parts(), counters(cut.iterations, cut.elapsed, cut.g_min, _improving(cut.trace, self.first),
                                 self.first, cut.next_owner)

    def finish(self) -> Ending | None:
        """The results, with the histories the final entry reaches (None: a worker was
        lost after the proof, and the search goes on from the last snapshot)."""
        result = ray.get(self.handle.finish.remote())
        if result is None:
            return None
        def fetch(records: set[int]) -> dict[int, bytes]:
            return ray.get(self.handle.lookup.remote(records))

        found = outcome(result["final"], self.first, result["stop"] == StopReason.FINISHED, result["stop"],
                        result["iterations"], _improving(result["trace"], self.first), result["lower_bound"],
                        result["memory_mb"], fetch, result["link_records"],
                        statistics={name: result[name] for name in STATISTICS})
        return Ending(found, self.report)

    def lost(self, error: Exception) -> SearchOutcome:
        """The outcome of a search whose Ray was lost (its node, an out-of-memory kill,
        the coordinator): the best mapping the driver had heard of, not proven, stop
        reason ``ray_lost``. The search's state is gone with Ray: the last checkpoint, if
        any, is where it goes on from."""
        first, heard, report = self.first, self.heard, self.report
        trail, cost = heard.best
        try:
            histories = gather_histories([trail], heard.recall)
        except MissingRecord:
            (trail, cost), histories = (first.trail, first.cost), {}
        lower = min(report.get("lower_bound", -math.inf), cost)
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return SearchOutcome(cost, [(trail, cost, 0)], False, StopReason.RAY_LOST, report.get("iterations", 0),
                             peak_memory_mb=report.get("memory_mb", 0.0), lower_bound=lower, histories=histories,
                             statistics={"lost": reason}, incumbent=(first.trail, first.cost))


def _advance(handle: Any, reserve: float) -> dict[str, Any]:
    """The coordinator's progress figures after it has run the search for a while."""
    return ray.get(handle.advance.remote(PROGRESS_SECONDS, reserve))


class _Heard:
    """What the driver has heard of a distributed search's improvements: the cost last
    announced (a recovery rolls the trace back, so what is new is what is cheaper, not
    what comes after a count), the best one whose mapping it looked up, and the first
    histories of the records on those mappings' paths."""

    def __init__(self, announced: float, first: Branch) -> None:
        self.announced = announced
        self.best: tuple[tuple, float] = (first.trail, first.cost)
        self.known: dict[int, bytes] = {}

    def recall(self, records: set[int]) -> dict[int, bytes]:
        return {r: self.known[r] for r in records if r in self.known}


def _improving(trace: list[Improvement], first: Branch) -> list[Improvement]:
    """The strictly improving subsequence of improvements gathered from all workers, by
    time, starting with the incumbent's."""
    out: list[Improvement] = []
    trace = [(0, 0.0, first.cost, first.trail), *trace]
    for iteration, seconds, cost, trail in sorted(trace, key=lambda t: (t[1], t[0])):
        if not out or not within(out[-1][2], cost):
            out.append((max(iteration, out[-1][0]) if out else iteration, seconds, cost, trail))
    return out
