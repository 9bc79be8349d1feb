"""Limits on a search (time, iterations, memory) and the clock that enforces them."""

from __future__ import annotations

import enum
import math
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .progress import Progress

__all__ = ["available_mb", "COST_CALL", "INTERRUPT", "Limits", "SLOW_CALL", "SearchInterrupted", "StepEnd", "StopReason", "Stopwatch",
           "memory_mb", "peak_mb"]


class StopReason(enum.StrEnum):
    """Why a search stopped (a result's ``stop_reason``; equal to its value as a string)."""

    FINISHED = "finished"  # the search space is exhausted: the mapping is proven optimal
    TIME_LIMIT = "time_limit"
    MAX_ITERATIONS = "max_iterations"
    MEMORY_LIMIT = "memory_limit"
    INTERRUPTED = "interrupted"  # a signal (SIGINT, SIGTERM): see INTERRUPT
    RAY_LOST = "ray_lost"  # the Ray of a distributed search was lost; the best mapping heard of
    CHECKPOINT_FAILED = "checkpoint_failed"  # a checkpoint could not be written (a full disk, ...)


class StepEnd(enum.StrEnum):
    """Why a step of the loop (:meth:`explorer.Explorer.step`) ended without the search stopping."""

    IDLE = "idle"  # no open branch left in the explorer
    BUDGET = "budget"  # the step's time was used


# Set (by the command line's SIGINT and SIGTERM handlers) to stop every search cleanly:
# searches stop with stop reason StopReason.INTERRUPTED, keeping the best mapping found.
INTERRUPT = threading.Event()
SLOW_CALL = 0.01  # seconds: a cost model's call at least this long is followed by a check of the limits


class CostCall:
    """When the cost model's call in progress in this process started (``started``,
    :func:`time.perf_counter`; None between calls), and what the calls are for when that
    is not the search (``doing``: the pricing before it, and how far it is): a signal
    handler tells the user it waits for that call."""

    __slots__ = ("started", "doing")

    def __init__(self) -> None:
        self.started: float | None = None
        self.doing: str | None = None


COST_CALL = CostCall()
MEMORY_SECONDS = 0.05  # how often a search reads its memory use (reading /proc is not free)
# a new peak of the process seen at most this long after the last reading is a surge
# between the two (a loaded machine delays readings; a stopwatch that read nothing for
# longer, as the solve's own while a search ran, learns no surge from it)
SURGE_SECONDS = 1.0


@dataclass(frozen=True)
class Limits:
    """Stop a search cleanly after ``time_limit`` seconds, ``max_iterations``
    iterations, or once the process uses more than ``memory_limit_mb`` MiB."""

    time_limit: float | None = None
    max_iterations: int | None = None
    memory_limit_mb: float | None = None

    def __post_init__(self) -> None:
        for name in ("time_limit", "max_iterations", "memory_limit_mb"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive number, got {value!r}")


def memory_mb() -> float:
    """Resident memory of this process in MiB."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:
        return peak_mb()


def available_mb() -> float | None:
    """The memory the machine has available for new work now (Linux's MemAvailable) in
    MiB, not counting what this process holds already; None where it cannot be read."""
    return _proc_mb("/proc/meminfo", "MemAvailable:")


def peak_mb() -> float:
    """The most resident memory this process has held since it started, in MiB: the
    kernel's count (``VmHWM``), so a surge between two readings of :func:`memory_mb` is
    in it. Not ``getrusage``'s ``ru_maxrss``, which keeps the peak of the process that
    started this one (a program started by a process of 4 GB read 4 GB there)."""
    found = _proc_mb("/proc/self/status", "VmHWM:")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if found is None else found


def _proc_mb(path: str, field: str) -> float | None:
    """The figure of a ``field: N kB`` line of a /proc file, in MiB; None if unread."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class SearchInterrupted(Exception):
    """A limit was reached in the middle of an expansion; ``args[0]`` names it."""


class Stopwatch:
    """The one clock of a search's limits: checks them every ``every`` loop turns, and
    samples peak memory as it goes, at most every :data:`MEMORY_SECONDS` (read every 128
    turns instead, it cost a measurable share of a search). ``memory`` reads the memory
    the limit applies to (this process's resident memory by default; a distributed
    search's coordinator sums its workers'). Time counts from the stopwatch's start:
    limits are this run's, a resumed search's included.

    A table that grows copies itself into one twice its size: for a moment the process
    holds both, a surge that comes and goes between two readings (hepar2: 60 MiB in 50
    ms). On this process's own memory, the kernel's peak (:func:`peak_mb`) shows each
    surge; the largest seen so far, doubled (the next growth of the same table), is kept
    free below the memory limit (:attr:`headroom_mb`), so that the process's peak stays
    under the limit, and the peak reported is the kernel's."""

    def __init__(self, limits: Limits, every: int = 128, progress_every: float = 1.0,
                 memory: Callable[[], float] = memory_mb) -> None:
        self.limits = limits
        self.start = time.perf_counter()
        self.every = every
        self.turns = 0
        self.inner = 0
        self.memory = memory
        self.peak_memory_mb = self.memory_now = memory()
        self._own = memory is memory_mb  # the kernel's peak is this process's: surges are seen
        self._kernel_peak = self._kernel_peak_before = peak_mb() if self._own else 0.0
        self.surge_mb = 0.0  # the largest surge seen between two readings
        self._next_memory = self.start + MEMORY_SECONDS
        self._progress_every = progress_every
        self._last_progress = self.start
        self.reserve = 0.0  # seconds of the time limit kept for the final checkpoint's write

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def tick(self) -> bool:
        """Count a loop turn; true on the first turn and every ``every`` turns after."""
        self.turns += 1
        return (self.turns - 1) % self.every == 0

    def check(self, iterations: int) -> str | None:
        """Once per loop turn: the name of the limit reached, if any. Iterations are
        checked every turn, time and memory on the first turn and every ``every``."""
        if self.iterations_exceeded(iterations):
            return StopReason.MAX_ITERATIONS
        return self.resources_exceeded() if self.tick() else None

    def progress(self, iterations: int, best_cost: float, open_branches: int, lower_bound: float | None = None,
                 link_records: int | None = None) -> Progress:
        """A progress report of a search on this stopwatch (its seconds, rate and peak memory)."""
        elapsed = self.elapsed()
        return Progress(iterations=iterations, best_cost=best_cost, lower_bound=lower_bound,
                        open_branches=open_branches, elapsed_seconds=elapsed,
                        rate=iterations / elapsed if elapsed > 0 else 0.0, peak_memory_mb=self.peak_memory_mb,
                        link_records=link_records)

    def iterations_exceeded(self, iterations: int) -> bool:
        """True once ``iterations`` reaches the iteration limit (checked every turn)."""
        return self.limits.max_iterations is not None and iterations >= self.limits.max_iterations

    def resources_exceeded(self) -> str | None:
        """The name of the time or memory limit reached (or ``interrupted``), if any."""
        if INTERRUPT.is_set():
            return StopReason.INTERRUPTED
        limits = self.limits
        now = time.perf_counter()
        if now >= self._next_memory:
            self.sample_memory()
        if limits.time_limit is not None and now - self.start >= limits.time_limit - self.reserve:
            return StopReason.TIME_LIMIT
        if limits.memory_limit_mb is not None and self.memory_now + self.headroom_mb >= limits.memory_limit_mb:
            return StopReason.MEMORY_LIMIT
        return None

    @property
    def headroom_mb(self) -> float:
        """Memory kept free below the memory limit for the next surge (see the class)."""
        return 2 * self.surge_mb

    def sample_memory(self) -> float:
        """Read the memory now; keep the peak (the kernel's, when it rose since the
        stopwatch started: a surge between readings) and the largest surge."""
        before = self.memory_now
        self.memory_now = now = self.memory()
        self.peak_memory_mb = max(self.peak_memory_mb, now)
        if self._own:
            kernel = peak_mb()
            if kernel > self._kernel_peak:  # a new peak of the process since the last reading
                if time.perf_counter() - self._next_memory < SURGE_SECONDS:  # read not long before: a surge
                    self.surge_mb = max(self.surge_mb, kernel - max(before, now))
                self._kernel_peak = kernel
            if kernel > self._kernel_peak_before:  # risen during this stopwatch's time: its own
                self.peak_memory_mb = max(self.peak_memory_mb, kernel)
        self._next_memory = time.perf_counter() + MEMORY_SECONDS
        return self.peak_memory_mb

    def remaining(self) -> Limits:
        """The limits left to a part of the search (a worker's step): the time left, the
        final checkpoint's reserve kept; the memory limit; iterations are shared out by
        the caller."""
        time_limit = self.limits.time_limit
        if time_limit is not None:
            time_limit = max(1e-3, time_limit - self.reserve - self.elapsed())
        return Limits(time_limit, None, self.limits.memory_limit_mb)

    def check_within(self) -> None:
        """Inside a long inner loop: raise SearchInterrupted once a limit is reached
        (checked every ``every`` calls: a call is a step of an expansion, so short that
        reading the clock at each would cost a measurable share of a search)."""
        self.inner += 1
        if self.inner % self.every == 0:
            reason = self.resources_exceeded()
            if reason:
                raise SearchInterrupted(reason)

    def progress_due(self) -> bool:
        """True at most once every ``progress_every`` seconds."""
        now = time.perf_counter()
        if now - self._last_progress >= self._progress_every:
            self._last_progress = now
            return True
        return False
