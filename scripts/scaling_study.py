"""Scaling study on unrolled dynamic Bayesian networks: for each 2-slice template,
unroll T = 1, 2, 3, ... slices and solve each, one CSV row per run.

Templates (``--templates``): ``seagrass`` (order paper, its observed nodes), ``water``
and ``diabetes`` (recovered from ``../shared/networks``; diabetes without its static
nodes and partial slice), and ``random``: ``--random-count`` seeded random templates
(seeds ``--seed``, ``--seed`` + 1, ...) of each of ``--random-sizes`` nodes per slice
(see :func:`dcmap_dist.study.templates.random_template`).

Budgets: a run stops at ``--run-budget`` seconds, or at what is left of its template's
``--study-budget`` if that is less (the seconds of the template's recorded runs count);
a template's T loop ends at ``--max-slices``, when its budget is spent, or after the
first run that is not proven (recorded with its lower bound and gap).

Rows are appended to ``--output`` (by default ``scaling-study/scaling-study.csv`` in the
current folder, never the repository's results; the header only when the file is new;
a row is written whole in one write, or not at all), each run's result JSON goes to
``--results-dir/<template>-T<t>-W<w>.json`` (by default ``study/`` beside the CSV).
``--plot FIGURE`` runs nothing and draws the scaling figure of the CSV's rows. With ``--checkpoint DIR`` each run
checkpoints to ``DIR/<template>-T<t>-W<w>/``; rerunning the same command skips the runs
already in the CSV and resumes a run that was stopped before its row was written (its
limits then count from the resumption). ``--retry-unproven`` also resumes the runs
recorded unproven, with the new budget, and appends their new rows. Ctrl-C stops the
run in progress with a checkpoint and writes no row (exit code 4).

``--replicate`` adds, for T >= k, the cost of the cheapest replication over T slices of
the listed optimal mappings of the proven k-slice run (k = 1, 2; read from its result
JSON), and how many of its clusters were repaired (:mod:`dcmap_dist.study.replication`).

    python scripts/scaling_study.py --templates seagrass --max-slices 3 --run-budget 3600 \\
        --study-budget 7200 --checkpoint checkpoints/study --replicate
    python scripts/scaling_study.py --templates random --random-count 10 --random-sizes 3,4,5,6 \\
        --run-budget 120 --study-budget 600 --replicate
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dcmap_dist.checkpoint.arrow import generations  # noqa: E402
from dcmap_dist.cli.display import ProgressDisplay  # noqa: E402
from dcmap_dist.io.load import load_network  # noqa: E402
from dcmap_dist.io.outputs import append_csv_row, json_cost, write_atomic  # noqa: E402
from dcmap_dist.limits import INTERRUPT, memory_mb  # noqa: E402
from dcmap_dist.model.topology import eta  # noqa: E402
from dcmap_dist.result import SolveResult  # noqa: E402
from dcmap_dist.solve import solve  # noqa: E402
from dcmap_dist.study.replication import best_replication  # noqa: E402
from dcmap_dist.study.templates import STUDY_TEMPLATES, random_template, study_template  # noqa: E402

FAMILIES = (*STUDY_TEMPLATES, "random")
REPLICATED = [f"replicated_k{k}_{what}" for k in (1, 2) for what in ("cost", "repaired")]
COLUMNS = ["template", "family", "slice_nodes", "T", "nodes", "arcs", "eta", "cost", "proven", "lower_bound", "gap",
           "iterations", "first_optimal_iteration", "first_optimal_seconds", "proof_iterations", "proof_seconds",
           "solutions", "peak_memory_mb", "memory_before_mb", "workers", "budget_seconds", "elapsed_seconds",
           "cpu_seconds", "stop_reason", "resumed", *REPLICATED, "seed", "date", "command"]


@dataclass
class Template:
    """A template of the study: its row label, family, JSON, solve options and seed."""

    label: str
    family: str
    template: dict[str, Any]
    options: dict[str, Any]
    seed: int | None = None


def _list(convert: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """An argparse type: comma-separated values, each ``convert``-ed."""
    return lambda text: [convert(part) for part in text.split(",") if part.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--templates", type=_list(str), default=list(FAMILIES),
                        help=f"comma-separated, of {','.join(FAMILIES)} (default all)")
    parser.add_argument("--networks", type=Path, default=ROOT.parent / "shared" / "networks",
                        help="folder of seagrass-2tbn.json, water.bif.gz, diabetes.bif.gz")
    parser.add_argument("--random-count", type=int, default=10, help="random templates of each size (10)")
    parser.add_argument("--random-sizes", type=_list(int), default=[3, 4, 5, 6], help="nodes per slice (3,4,5,6)")
    parser.add_argument("--intra-density", type=float, default=0.4, help="intra-slice arc probability (0.4)")
    parser.add_argument("--temporal-density", type=float, default=0.15, help="temporal arc probability (0.15)")
    parser.add_argument("--max-states", type=int, default=4, help="states drawn from 1 to this (4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first random template of each size (0)")
    parser.add_argument("--max-slices", type=int, default=10, help="largest T (10)")
    parser.add_argument("--run-budget", type=float, default=600.0, metavar="S", help="seconds per run (600)")
    parser.add_argument("--study-budget", type=float, default=1800.0, metavar="S",
                        help="seconds per template, over its runs (1800)")
    parser.add_argument("--max-iterations", type=int, metavar="N", help="also stop each run after N iterations")
    parser.add_argument("--workers", type=int, default=1, help="Ray workers per run (1: serial, no Ray)")
    parser.add_argument("--address", help="Ray to attach to with --workers > 1 (default: a private local Ray)")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR", help="checkpoint each run under DIR")
    parser.add_argument("--checkpoint-every", type=float, metavar="S", help="seconds between checkpoints (600)")
    parser.add_argument("--retry-unproven", action="store_true",
                        help="resume the runs recorded unproven (with the new budget) instead of skipping them")
    parser.add_argument("--output", type=Path, default=Path("scaling-study") / "scaling-study.csv",
                        help="the study's CSV (default: scaling-study/scaling-study.csv in the current folder; "
                             "the repository's results/ are never written unless named)")
    parser.add_argument("--results-dir", type=Path,
                        help="folder of each run's result JSON (default: 'study' beside --output)")
    parser.add_argument("--plot", type=Path, metavar="FIGURE",
                        help="run nothing: draw the scaling figure of --output's rows to FIGURE (.png, .svg, ...)")
    parser.add_argument("--replicate", action="store_true",
                        help="cost the replication of the proven 1- and 2-slice optima over T slices")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.templates) - set(FAMILIES))
    if unknown:
        parser.error(f"unknown template {unknown[0]!r}: choose from {', '.join(FAMILIES)}")
    for name in ("random_count", "max_slices", "workers", "max_states", "max_iterations"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(args.run_budget, args.study_budget) <= 0:
        parser.error("budgets must be positive numbers of seconds")
    if args.results_dir is None:
        args.results_dir = args.output.parent / "study"
    return args


def templates(args: argparse.Namespace) -> list[Template]:
    """The study's templates, in the order of ``--templates``."""
    chosen = []
    for family in args.templates:
        if family != "random":
            template, options = study_template(family, args.networks)
            chosen.append(Template(family, family, template, options))
            continue
        for size in args.random_sizes:
            for seed in range(args.seed, args.seed + args.random_count):
                template = random_template(size, args.intra_density, args.temporal_density, args.max_states, seed)
                chosen.append(Template(template["name"], "random", template, {}, seed))
    return chosen


def recorded_rows(path: Path) -> dict[tuple[str, str, str], dict[str, str]]:
    """The newest row of each (template, T, workers) in the study CSV. A last line cut
    short (a write that never finished) is removed from the file."""
    if not path.exists() or path.stat().st_size == 0:
        return {}
    text = path.read_text()
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        print(f"{path}: removing a row that was cut short", file=sys.stderr)
        os.truncate(path, len(text.encode()))
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames and reader.fieldnames != COLUMNS:
        sys.exit(f"{path} has other columns than this study's: choose another --output")
    return {(row["template"], row["T"], row["workers"]): row for row in reader}


def replicated(entry: Template, slices: int, args: argparse.Namespace) -> dict[str, Any]:
    """The replication columns of a run of ``slices`` slices (empty when not computed)."""
    columns: dict[str, Any] = dict.fromkeys(REPLICATED, "")
    for k in (1, 2):
        path = args.results_dir / f"{entry.label}-T{k}-W{args.workers}.json"
        if not args.replicate or slices < k or not path.exists():
            continue
        optimum = json.loads(path.read_text())
        if not optimum["proven_optimal"]:
            continue
        mappings = [solution["clusters"] for solution in optimum["solutions"]]
        total, replication = best_replication(entry.template, mappings, k, slices, **entry.options)
        columns[f"replicated_k{k}_cost"] = json_cost(total)
        columns[f"replicated_k{k}_repaired"] = replication.repaired
    return columns


def run(entry: Template, slices: int, budget: float, args: argparse.Namespace) -> tuple[SolveResult, dict]:
    """Solve ``entry`` unrolled to ``slices`` slices within ``budget`` seconds (resuming
    its checkpoint if there is one); write its result JSON; return it and its row."""
    network = load_network(entry.template, slices=slices)
    name = f"{entry.label}-T{slices}-W{args.workers}"
    folder = args.checkpoint / name if args.checkpoint else None
    resume = folder if folder is not None and folder.is_dir() and generations(folder) else None
    command = [Path(sys.executable).name, *sys.argv]
    progress = ProgressDisplay(enabled=True)
    before = memory_mb()
    cpu = time.process_time()
    try:
        result = solve(network, time_limit=budget, max_iterations=args.max_iterations, workers=args.workers,
                       address=args.address, checkpoint=folder, checkpoint_every=args.checkpoint_every,
                       resume=resume, on_progress=progress.update, **entry.options)
    finally:
        progress.close()
    result.command = command
    write_atomic(args.results_dir / f"{name}.json", result.to_json() + "\n")
    cpu = time.process_time() - cpu + sum(sum(part.get("distributed", {}).get("worker_cpu", []))
                                          + part.get("distributed", {}).get("coordinator_cpu", 0.0)
                                          for part in result.components)
    proven = result.proven_optimal
    row = {
        "template": entry.label, "family": entry.family, "slice_nodes": len(entry.template["nodes"]),
        "T": slices, "nodes": len(network), "arcs": len(network.edges), "eta": eta(network),
        "cost": json_cost(result.optimal_cost), "proven": proven, "lower_bound": json_cost(result.lower_bound),
        "gap": round(result.gap, 12) if math.isfinite(result.gap) else "",
        "iterations": result.iterations, "first_optimal_iteration": result.first_optimal_iteration,
        "first_optimal_seconds": _seconds(result.first_optimal_seconds),
        "proof_iterations": result.iterations if proven else "",
        "proof_seconds": _seconds(result.elapsed_seconds) if proven else "",
        "solutions": result.solution_count, "peak_memory_mb": round(result.peak_memory_mb, 1),
        "memory_before_mb": round(before, 1), "workers": args.workers, "budget_seconds": round(budget, 3),
        "elapsed_seconds": _seconds(result.elapsed_seconds), "cpu_seconds": _seconds(cpu),
        "stop_reason": result.stop_reason, "resumed": resume is not None,
        **replicated(entry, slices, args),
        "seed": "" if entry.seed is None else entry.seed,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join(command),
    }
    return result, row


def _seconds(value: float | None) -> float | str:
    return "" if value is None else round(value, 3)


def study(entry: Template, args: argparse.Namespace, recorded: dict) -> bool:
    """Run one template's T loop; False when a run was interrupted (the study stops)."""
    print(f"{entry.label}: {entry.template.get('description', '')}", flush=True)
    spent = 0.0
    for slices in range(1, args.max_slices + 1):
        if spent >= args.study_budget:
            print(f"{entry.label}: study budget spent ({spent:.0f} s)", flush=True)
            break
        row = recorded.get((entry.label, str(slices), str(args.workers)))
        if row is not None and (row["proven"] == "True" or not args.retry_unproven):
            print(f"{entry.label} T={slices}: recorded (cost {row['cost']}, proven {row['proven']}), skipped",
                  flush=True)
            spent += float(row["elapsed_seconds"])
            if row["proven"] != "True":
                break
            continue
        result, row = run(entry, slices, min(args.run_budget, args.study_budget - spent), args)
        if result.stop_reason == "interrupted":
            print(f"{entry.label} T={slices}: interrupted, no row written; rerun the same command to resume",
                  flush=True)
            return False
        append_csv_row(args.output, row, COLUMNS)
        spent += result.elapsed_seconds
        status = ("proven" if result.proven_optimal
                  else f"not proven ({result.stop_reason}, gap {100 * result.gap:.2f}%)")
        print(f"{entry.label} T={slices}: {row['nodes']} nodes, cost {row['cost']}, {status}, "
              f"{result.iterations} iterations, {result.elapsed_seconds:.1f} s"
              f"{', resumed' if row['resumed'] else ''}", flush=True)
        if not result.proven_optimal:
            break
    return True


def _interrupt(signum: int, _frame: Any) -> None:
    """SIGINT or SIGTERM: stop the run in progress cleanly; a second one stops at once."""
    if INTERRUPT.is_set():
        raise KeyboardInterrupt
    INTERRUPT.set()
    print(f"scaling_study: {signal.Signals(signum).name}: stopping the run in progress", file=sys.stderr)


def plot(csv_path: Path, figure: Path) -> int:
    """Draw the scaling figure of a study's CSV (its newest row of each run); 2 if it
    cannot be read."""
    from dcmap_dist.viz.plots import plot_scaling

    if not csv_path.is_file():
        print(f"scaling_study: error: no study CSV at {csv_path} (give the study's --output)", file=sys.stderr)
        return 2
    try:
        fits = plot_scaling(list(recorded_rows(csv_path).values()), figure)
    except ValueError as exc:
        print(f"scaling_study: error: {csv_path}: {exc}", file=sys.stderr)
        return 2
    print(f"scaling figure of {csv_path} written to {figure} ({len(fits)} fitted series)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the study; 0 when done, 2 for bad input (named on stderr), 4 when interrupted."""
    args = parse_args(argv)
    if args.plot is not None:
        return plot(args.output, args.plot)
    try:
        chosen = templates(args)
    except ValueError as exc:  # a bad generator argument, a missing or malformed network file
        print(f"scaling_study: error: {exc}", file=sys.stderr)
        return 2
    recorded = recorded_rows(args.output)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    started_ray = False
    if args.workers > 1:
        from dcmap_dist.run.ray import driver as distributed  # imports Ray

        started_ray = distributed.connect(args.address, args.workers)
    try:
        for entry in chosen:
            if not study(entry, args, recorded):
                return 4
    finally:
        if started_ray:
            distributed.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
