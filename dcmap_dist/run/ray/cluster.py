"""The Ray a distributed search runs on: attaching to it (a private Ray on this machine, the
running cluster, or one at ``HOST:PORT``, each checked first so that a typo costs seconds),
stopping the one it started, the pool of actors reused across the searches of a session,
and shipping a user's cost model to the workers by value."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import ray
import ray.cloudpickle
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ...cost.base import CostModel
from ...faults import EnvironmentFault
from .coordinator import CONTROL, Coordinator

__all__ = ["REACH_SECONDS", "check_workers", "connect", "disconnect", "disconnect_behind", "forget_pool",
           "pooled_coordinator", "ship_by_value"]

REACH_SECONDS = 5.0  # how long an --address HOST:PORT has to answer

_pool: dict[tuple[int, float], Any] = {}  # the live coordinator (one at a time), by its size


def pooled_coordinator(workers: int) -> Any:
    """A coordinator with ``workers`` live workers, reused across the searches of one Ray
    session, on this (the driver's) node. Only one pool lives at a time: another size replaces it (its workers
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
    # on the driver's node: a lost node takes workers, never the coordinator and its snapshots;
    # a thread of its own for halt, which then reaches it during a turn or a recovery
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    handle = _pool[key] = ray.remote(concurrency_groups={CONTROL: 1})(Coordinator).options(
        num_cpus=0, enable_task_events=False, scheduling_strategy=here).remote(workers, cpus)
    return handle


def connect(address: str | None, workers: int) -> bool:
    """Attach to Ray (``auto``, ``local`` or ``HOST:PORT``; None: ``local``, a private
    Ray on this machine); true if this call started it. An attached Ray is used as is.

    Checked first, so that a typo costs seconds, not the machine: ``workers`` must not
    exceed the CPUs that Ray offers (this machine's, for a private Ray), and a
    ``HOST:PORT`` must answer. A private Ray starts lean (no dashboard, no API server:
    :func:`_lean_head`), and its processes in a process group of their own
    (:func:`_own_process_group`)."""
    if ray.is_initialized():
        check_workers(workers, ray.cluster_resources().get("CPU", 0), "this Ray")
        return False
    address = address or "local"
    if address == "local":
        check_workers(workers, len(os.sched_getaffinity(0)), "this machine")
    elif address != "auto":
        _check_reachable(address)
        _check_token(address)
    handlers = {}
    if threading.current_thread() is threading.main_thread():  # Ray replaces SIGTERM's handler
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        # a private Ray offers as many CPUs as there are workers: Ray starts no idle
        # worker processes for the machine's other cores
        cpus = {"num_cpus": workers} if address == "local" else {}
        with _own_process_group(), _lean_head(address == "local"):
            ray.init(address=address, include_dashboard=False, logging_level="ERROR",
                     log_to_driver=False, configure_logging=False, **cpus)
    except Exception as exc:
        if _unauthenticated(exc):
            raise _token_needed(address) from None
        if isinstance(exc, ConnectionError):
            raise ValueError(f"--address {address}: no Ray cluster answers there ({exc})") from None
        if not _timed_out(exc):
            raise
        ray.shutdown()  # what did start
        where = "this machine" if address == "local" else f"--address {address}"
        raise EnvironmentFault(
            f"Ray did not start in time on {where} ({exc}); the machine may be busy: try again when it is "
            "quieter, run without --workers (a serial search needs no Ray), or start Ray first (ray start "
            "--head) and give --address auto") from None
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


def _token_needed(address: str) -> ValueError:
    return ValueError(f"--address {address}: the Ray cluster there requires an authentication token, and this "
                      "process has none or a wrong one: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or "
                      "RAY_AUTH_TOKEN_PATH, a file holding it) to the cluster's token, as for 'ray status' "
                      "(docs/distributed.md, \"Authentication\")")


def _check_token(address: str) -> None:
    """A ValueError at once when the cluster at ``address`` refuses this process for want
    of its token: ``ray.init`` would retry for 20 s, printing "Unauthenticated", and then
    say that no cluster answers there (issue 50). Ray's own client to the cluster's
    control store answers in milliseconds either way; anything else it says is left to
    ``ray.init``."""
    try:
        ray._raylet.GcsClient(address=address)
    except Exception as exc:  # noqa: BLE001 - only a refusal for the token is decided here
        if _unauthenticated(exc):
            raise _token_needed(address) from None


def _unauthenticated(exc: Exception) -> bool:
    """Whether Ray refused to connect for want of the cluster's authentication token."""
    text = str(exc).lower()
    return (type(exc).__name__ == "AuthenticationError" or "authentication token" in text
            or "unauthenticated" in text)


def _timed_out(exc: Exception) -> bool:
    """Whether ``ray.init`` failed because Ray was slow to start (it says so in a
    TimeoutError, a RuntimeError or a bare Exception, depending on where it waited)."""
    return isinstance(exc, TimeoutError) or "timed out" in str(exc).lower()


def check_workers(workers: int, cpus: float, where: str) -> None:
    """A ValueError unless ``workers`` fit the ``cpus`` of ``where``: each worker is a
    process that searches full time, so more workers than CPUs only share them (and a
    typo such as 10000 would start thousands of processes). A search on Ray workers
    takes two at least: one CPU may hold two (they share it)."""
    if cpus < 1:
        raise ValueError(f"--workers {workers}: {where} offers no CPU to run workers on; add a node with CPUs, "
                         "or search serially on this machine (--workers 1, no --address)")
    most = max(2, int(cpus))
    if workers > most:
        raise ValueError(f"--workers {workers}: {where} offers {cpus:g} CPUs; give at most {most} workers")


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


@contextlib.contextmanager
def _lean_head(private: bool) -> Iterator[None]:
    """A ``private`` Ray's head starts without its API server: Ray starts that process (its
    dashboard's, serving the job and state APIs and usage statistics) even without a
    dashboard, and waits for it to answer, about 0.6 s of a start of 2.4 s on a 2-core
    machine (results/ray-fixed-cost.md); a private Ray serves no jobs and no dashboard."""
    node = getattr(getattr(ray._private, "node", None), "Node", None)
    original = getattr(node, "start_api_server", None)
    if not private or original is None:  # another Ray layout: its own start
        yield
        return

    def without_api_server(self: Any, **_: Any) -> None:
        self._webui_url = None

    node.start_api_server = without_api_server
    try:
        yield
    finally:
        node.start_api_server = original


def disconnect() -> None:
    """Stop the Ray that :func:`connect` started, with every actor of the cached pools."""
    forget_pool()
    ray.shutdown()


def disconnect_behind() -> threading.Thread:
    """:func:`disconnect` in a thread of its own, started: Ray's stop (a second or more,
    most of it waiting for its processes to end) overlaps what the caller does next
    without Ray (listing the mappings); join the thread before returning."""
    stopping = threading.Thread(target=disconnect, name="dcmap-ray-stop")
    stopping.start()
    return stopping


def forget_pool() -> None:
    """Drop the pooled coordinator (it died, or Ray is stopping): the next search makes a new one."""
    _pool.clear()


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
