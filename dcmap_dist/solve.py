"""``solve``: the public entry point. Splits a network into weakly connected
components, runs the chosen method on each, and combines the results."""

from __future__ import annotations

import math
import numbers
import os
import threading
import time
import warnings
from collections.abc import Callable, Hashable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .anytime import Anytime
from .combine import Listing, combine
from .compiled import SLOWER, native_wanted, warn_build
from .cost.base import CostModel
from .cost.user import load_cost
from .io.load import load_network
from .limits import Limits, StopReason, Stopwatch
from .model.network import Network
from .progress import Progress
from .result import SolveResult
from .run.contours import ContourSearch, by_contours
from .run.loop import Saver, drive_serially
from .run.serial import SerialSearch
from .search.baselines import bfs_search, brute_force_search
from .search.engine import NATIVE_NODES, runs_natively
from .search.heuristics import all_singletons
from .search.outcome import OnImprovement, SearchOutcome
from .search.problem import Problem
from .search.state import Resumption
from .settings import FIRST_BUDGET, METHODS, SearchSettings

__all__ = ["METHODS", "solve"]


def solve(
    network: Network | Any,
    cost: str | CostModel | Callable | None = None,
    scheme: str | None = None,
    method: str | None = None,
    alpha: float | None = None,
    seed: int | None = None,
    time_limit: float | None = None,
    max_iterations: int | None = None,
    memory_limit_mb: float | None = None,
    order: str | None = None,
    addition: float | None = None,
    on_improvement: Callable[[float, int, float, list[list[Hashable]] | None], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    link_key: str | None = None,
    use_bound: bool | None = None,
    max_solutions: int | None = 10_000,
    workers: int = 1,
    address: str | None = None,
    link_table: str = "sharded",
    snapshot_every: float | None = 30.0,
    first_budget: int = FIRST_BUDGET,
    contours: bool = False,
    checkpoint: str | Path | None = None,
    checkpoint_every: float | None = None,
    resume: str | Path | Any | None = None,
    fresh_checkpoint: bool = False,
    trust_checkpoint: bool = False,
) -> SolveResult:
    """Find every optimal cluster mapping of a network, and prove it optimal.

    The network is split into weakly connected components; each is searched with
    ``method`` and the results combined (SPEC section 7). The settings that define the
    search (``cost``, ``order``, ``addition``, ``scheme``, ``method``, ``link_key``,
    ``use_bound``, ``alpha``, ``seed``) default to the values below, or, when resuming, to
    the checkpoint's: one given again must agree with it (:class:`~dcmap_dist.settings.SearchSettings`).

    Parameters
    ----------
    network : Network or anything :func:`~dcmap_dist.io.load.load_network` loads
        A path, a bundled example's name (``"paper-example"``, ``"asia"``, ...), a
        networkx DiGraph, a pgmpy model, ... None when resuming (the checkpoint holds it).
    cost : str, CostModel or callable
        ``"dcmap"`` (the default: the built-in model, with ``order`` and ``addition``),
        ``"package.module:name"``, a cost model, or a function of a
        :class:`~dcmap_dist.cost.base.CostContext` (see :func:`~dcmap_dist.cost.user.load_cost`).
    scheme : {"merge", "single"}
        Which mappings are feasible (SPEC section 2); ``"merge"`` by default.
    method : {"dcmap", "bfs", "brute"}
        DCMAP (the default), the paper's breadth-first search, or brute force (small networks).
    alpha, seed : float, int
        DCMAP's activation probability (0.6) and the seed of its random choices (0).
    time_limit, max_iterations, memory_limit_mb : float, int, float or None
        Limits: the search stops cleanly with the best mappings so far and
        ``proven_optimal = False``. The memory limit also stops the listing of
        mappings (after one at least).
    order, addition : str, float
        The ``dcmap`` model's elimination order (``"cpt"``) and the cost of an addition (0.6)
        (:class:`DcmapCost`).
    on_improvement : callable, optional
        ``on_improvement(cost, iteration, seconds, clusters)`` hears every improved total
        with its mapping (as in ``solutions``; None for an improvement of a resumed
        search saved without it).
    on_progress : callable, optional
        ``on_progress(progress)`` about once a second and at the end of each component's
        search, with a :class:`~dcmap_dist.progress.Progress`: iterations, best cost, lower
        bound and gap, open branches, rate, elapsed seconds, memory (the whole solve's).
    link_key : {"lean", "full"}
        The dominance key (``"lean"``; ``"full"`` for comparisons: both are exact).
    use_bound : bool
        False switches off pruning by the model's lower bound (for comparisons); True by default.
    max_solutions : int or None
        List at most this many optimal mappings (None: all). ``solution_count`` always
        counts them all, and ``solutions_complete`` says whether the list is whole.
    workers : int
        More than 1 runs DCMAP on that many Ray worker actors (:mod:`dcmap_dist.run.ray.distributed`);
        the result is the serial search's (same optimum, optimal partitions and count).
    address : str, optional
        The Ray to attach to (``ray.init(address=...)``); None starts a private Ray on
        this machine and stops it afterwards. An already connected Ray is used as it is.
    link_table : {"sharded", "coordinator"}
        Where the dominance table lives in a distributed search.
    snapshot_every : float or None
        Least seconds between the snapshots from which a lost worker is recovered
        (None: none, and a lost worker fails the search).
    first_budget : int
        Expansions the beam search for the search's first mapping may take (4096; 0: the
        greedy dive and all singletons only). It changes how fast the proof goes, never
        its result (docs/search.md, "The first mapping").
    contours : bool
        Search each component by contours (serially or on Ray workers): a proven lower
        bound that rises as the search goes (docs/search.md, "A proven lower bound that rises:
        contours"); the result is the same. A component whose checkpoint was taken
        during a contour goes on by contours, one taken during the ordinary search as
        the ordinary search, whatever this says.
    checkpoint : path, optional
        A folder where the search's state is written as Arrow tables every
        ``checkpoint_every`` seconds (default 600), when a limit or an interrupt stops
        it, and at the end (docs/checkpoints.md). It is locked while the solve uses it;
        one holding another search's checkpoint is refused unless ``fresh_checkpoint``.
    resume : path or Resume, optional
        Continue a checkpointed search with its settings (``network`` may be None: the
        checkpoint holds it), on any number of workers and with new limits (counted from
        the resumption); it keeps checkpointing to the same folder unless ``checkpoint``
        says otherwise. A network, cost model or setting given that differs from the
        checkpoint's is refused with an error naming it, and so is a damaged or altered
        checkpoint.
    trust_checkpoint : bool
        Read back a user cost model's messages that only pickle could store (a pickle
        can run code).

    Returns
    -------
    SolveResult
        The optimal cost, whether it is proven, the lower bound and gap, the optimal
        mappings, the anytime trace and how the search ran (:class:`~dcmap_dist.result.SolveResult`).

    Raises
    ------
    NetworkError, CostError, CheckpointError, ValueError
        Bad input, named with the problem (before any search where it can be told).

    Examples
    --------
    >>> from dcmap_dist import solve
    >>> result = solve("paper-example")
    >>> round(result.optimal_cost, 6), result.proven_optimal, result.solution_count
    (54.0, True, 3)
    >>> result.solutions[0].clusters
    [['A', 'D', 'G'], ['B'], ['C'], ['E'], ['F']]

    A cost model can be a function of a cluster-layer's context:

    >>> solve("paper-example", cost=lambda context: float(len(context.nodes)) ** 2).optimal_cost
    7.0
    """
    warn_build()  # once per process: a source edited since the build, the native engine not built
    limits = _limits(time_limit, max_iterations, memory_limit_mb, max_solutions, checkpoint_every)
    given = {name: value for name, value in (
        ("cost", cost), ("order", order), ("addition", addition), ("scheme", scheme), ("method", method),
        ("link_key", link_key), ("use_bound", use_bound), ("alpha", alpha), ("seed", seed)) if value is not None}
    run = {"workers": workers, "link_table": link_table, "snapshot_every": snapshot_every,
           "first_budget": first_budget, "contours": contours}
    settings = SearchSettings(**given, **run)  # every value checked before anything is opened
    resumed_from = None if resume is None else getattr(resume, "directory", resume)  # a Resume, or its folder
    if checkpoint is None:
        checkpoint = resumed_from
    folder = None
    if checkpoint is not None:
        if settings.method != "dcmap":
            raise ValueError(f"checkpoints are written by the dcmap method only, not {settings.method}")
        from .checkpoint.session import CheckpointFolder  # imports pyarrow

        continuing = resumed_from is not None and os.path.realpath(resumed_from) == os.path.realpath(checkpoint)
        folder = CheckpointFolder(Path(checkpoint), continuing=continuing, fresh=fresh_checkpoint)
    try:
        resumed = None
        if resume is not None:
            from .checkpoint.session import Resume  # imports pyarrow

            resumed = resume if isinstance(resume, Resume) else Resume(Path(resume), trust_checkpoint)
            settings = resumed.settings(given, run)
            network = resumed.network if network is None else network
        return _solve_in(load_network(network), settings, limits, on_improvement, on_progress, max_solutions,
                         address, folder, checkpoint_every, resumed)
    finally:
        if folder is not None:
            folder.close()


def _limits(time_limit: Any, max_iterations: Any, memory_limit_mb: Any, max_solutions: Any,
            checkpoint_every: Any) -> Limits:
    """The search's limits, after the ValueError the command line's parser would give
    for a bad argument of solve() (these and the listing's and checkpoints' numbers)."""
    def positive(name: str, value: Any, integer: bool = False) -> None:
        if value is None:
            return
        kind = numbers.Integral if integer else numbers.Real
        if isinstance(value, bool) or not isinstance(value, kind) or not (0 < value < math.inf):
            raise ValueError(f"{name} must be a positive {'integer' if integer else 'number'} or None, got {value!r}")

    positive("time_limit", time_limit)
    positive("max_iterations", max_iterations, integer=True)
    positive("memory_limit_mb", memory_limit_mb)
    positive("max_solutions", max_solutions, integer=True)
    positive("checkpoint_every", checkpoint_every)
    return Limits(time_limit, max_iterations, memory_limit_mb)


def _solve_in(network: Network, settings: SearchSettings, limits: Limits, on_improvement: Callable | None,
              on_progress: Callable[[Progress], None] | None, max_solutions: int | None, address: str | None,
              folder: Any, checkpoint_every: float | None, resumed: Any) -> SolveResult:
    """:func:`solve` once its arguments are checked, its settings known and its
    checkpoint folder open (``resumed``: the checkpoint read, or None)."""
    model = load_cost(settings.cost, order=settings.order, addition=settings.addition)
    checkpointer = None
    if folder is not None:
        from .checkpoint.session import CHECKPOINT_EVERY, Checkpointer

        checkpointer = Checkpointer(folder, checkpoint_every or CHECKPOINT_EVERY, network, model, settings)
    watch = Stopwatch(limits, every=1)  # the whole solve's limits: the pricing and the listing's
    start = session = watch.start  # start moves back by the time before a resumption
    problems = [Problem(part, model, settings.scheme, graph=network, link_key=settings.link_key,
                        use_bound=settings.use_bound) for part in network.components()]
    if checkpointer is not None:
        widest = max(len(problem.network.nodes) for problem in problems)
        checkpointer.expect("native" if native_wanted() and widest <= NATIVE_NODES else "python", widest)
    outcomes: list[SearchOutcome] = []
    offset = 0
    before = 0  # iterations done before a resumption (limits count from it)
    in_progress = None
    if resumed is not None:
        resumed.check(network, model, settings)
        resumed.verify(problems)
        outcomes = resumed.finished()
        if len(outcomes) < len(problems):
            in_progress = resumed.in_progress(problems[len(outcomes)])
        start -= resumed.metadata["solve_elapsed"]
    anytime = Anytime(network, problems, settings.method, start, watch)
    if anytime.stopped is not None:  # a limit reached before any search
        warnings.warn(f"stopped by {_named(anytime.stopped)} while {anytime.doing}; no complete mapping is known: "
                      "the cost function is slow, and the search begins once each node alone is priced", stacklevel=2)
        outcomes = [SearchOutcome(math.inf, [], False, anytime.stopped, 0, lower_bound=bound)
                    for bound in anytime.bounds_of]
        return combine(network, model, settings, problems, outcomes, anytime, start, max_solutions,
                       Listing(watch, len(network.nodes), on_progress, anytime.listing_progress))
    if resumed is not None:
        standing = {k: (done.best_cost, done.lower_bound) for k, done in enumerate(outcomes)}
        offset = sum(done.iterations for done in outcomes)
        before = offset
        if in_progress is not None:
            bound = anytime.bounds_of[len(outcomes)]
            if in_progress.contour is not None:  # the contours' proven bound
                bound = max(bound, in_progress.contour.proven)
            standing[len(outcomes)] = (in_progress.g_min, bound)
            before += in_progress.iterations
        anytime.restore(list(resumed.metadata["solve_trace"]), list(resumed.metadata.get("solve_bounds", [])),
                        standing)
        if checkpointer is not None:
            checkpointer.adopt(resumed)
    if checkpointer is not None:
        checkpointer.solve_trace, checkpointer.solve_bounds = anytime.trace, anytime.bounds
        checkpointer.start = start
    runner = _Runner(settings, address)
    try:
        for k, problem in enumerate(problems):
            if k < len(outcomes):  # finished before the checkpoint was written
                continue
            resumed_at = in_progress.iterations if in_progress else 0
            left = _remaining(limits, session, offset + resumed_at - before, resumed_at)
            if outcomes and outcomes[-1].stop_reason == StopReason.CHECKPOINT_FAILED:
                left = StopReason.CHECKPOINT_FAILED  # the machine refused a checkpoint: no more searching
            improved, progressed = anytime.listeners(k, offset, on_improvement, on_progress,
                                                     in_progress.elapsed if in_progress is not None else 0.0)
            if isinstance(left, str):  # the budget is spent: keep the all-singletons mapping
                fallback = all_singletons(problem)
                outcomes.append(SearchOutcome(fallback.cost, [((None,), fallback.cost, 0)], False, left, 0,
                                              lower_bound=anytime.bounds_of[k]))
                anytime.finish(k, offset, fallback.cost, anytime.bounds_of[k])
                continue
            if settings.method == "dcmap" and native_wanted() and not runs_natively(problem):
                warnings.warn(f"the native engine takes networks of up to {NATIVE_NODES} nodes: this component of "
                              f"{problem.topo.n} is searched by the Python engine, {SLOWER}",
                              stacklevel=2)
            outcome = runner.run(problem, left, improved, progressed, checkpointer, in_progress)
            in_progress = None
            outcomes.append(outcome)
            offset += outcome.iterations
            anytime.finish(k, offset, outcome.best_cost, outcome.lower_bound)
            if checkpointer is not None:
                if not outcome.proven:  # its checkpoint was written when it stopped
                    checkpointer = None
                    continue
                checkpointer.finish_component(outcome)
        if checkpointer is not None:
            checkpointer.save([], None)
    except BaseException:
        runner.close()
        raise
    runner.close(behind=True)  # Ray stops while the mappings are listed
    try:
        return combine(network, model, settings, problems, outcomes, anytime, start, max_solutions,
                       Listing(watch, len(network.nodes), on_progress, anytime.listing_progress))
    finally:
        runner.join()


def _named(reason: StopReason) -> str:
    """A stop reason as a user reads it: ``the time limit``, ``a signal``."""
    return {StopReason.INTERRUPTED: "a signal"}.get(reason, f"the {reason.replace('_', ' ')}")


def _remaining(limits: Limits, start: float, used: int, resumed_at: int = 0) -> Limits | str:
    """The limits left for the next component, or the name of the one used up. A
    component resumed at ``resumed_at`` iterations counts its iterations from there."""
    left_time = None if limits.time_limit is None else limits.time_limit - (time.perf_counter() - start)
    left_iterations = None if limits.max_iterations is None else limits.max_iterations - used
    if left_time is not None and left_time <= 0:
        return StopReason.TIME_LIMIT
    if left_iterations is not None and left_iterations <= 0:
        return StopReason.MAX_ITERATIONS
    return Limits(left_time, None if left_iterations is None else left_iterations + resumed_at,
                  limits.memory_limit_mb)


RAY_STOP_SECONDS = 1.5  # a private Ray's stop, waited for after the listing (1.14 to 1.40 s: results/ray-fixed-cost.csv)


class _Runner:
    """Runs the chosen method on one component at a time: serially, or for DCMAP on
    Ray workers (Ray is imported only then)."""

    def __init__(self, settings: SearchSettings, address: str | None) -> None:
        self.settings = settings
        self.started_ray = False
        self.stopping: threading.Thread | None = None  # Ray's stop, in a thread (close)
        self.ray_start: float | None = None  # seconds connect() took
        if settings.distributed:
            from .run.ray import cluster  # imports Ray
            from .run.ray.protocol import RayOptions

            self.cluster = cluster
            self.options = RayOptions(workers=settings.workers, link_table=settings.link_table,
                                      snapshot_every=settings.snapshot_every, address=address)
            clock = time.perf_counter()
            self.started_ray = cluster.connect(address, settings.workers)
            self.ray_start = time.perf_counter() - clock  # reported with the first component searched
        elif address is not None:
            raise ValueError(f"address {address!r} is used only by a search on Ray workers: give workers "
                             "(--workers) 2 or more with the dcmap method, or no address")

    def run(self, problem: Problem, limits: Limits, improved: OnImprovement,
            on_progress: Callable[[Progress], None] | None, saver: Saver | None = None,
            resume: Resumption | None = None) -> SearchOutcome:
        settings = self.settings
        if settings.distributed:
            from .run.ray.distributed import distributed_search

            if self.started_ray and limits.time_limit is not None:  # Ray's stop is inside the time limit too
                limits = replace(limits, time_limit=max(1e-3, limits.time_limit - RAY_STOP_SECONDS))
            outcome = distributed_search(problem, settings.alpha, settings.seed, self.options, limits, improved,
                                         on_progress, saver, resume, settings.first_budget, settings.contours)
            if self.ray_start is not None:
                outcome.statistics["ray_start_seconds"] = round(self.ray_start, 3)
                self.ray_start = None
            return outcome
        if settings.method == "dcmap":
            backend = ContourSearch if by_contours(settings.contours, resume) else SerialSearch
            return drive_serially(lambda: backend(problem, settings.alpha, settings.seed, limits, improved, resume,
                                                  on_progress is not None, settings.first_budget), saver, on_progress)
        if settings.method == "bfs":
            return bfs_search(problem, limits, improved, on_progress)
        return brute_force_search(problem, limits, improved, on_progress)

    def close(self, behind: bool = False) -> None:
        """Stop the Ray this runner started, if any (``behind``: in a thread, see :meth:`join`)."""
        if self.started_ray:
            self.started_ray = False
            if behind:
                self.stopping = self.cluster.disconnect_behind()
            else:
                self.cluster.disconnect()

    def join(self) -> None:
        """Wait for Ray's stop begun by ``close(behind=True)``."""
        if self.stopping is not None:
            self.stopping.join()
            self.stopping = None
