"""The distributed search of one component, from the driver: the backend a search on Ray
workers runs as (:class:`.driver.RaySearch`, or by contours
:class:`.contours.RayContourSearch`), begun, driven to its end by the driver loop
(:mod:`dcmap_dist.run.loop`), and ended on the lost-Ray path (:func:`is_lost`) when Ray
itself, or every worker it could have, is lost."""

from __future__ import annotations

import time
from collections.abc import Callable

import ray

from ...limits import Limits
from ...progress import Progress
from ...search.outcome import OnImprovement, SearchOutcome
from ...search.problem import Problem
from ...search.state import Resumption
from ...settings import FIRST_BUDGET
from ..contours import by_contours
from ..loop import Saver, drive
from .contours import RayContourSearch
from .driver import RaySearch
from .protocol import RayOptions, WorkersLost

__all__ = ["distributed_search", "is_lost"]


def distributed_search(problem: Problem, alpha: float, seed: int, options: RayOptions, limits: Limits,
                       on_improvement: OnImprovement | None = None,
                       on_progress: Callable[[Progress], None] | None = None,
                       saver: Saver | None = None, resume: Resumption | None = None,
                       first_budget: int = FIRST_BUDGET, contours: bool = False) -> SearchOutcome:
    """Run DCMAP on one connected problem on Ray workers as ``options`` say (Ray must be
    connected: :func:`.cluster.connect`); the same outcome as
    :class:`run.serial.SerialSearch`, with the same checkpoints (``saver``) and resumption
    (``resume``), and the same first mapping (``first_budget``: the beam's budget); by
    contours (:class:`.contours.RayContourSearch`) as :func:`..contours.by_contours`
    decides from ``contours`` and ``resume``. If Ray itself is lost, the best mapping heard of
    (:meth:`RaySearch.lost`)."""
    started = time.perf_counter()
    search = RaySearch(problem, alpha, seed, options, limits, on_improvement, resume, first_budget)
    backend = RayContourSearch(search, limits, resume) if by_contours(contours, resume) else search
    try:
        backend.begin(options, limits, resume, started)
        return drive(backend, saver, on_progress)
    except Exception as exc:
        if not is_lost(exc):  # an error of the search itself (a user cost's), or a bug
            raise
        return backend.lost(exc, saver)


def is_lost(error: BaseException) -> bool:
    """Whether ``error`` means the search's Ray, or every worker it could have, is lost
    (the lost-Ray path: the best mapping heard of, exit code 5), rather than an error of
    the search itself (a user cost's, raised in a worker) or a bug: a Ray error other
    than a task's, or a task's whose cause is one of those or :class:`WorkersLost`."""
    if isinstance(error, WorkersLost):
        return True
    if not isinstance(error, ray.exceptions.RayError):
        return False
    if isinstance(error, ray.exceptions.RayTaskError):
        cause = getattr(error, "cause", None)
        return isinstance(cause, WorkersLost) or (isinstance(cause, ray.exceptions.RayError)
                                                  and not isinstance(cause, ray.exceptions.RayTaskError))
    return True
