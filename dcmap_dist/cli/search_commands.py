"""The commands that search: ``solve`` and ``resume``. A search runs with the run
options, stops cleanly on SIGINT or SIGTERM, keeps standard output for the result, and
ends with the result file and a summary."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..faults import EXIT_CODE as FAULT_EXIT_CODE, MACHINE_ERRNOS, EnvironmentFault
from ..io.dynamic import MAX_UNROLLED_NODES
from ..io.outputs import OutputError, check_output, write_atomic, write_pieces
from ..limits import COST_CALL, INTERRUPT, StopReason, memory_mb
from ..model.network import Network, TooLarge
from ..result import SolveResult
from ..solve import solve
from ..text import printable, readable
from .network_commands import load_from_options
from .display import ProgressDisplay

__all__ = ["MAX_SOLVE_NODES", "run_resume", "run_solve"]

# dcmap solve refuses larger networks unless --force: setting one up (before the search,
# outside --time-limit) takes minutes beyond it (docs/inputs.md)
MAX_SOLVE_NODES = 10_000


def run_solve(args: argparse.Namespace) -> int:
    if args.output and args.output != "-":
        check_output(Path(args.output), [Path(args.network)])
    if args.checkpoint:
        from ..checkpoint.session import check_checkpoint_path  # imports pyarrow

        check_checkpoint_path(Path(args.checkpoint), args.output and Path(args.output))
    try:
        network = load_from_options(args, MAX_UNROLLED_NODES if args.force else MAX_SOLVE_NODES)
    except TooLarge as exc:
        if args.force:
            raise
        fewer = "use fewer slices, or " if args.slices else ""
        raise TooLarge(f"{exc} by dcmap solve: setting up a larger network takes minutes, which --time-limit "
                       f"does not cover; {fewer}give --force") from None
    return _search(args, network, dict(
        cost=args.cost, scheme=args.scheme, method=args.method, alpha=args.alpha, seed=args.seed,
        order=args.order, addition=args.addition, link_key=args.link_key, use_bound=not args.no_bound,
        checkpoint=args.checkpoint, fresh_checkpoint=args.fresh_checkpoint))


def run_resume(args: argparse.Namespace) -> int:
    from ..checkpoint.session import Resume, check_checkpoint_path  # imports pyarrow

    if args.output and args.output != "-":
        check_output(Path(args.output), [])
    check_checkpoint_path(Path(args.checkpoint), args.output and Path(args.output))
    # the search's settings are the checkpoint's (solve reads them from it)
    return _search(args, None, dict(resume=Resume(Path(args.checkpoint), args.trust_checkpoint)))


def _search(args: argparse.Namespace, network: Network | None, settings: dict[str, Any]) -> int:
    """Run a solve with the run options of ``args``; SIGINT and SIGTERM stop it cleanly
    (a checkpoint and the result with the best so far are written; exit code 4)."""
    _check_memory_limit(args.memory_limit)
    progress = ProgressDisplay(enabled=not args.quiet)
    INTERRUPT.clear()
    handlers = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _stdout_to_stderr():
            result = solve(
                network, time_limit=args.time_limit, max_iterations=args.max_iterations,
                memory_limit_mb=args.memory_limit, max_solutions=args.max_solutions or None,
                on_improvement=progress.improved, on_progress=progress.update,
                workers=args.workers, address=args.address, link_table=args.link_table,
                snapshot_every=args.snapshot_every, contours=args.contours, checkpoint_every=args.checkpoint_every,
                first_budget=args.first_budget, **settings,
            )
    finally:
        progress.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    result.command = args.command
    # a proven search whose listing a limit or a signal cut short ends as that stop does
    finished = result.proven_optimal and result.stop_reason == StopReason.FINISHED
    status = 0 if finished else STOPPED.get(result.stop_reason, 3)
    if result.stop_reason == StopReason.RAY_LOST:
        lost = next((c["distributed"]["lost"] for c in result.components if "lost" in c.get("distributed", {})), "")
        folder = settings.get("checkpoint") or settings.get("resume")
        folder = getattr(folder, "directory", folder)
        again = f"go on from its last checkpoint with: dcmap resume {folder}" if folder else \
            "without --checkpoint it starts again from the beginning"
        print(f"dcmap: Ray was lost during the search ({lost}); the best mapping found so far is in the result; "
              f"{again}", file=sys.stderr)
    if args.output == "-":
        write_pieces(sys.stdout, result.json_pieces())
        print()
        return status
    if args.output:
        _write_result(Path(args.output), result)
    _summary(result, args.output)
    return status


# exit codes of an unproven solve; others (a limit): 3
STOPPED = {StopReason.INTERRUPTED: 4, StopReason.RAY_LOST: 5, StopReason.CHECKPOINT_FAILED: FAULT_EXIT_CODE}


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While a search runs, whatever is printed on standard output (Ray, or a user's
    cost function; also by the processes started meanwhile) goes to standard error:
    standard output carries only what the user asked for (``--output -`` stays valid
    JSON)."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output at all
        yield
        return
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _check_memory_limit(limit_mb: float | None) -> None:
    """Refuse a --memory-limit that this process already uses: it would stop the search at once."""
    used = memory_mb()
    if limit_mb is not None and used >= limit_mb:
        raise ValueError(f"--memory-limit {limit_mb:g} MiB is below the {used:.0f} MiB this process already "
                         "uses before searching")


def _interrupt(signum: int, _frame: Any) -> None:
    """SIGINT or SIGTERM: stop the search cleanly; a second one stops at once."""
    if INTERRUPT.is_set():
        raise KeyboardInterrupt
    INTERRUPT.set()
    started = COST_CALL.started
    doing = f", {COST_CALL.doing}" if COST_CALL.doing else ""
    waiting = "" if started is None else (
        f" once the cost function's call in progress returns (running for {time.perf_counter() - started:.1f} s"
        f"{doing})")
    print(f"dcmap: {signal.Signals(signum).name}: stopping; the best so far will be written{waiting} "
          "(send it again to stop at once)", file=sys.stderr)


def _write_result(path: Path, result: SolveResult) -> None:
    """Write a solve's result as it is encoded; if that fails, print it on stdout so the
    work is not lost (a full or read-only disk is a fault of the machine:
    :class:`EnvironmentFault`)."""
    try:
        write_atomic(path, itertools.chain(result.json_pieces(), "\n"))
    except OutputError as exc:
        write_pieces(sys.stdout, itertools.chain(result.json_pieces(), "\n"))
        if exc.errno in MACHINE_ERRNOS:
            raise EnvironmentFault(f"{exc}; the result is on stdout instead: free space (or give another "
                                   "--output) and save it from there") from None
        raise OutputError(f"{exc}; the result is on stdout instead") from None


def _summary(result: SolveResult, output: str | None) -> None:
    bound = f"no mapping costs less than {result.lower_bound:.1f}"
    if not math.isfinite(result.optimal_cost):  # stopped before a whole mapping was known
        print(f"{printable(result.network)}: no complete mapping found ({result.stop_reason}); {bound}")
    else:
        if not result.proven_optimal:
            status = f"best found, not proven ({result.stop_reason}); {bound} (gap {100 * result.gap:.2f}%)"
        elif result.stop_reason != StopReason.FINISHED:
            status = f"proven optimal; the listing of its mappings stopped ({result.stop_reason})"
        else:
            status = "proven optimal"
        print(f"{printable(result.network)}: cost {result.optimal_cost:.1f}, {status}")
    listed = "" if result.solutions_complete else f" ({readable(len(result.solutions))} listed)"
    print(f"{readable(result.solution_count)} mapping(s){listed}; {result.iterations} iterations "
          f"in {result.elapsed_seconds:.2f} s")
    for solution in result.solutions[:3]:
        print("  " + mapping_line(solution.clusters))
    if result.solution_count > 3:
        print(f"  ... and {readable(result.solution_count - 3)} more")
    if output:
        print(f"result written to {output}")
    hint = _serial_hint(result)
    if hint:
        print(hint)


LINE_WIDTH = 200  # a mapping's line in the summary is cut past this many characters


def mapping_line(clusters: list[list[Any]], width: int = LINE_WIDTH) -> str:
    """A mapping as ``{a, b} {c} ...``, cut as the summary cuts its lists: past ``width``
    characters, a cluster's names end in ``...`` with how many are left, and the line
    ends in ``... and N more clusters``."""
    pieces: list[str] = []
    used = 0
    for k, cluster in enumerate(clusters):
        names = list(map(printable, cluster))
        text = "{" + ", ".join(names) + "}"
        if used + len(text) > width:
            shown = []
            for name in names:  # as many names as fit, at least one
                if shown and used + len(", ".join([*shown, name])) + 20 > width:
                    break
                shown.append(name)
            if len(shown) < len(names):
                text = "{" + ", ".join(shown) + f", ... {len(names) - len(shown)} more" + "}"
            pieces.append(text)
            if k + 1 < len(clusters):
                pieces.append(f"... and {len(clusters) - k - 1} more clusters")
            break
        pieces.append(text)
        used += len(text) + 1
    return " ".join(pieces)


def _serial_hint(result: SolveResult) -> str | None:
    """A note when a search on Ray workers took longer than it would have serially: its
    workers' CPU (about what the serial search takes) is less than the time they searched
    plus Ray's start (its stop, which overlaps the listing, is not counted)."""
    runs = [c["distributed"] for c in result.components if "worker_cpu" in c.get("distributed", {})]
    if not runs:
        return None
    work = sum(sum(run["worker_cpu"]) for run in runs)
    spent = sum(run["elapsed"] + run.get("ray_start_seconds", 0.0) for run in runs)
    if work >= spent:
        return None
    return (f"note: this search took {spent:.1f} s on {runs[0]['workers']} Ray workers, Ray's start included; "
            f"its work was about {work:.1f} s of CPU, so it would have been faster serially (without --workers)")
