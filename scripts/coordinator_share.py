"""The coordinator's share of a core against the number of workers W (issue 50): a
distributed search on a private Ray of this machine offering W logical CPUs (more
workers than cores is fine here: what is measured is the coordinator's own CPU, and a
worker's step lasts its step length of wall time however little CPU it gets), for a
fixed time; the coordinator's CPU seconds over the search's seconds, its CPU per step
taken in, and steps a second. Then a model fitted to the measurements, extrapolated.

    .venv/bin/python scripts/coordinator_share.py --workers 2 4 8 16 --seconds 20 \\
        --output results/coordinator-share.json

Each W runs in a process of its own (a Ray of its own). The model: a step costs the
coordinator ``a + b W`` CPU seconds (W batches come back with each step), and W
workers send ``W / step_seconds(W)`` steps a second, so the share is
``W (a + b W) / step_seconds(W)``; ``a`` and ``b`` by least squares on the measured
cost per step (when ``b`` comes out negative, as it does on two cores, where the
batches shrink as W grows, ``b = 0`` and ``a`` the dearest step measured). With
``--measured FILE`` the model is made again from an earlier run's measurements (for
another ``steps.step_seconds``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(workers: int, seconds: float, network: str, slices: int | None, order: str) -> dict:
    import ray

    from dcmap_dist.io.load import load_network
    from dcmap_dist.solve import solve

    ray.init(address="local", num_cpus=workers, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=False)
    try:
        net = load_network(network, slices=slices) if slices else load_network(network)
        result = solve(net, order=order, workers=workers, time_limit=seconds, max_solutions=1)
    finally:
        ray.shutdown()
    stats = result.components[0]["distributed"]
    return {"workers": workers, "elapsed": stats["elapsed"], "steps": stats["steps"],
            "coordinator_cpu": stats["coordinator_cpu"], "coordinator_busy": stats["coordinator_busy"],
            "share": stats["coordinator_cpu"] / stats["elapsed"],
            "cpu_per_step_ms": 1000 * stats["coordinator_cpu"] / max(stats["steps"], 1),
            "steps_per_second": stats["steps"] / stats["elapsed"], "iterations": result.iterations,
            "coordinator_memory_mb": stats["coordinator_memory_mb"]}


def fit(rows: list[dict]) -> tuple[float, float]:
    """``a``, ``b`` of the cost per step ``a + b W`` (seconds), by least squares."""
    n = len(rows)
    xs = [r["workers"] for r in rows]
    ys = [r["cpu_per_step_ms"] / 1000 for r in rows]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def model(a: float, b: float, workers: int) -> dict:
    from dcmap_dist.run.ray.steps import step_seconds

    step = step_seconds(workers)
    return {"workers": workers, "step_seconds": step, "steps_per_second": workers / step,
            "cpu_per_step_ms": 1000 * (a + b * workers), "share": workers * (a + b * workers) / step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--network", default="seagrass-2tbn")
    parser.add_argument("--slices", type=int, default=3)
    parser.add_argument("--order", default="paper")
    parser.add_argument("--model", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64, 128, 256])
    parser.add_argument("--output")
    parser.add_argument("--measured", help="the model of the measurements in this output of an earlier run")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single W, in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.seconds, args.network, args.slices, args.order)))
        return
    rows = json.loads(Path(args.measured).read_text())["measured"] if args.measured else []
    for workers in [] if args.measured else args.workers:
        done = subprocess.run([sys.executable, __file__, "--one", str(workers), "--seconds", str(args.seconds),
                               "--network", args.network, "--slices", str(args.slices), "--order", args.order],
                              capture_output=True, text=True, cwd=ROOT, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"W={workers:3d}: share {row['share']:.3f}, {row['cpu_per_step_ms']:.2f} ms a step, "
              f"{row['steps_per_second']:.0f} steps/s, {row['iterations']:,} iterations", flush=True)
    a, b = fit(rows)
    if b < 0:  # on this machine's 2 cores the batches shrink as W grows; on a cluster they would not:
        a, b = max(r["cpu_per_step_ms"] for r in rows) / 1000, 0.0  # the dearest step measured, for every W
    print(f"model: a step costs the coordinator {1000 * a:.3f} + {1000 * b:.4f} W ms")
    modelled = [model(a, b, w) for w in args.model]
    for row in modelled:
        print(f"W={row['workers']:3d}: step {row['step_seconds']:.2f} s, {row['steps_per_second']:.0f} steps/s, "
              f"share {row['share']:.3f} (model)")
    if args.output:
        Path(args.output).write_text(json.dumps({"network": args.network, "slices": args.slices,
                                                 "seconds": args.seconds, "measured": rows,
                                                 "model": {"a_ms": 1000 * a, "b_ms": 1000 * b, "rows": modelled}},
                                                indent=1) + "\n")


if __name__ == "__main__":
    main()
