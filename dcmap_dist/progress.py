"""What a running search reports about once a second: :class:`Progress`, one record for
every method (DCMAP serial and on Ray workers, breadth-first search) and for the
public ``on_progress`` callback of :func:`~dcmap_dist.solve.solve`; and
:class:`Rescanned`, for a figure whose scan would cost too much at every report."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Progress", "Rescanned"]


@dataclass(frozen=True)
class Progress:
    """A search's standing. A field that does not apply to the method is None, never missing.

    Handed to ``solve``'s ``on_progress``, the figures are the whole solve's: iterations
    and seconds since it began (a resumed solve's earlier ones included), the best total
    cost known and a lower bound on the optimum over every component; the open branches
    and link records are the component being searched (``component``, of
    ``components``). Inside a search (the drivers' own reports) they are that
    component's, and ``component`` is None.
    """

    iterations: int  # expansions so far
    best_cost: float  # the cheapest mapping known (inf: none yet)
    lower_bound: float | None  # no mapping costs less (None: not known yet)
    open_branches: int  # branches waiting to be expanded
    elapsed_seconds: float
    rate: float  # iterations per second
    peak_memory_mb: float  # the most memory the search has used (with workers: all processes together)
    link_records: int | None = None  # keys in the link table (None: a method without one)
    workers: int = 1  # processes searching (Ray workers, or 1)
    component: int | None = None  # the component being searched, counted from 0
    components: int | None = None  # how many the network has
    listed: int | None = None  # once every component is searched: optimal mappings listed so far

    @property
    def gap(self) -> float:
        """How far the proof has to go: ``(best_cost - lower_bound) / best_cost``, 0 when
        proven; nan while either is unknown."""
        best, lower = self.best_cost, self.lower_bound
        if lower is None or not (math.isfinite(best) and best > 0 and math.isfinite(lower)):
            return math.nan
        return max(0.0, (best - lower) / best)


SCAN_SHARE = 100  # a figure is scanned again after this many times its last scan's time


class Rescanned:
    """A figure that takes a scan of every open branch (a lower bound over them, for
    progress reports): scanned again only once :data:`SCAN_SHARE` times the last scan's
    time has passed, so that reports cost a bounded share of a long search; in between
    the last value stands (a lower bound found earlier still bounds the optimum)."""

    def __init__(self, scan: Callable[[], float]) -> None:
        self.scan = scan
        self.value = -math.inf
        self.due = 0.0

    def __call__(self) -> float:
        start = time.perf_counter()
        if start >= self.due:
            self.value = self.scan()
            self.due = start + SCAN_SHARE * (time.perf_counter() - start)
        return self.value
