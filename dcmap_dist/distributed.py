"""The distributed DCMAP search on Ray: one coordinator actor
(:class:`coordinator.Coordinator`) and W worker actors (:class:`worker.Worker`); this
module attaches to Ray, keeps the pool of actors, and runs a search from the driver.

Every worker runs the serial loop (:class:`explorer.Explorer`) on its own open
branches, in steps of about :data:`coordinator.STEP_SECONDS`. A step takes the batches of
completions addressed to the worker since its last step, the global ``G_min`` and
the dominance notices it has not heard; it returns its statistics and its outgoing
batches (:func:`worker.packed`, one Ray object per destination, passed on by reference so the
coordinator never unpacks them). Steps are not synchronised in rounds: the
coordinator waits for whichever step ends first, takes it in, and starts that
worker's next step at once, so no worker waits for the slowest one. Each worker
has one step queued behind the one it runs (:data:`coordinator.QUEUED_STEPS`, unless an
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

import math
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import ray
import ray.cloudpickle

from .coordinator import Coordinator
from .cost import CostModel
from .engine import Branch, Problem, within
from .limits import INTERRUPT, Limits, Stopwatch
from .linking import Improvement
from .search import Saver, SearchOutcome, announce, incumbent, outcome
from .state import Resumption, SearchState, counters
from .worker import SearchSpec, unpacked

LINK_TABLES = ("sharded", "coordinator")
PROGRESS_SECONDS = 1.0  # how often the driver hears from the coordinator
# the figures a distributed search reports (in the result's components)
STATISTICS = ("workers", "link_table", "steps", "elapsed", "worker_busy", "worker_cpu", "coordinator_busy",
              "coordinator_cpu", "sent", "received", "bytes", "snapshots", "snapshot_seconds", "recoveries")


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


def connect(address: str | None) -> bool:
    """Attach to Ray (``auto``, ``local`` or ``HOST:PORT``; None: ``local``, a private
    Ray on this machine); true if this call started it. An attached Ray is used as is."""
    if ray.is_initialized():
        return False
    handlers = {}
    if threading.current_thread() is threading.main_thread():  # Ray replaces SIGTERM's handler
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    ray.init(address=address or "local", include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=False)
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    return True


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
    connected, see :func:`connect`); the same outcome as :func:`search.dcmap_search`,
    with the same checkpoints (``saver``) and resumption (``resume``)."""
    spec = SearchSpec(problem.network, problem.graph, problem.model, problem.scheme, problem.key,
                      problem.use_bound)
    first = resume.first if resume else incumbent(problem, Stopwatch(limits))
    ship_by_value(spec.model)
    g_min = resume.g_min if resume else first.cost
    try:
        handle = coordinator(workers)
        ray.get(handle.begin.remote(spec, settings, limits, g_min, resume))
    except ray.exceptions.RayActorError:  # the pool died since its last search: a new one
        _pool.clear()
        handle = coordinator(workers)
        ray.get(handle.begin.remote(spec, settings, limits, g_min, resume))
    # the cost last announced: a recovery rolls the trace back, so what is new is what is
    # cheaper, not what comes after a count
    announced = _improving(list(resume.trace), first)[-1][2] if resume else math.inf

    def fetch(records: set[int]) -> dict[int, list]:
        return ray.get(handle.lookup.remote(records))

    known: dict[int, list] = {}  # first histories of the records on improvements' paths

    def recall(records: set[int]) -> dict[int, list]:
        return {r: known[r] for r in records if r in known}

    result = None
    while result is None:
        report = _advance(handle)
        fresh = [found for found in _improving(report.pop("trace"), first) if not within(announced, found[2])]
        if on_improvement and fresh:  # the records on the improvements' paths, in one call
            known.update(ray.get(handle.paths.remote([trail for *_, trail in fresh if trail is not None])))
        announce(problem, fresh, 0, on_improvement, recall, lost=True)
        announced = fresh[-1][2] if fresh else announced
        # a recovery rolls G_min back to the snapshot's; the announced cost was found all the
        # same, so it is still the best known and bounds the optimum
        report["best"] = min(report["best"], announced)
        report["lower_bound"] = min(report["lower_bound"], report["best"])
        if report["done"]:
            result = ray.get(handle.finish.remote())  # None: a worker was lost after the proof; go on
            continue
        if on_progress:
            on_progress(report)
        if INTERRUPT.is_set():
            ray.get(handle.halt.remote("interrupted"))
        elif saver is not None and saver.due():
            _save(handle, saver, first)
    if saver is not None and result["stop"] != "finished":
        _save(handle, saver, first)
    if on_progress:
        on_progress(report)
    return outcome(result["final"], first, result["stop"] == "finished", result["stop"], result["iterations"],
                   _improving(result["trace"], first), result["lower_bound"], result["memory_mb"],
                   fetch, result["link_records"],
                   statistics={name: result[name] for name in STATISTICS})


def _advance(handle: Any) -> dict[str, Any]:
    """The coordinator's progress figures after it has run the search for a while."""
    return ray.get(handle.advance.remote(PROGRESS_SECONDS))


def _save(handle: Any, saver: Saver, first: Branch) -> None:
    """Write a checkpoint of a consistent cut, fetching one worker's state at a time."""
    cut = ray.get(handle.cut.remote())

    def parts():
        for ref in cut["workers"]:
            state = ray.get(ref)
            shard = state["shard"] or {"entries": {}, "histories": {}}
            yield SearchState(state["branches"], [], shard["entries"], shard["histories"], state["dominated"])
        table = pickle.loads(cut["table"])
        shard = table["shard"] or {"entries": {}, "histories": {}}
        yield SearchState(table["branches"], [], shard["entries"], shard["histories"], table["dominated"])
        for ref in cut["inbox"]:
            yield SearchState(arrivals=unpacked(ray.get(ref)))

    saver.save(parts(), counters(cut["iterations"], cut["elapsed"], cut["g_min"], _improving(cut["trace"], first),
                                 first, cut["next_owner"]))


def _improving(trace: list[Improvement], first: Branch) -> list[Improvement]:
    """The strictly improving subsequence of improvements gathered from all workers, by
    time, starting with the incumbent's."""
    out: list[Improvement] = []
    trace = [(0, 0.0, first.cost, first.trail), *trace]
    for iteration, seconds, cost, trail in sorted(trace, key=lambda t: (t[1], t[0])):
        if not out or not within(out[-1][2], cost):
            out.append((max(iteration, out[-1][0]) if out else iteration, seconds, cost, trail))
    return out
