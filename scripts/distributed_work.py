"""Where a distributed search's expansions go (issue 58): the serial search of one
network, then the model of many workers (dcmap_dist/run/model.py) and real Ray runs
whose steps are counted in expansions (``RayOptions.step_iterations``), each proving the
serial optimum and optimal-mapping count (asserted), each with the breakdown of its
expansions against the serial search's (dcmap_dist/search/worklog.py). Rows are upserted
into ``results/distributed-work.csv`` (keyed by network, the first mapping's beam budget
(0: the greedy dive of the runs before issue 57's beam), runner, workers, step and queue);
``--table`` prints that file's rows of a network as a Markdown table. Its "span
speed-up" is the serial search's expansions over a model run's span (its rounds'
longest steps' expansions added up): what W cores would give if a step took the time of
its expansions, a worker's expansion cost a serial one's, and neither the coordinator
nor Ray kept a worker waiting between its steps (an estimate, not a measurement). Each
run's line also prints its span and its load: the least and the greatest worker's share
of the expansions, times the workers.

    python scripts/distributed_work.py water --model 2,4,8,16,32,64,256 --ray 2,4,8
    python scripts/distributed_work.py seagrass-2tbn --slices 3 --order paper --model 2,4

The serial search's log is kept in ``--cache`` (a pickle per network), so that one
network's runs can be split over several commands. A model run stops unproven past
``--limit`` times the serial search's expansions (its row then says so).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"
CSV = ROOT / "results" / "distributed-work.csv"
KEY = ("network", "first", "runner", "workers", "expansions", "depth", "seed")
COLUMNS = (*KEY, "iterations", "work", "serial", "above", "arrived", "local", "other", "above_any", "steps",
           "rounds", "span", "sent", "found_at", "proven", "optimal_cost", "solution_count", "seconds", "commit")


def problem_of(args: argparse.Namespace):
    """The network's problem as ``dcmap solve`` makes it (its one component), and its label."""
    from dcmap_dist.cost.user import load_cost
    from dcmap_dist.io.load import load_network
    from dcmap_dist.search.problem import Problem

    source = NETWORKS / (f"{args.network}.json" if args.slices else f"{args.network}.bif.gz")
    network = load_network(str(source), slices=args.slices)
    parts = network.components()
    if len(parts) != 1:
        sys.exit(f"{args.network} has {len(parts)} components: one expected")
    label = args.network + (f" x{args.slices}" if args.slices else "") + (f" ({args.order})" if args.order else "")
    model = load_cost("dcmap", order=args.order) if args.order else load_cost("dcmap")
    return Problem(parts[0], model, "merge", graph=network), label


def serial_of(problem, label: str, cache: Path, first: int, g_min: float = math.inf):
    """The serial search's run with its log (from the cache when there), ``G_min``
    starting at ``g_min`` if below the first mapping's cost, the first mapping the beam's
    of ``first`` expansions."""
    from dcmap_dist.run.model import serial_run

    path = cache / f"{label.replace(' ', '_')}-first{first}-serial{'-optimum' if g_min < math.inf else ''}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    run = serial_run(problem, log=True, g_min=g_min, first_budget=first)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(run, protocol=5))
    return run


def row(label: str, first: int, runner: str, run, serial, counts: dict[str, int] | None, seed: int = 0) -> dict:
    """A CSV row of one run (``counts``: its breakdown, None for the serial search)."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    counts = counts or {"serial": run.iterations, "above": 0, "arrived": 0, "local": 0, "other": 0,
                        "above_any": above_any(run.logs[0], run.optimal_cost)}
    return {"network": label, "first": first, "runner": runner, "workers": run.workers, "expansions": run.expansions,
            "depth": run.depth, "seed": seed, "iterations": run.iterations,
            "work": f"{run.iterations / serial.iterations:.3f}",
            **{kind: counts[kind] for kind in ("serial", "above", "arrived", "local", "other", "above_any")},
            "steps": run.steps, "rounds": run.rounds, "span": run.span, "sent": run.sent, "found_at": run.found_at,
            "proven": run.proven,
            "optimal_cost": f"{run.optimal_cost:.6f}", "solution_count": run.solution_count,
            "seconds": f"{run.seconds:.1f}", "commit": commit}


def above_any(log, optimum: float) -> int:
    """The expansions of ``log`` above ``optimum``."""
    from dcmap_dist.search.worklog import breakdown

    return breakdown(log, [log], optimum)["above_any"]


def upsert(rows: list[dict]) -> None:
    """The rows into :data:`CSV`, replacing those of the same key."""
    kept = list(csv.DictReader(CSV.open())) if CSV.exists() else []
    keys = {tuple(str(r[k]) for k in KEY) for r in rows}
    kept = [r for r in kept if tuple(r[k] for k in KEY) not in keys] + rows
    with CSV.open("w", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS)
        writer.writeheader()
        writer.writerows(kept)


def ray_run(problem, workers: int, expansions: int, first: int):
    """A real Ray run on ``workers`` workers (a private Ray of as many CPUs as it needs),
    its steps ``expansions`` long, its workers' logs; told as a model run."""
    import ray

    from dcmap_dist.limits import Limits
    from dcmap_dist.run.model import ModelRun, found_at, mapping_count
    from dcmap_dist.run.ray import cluster
    from dcmap_dist.run.ray.distributed import distributed_search
    from dcmap_dist.run.ray.protocol import RayOptions
    from dcmap_dist.run.ray.steps import QUEUED_STEPS

    ray.init(address="local", num_cpus=workers + 1, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=False)
    try:
        options = RayOptions(workers=workers, step_iterations=expansions, log_work=True)
        started = time.perf_counter()
        found = distributed_search(problem, 0.6, 0, options, Limits(), first_budget=first)
        seconds = time.perf_counter() - started
        logs = ray.get(cluster.pooled_coordinator(workers).worker_logs.remote())
    finally:
        cluster.disconnect()
    stats = found.statistics
    return ModelRun(workers=workers, expansions=expansions, depth=QUEUED_STEPS, iterations=found.iterations, span=0,
                    worker_iterations=stats["worker_iterations"], rounds=0, steps=stats["steps"], sent=stats["sent"],
                    proven=found.proven, optimal_cost=found.best_cost, solution_count=mapping_count(found),
                    found_at=found_at(found.trace, found.best_cost), seconds=seconds, logs=logs)


def cell(count: str, total: int) -> str:
    """A count and its share of ``total`` (blank when not measured)."""
    return f"{int(count):,} ({int(count) / total:.1%})" if count else ""


def table(label: str, first: int) -> str:
    """The CSV's rows of ``label`` whose first mapping is ``first``'s as a Markdown table."""
    rows = [r for r in csv.DictReader(CSV.open()) if r["network"] == label and r["first"] == str(first)]
    order = {"serial": 0, "ray": 1, "model": 2, "serial+opt": 3, "model+opt": 4}
    rows.sort(key=lambda r: (order[r["runner"]], int(r["workers"]), int(r["depth"]),
                             int(r["expansions"]), int(r["seed"])))
    lines = ["| runner | W | step (expansions) | queue | seed | expansions | work | serial also | above G* | "
             "dominated by an arrival | dominated locally | other | all above G* | best found at | rounds | "
             "span | span speed-up | seconds here |",
             "| --- |" + " ---: |" * 17]
    serial = next((int(r["iterations"]) for r in rows if r["runner"].startswith("serial")), 0)
    for r in rows:
        rounds, span = int(r.get("rounds") or 0), int(r.get("span") or 0)
        speed = f"{serial / span:.1f}" if span and r["runner"].startswith("model") else ""
        total = int(r["iterations"])
        share = {k: cell(r[k], total) for k in ("serial", "above", "arrived", "local", "other")}
        work = r["work"] if r["proven"] == "True" else f"> {r['work']} (stopped)"
        lines.append(f"| {r['runner']} | {r['workers']} | {int(r['expansions']):,} | {r['depth']} | {r['seed']} | "
                     f"{total:,} | "
                     f"{work} | {share['serial']} | {share['above']} | {share['arrived']} | {share['local']} | "
                     f"{share['other']} | {cell(r['above_any'], total)} | {int(r['found_at']):,} | {rounds or ''} | "
                     f"{f'{span:,}' if span else ''} | {speed} | "
                     f"{r['seconds']} |")
    return "\n".join(lines)


def main() -> None:
    from dcmap_dist.settings import FIRST_BUDGET

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("network", help="a network of ../shared/networks, without its suffix")
    parser.add_argument("--slices", type=int, help="unroll a template to this many slices")
    parser.add_argument("--order", help="the dcmap model's elimination order (e.g. paper)")
    parser.add_argument("--model", default="", help="workers of the model's runs, comma-separated")
    parser.add_argument("--ray", default="", help="workers of the Ray runs, comma-separated")
    parser.add_argument("--expansions", type=int, help="a step's expansions (default: a Ray step's, run/model.py)")
    parser.add_argument("--depth", type=int, default=2, help="steps queued per worker in the model (default 2)")
    parser.add_argument("--known-optimum", action="store_true",
                        help="G_min starts at the optimum, in the serial search and the model (runners serial+opt, "
                             "model+opt): the work of the proof alone")
    parser.add_argument("--first-budget", type=int, default=FIRST_BUDGET,
                        help=f"the first mapping's beam budget (default {FIRST_BUDGET}; 0: the greedy dive alone)")
    parser.add_argument("--seed", type=int, default=0, help="the model's seed (the serial search's is 0)")
    parser.add_argument("--limit", type=float, default=20.0, help="stop a model run past this many times the "
                                                                  "serial search's expansions")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "dcmap-work")
    parser.add_argument("--table", action="store_true", help="print the network's rows as Markdown, run nothing")
    args = parser.parse_args()
    from dcmap_dist.run.model import model_search, step_expansions
    from dcmap_dist.search.worklog import breakdown

    problem, label = problem_of(args)
    if args.table:
        print(table(label, args.first_budget))
        return
    serial = serial_of(problem, label, args.cache, args.first_budget)
    print(f"{label}: serial {serial.iterations:,} expansions, optimum {serial.optimal_cost} "
          f"({serial.solution_count:,} mappings), {serial.seconds:.1f} s", flush=True)
    rows = [row(label, args.first_budget, "serial", serial, serial, None)]
    g_min, suffix = math.inf, ""
    if args.known_optimum:
        g_min, suffix = serial.optimal_cost, "+opt"
        serial = serial_of(problem, label, args.cache, args.first_budget, g_min)
        print(f"  knowing the optimum: serial {serial.iterations:,} expansions, {serial.seconds:.1f} s", flush=True)
        assert (serial.optimal_cost, serial.solution_count) == (g_min, rows[0]["solution_count"])
        rows = [row(label, args.first_budget, "serial+opt", serial, serial, None)]
    runs = [("model", int(w)) for w in args.model.split(",") if w] + [("ray", int(w)) for w in args.ray.split(",") if w]
    if args.known_optimum and runs and runs[-1][0] == "ray":
        sys.exit("--known-optimum is for the model only")
    for runner, workers in runs:
        expansions = args.expansions or step_expansions(workers)
        if runner == "model":
            run = model_search(problem, workers, expansions, args.depth, seed=args.seed, log=True,
                               limit=round(args.limit * serial.iterations), g_min=g_min, first_budget=args.first_budget)
        else:
            run = ray_run(problem, workers, expansions, args.first_budget)
        if run.proven:
            assert (run.optimal_cost, run.solution_count) == (serial.optimal_cost, serial.solution_count), \
                f"{runner} W = {workers}: {run.optimal_cost}, {run.solution_count} mappings"
        counts = breakdown(serial.logs[0], run.logs, serial.optimal_cost)
        assert counts["total"] == run.iterations
        rows.append(row(label, args.first_budget, runner + suffix, run, serial, counts, args.seed if runner == "model" else 0))
        shares = [count * workers / max(1, run.iterations) for count in run.worker_iterations]
        span = f"span {run.span:,}, " if run.span else ""
        print(f"  {runner} W = {workers}: {run.iterations:,} expansions ({run.iterations / serial.iterations:.3f}), "
              f"{'proven' if run.proven else 'stopped'}, {run.seconds:.1f} s; {span}load {min(shares):.2f}-"
              f"{max(shares):.2f}; {counts}", flush=True)
        if run.footprint is not None:  # the model's engines at the end, together
            held = {name: f"{size / 2**20:.1f} MiB" for name, (_, size) in run.footprint.items()}
            print(f"    its engines hold: {held}", flush=True)
        upsert(rows)


if __name__ == "__main__":
    main()
