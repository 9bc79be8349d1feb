"""Do the limits bound the whole command? Runs ``dcmap solve`` on the cases of issue 55
(a listing of astronomically many optimal mappings, a slow cost function, a checkpointed
run under a time limit, a memory limit) and records, for each, the wall time of the
whole command, the seconds from a signal to its end, the exit code, the process's
maximum resident size and what the result says; writes ``results/limits.csv``.

    python scripts/benchmark_limits.py [--output results/limits.csv] [--only NAME,...]

The machine is shared: run it on an idle one, and read the figures against the limits
they were given (each row has its limit), not as speeds.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"
# runs dcmap in this process and writes its maximum resident size (MiB, the kernel's VmHWM) at exit
PEAK_OF = """
import atexit, sys
from dcmap_dist.cli import main
from dcmap_dist.limits import peak_mb
atexit.register(lambda: open("peak.txt", "w").write(str(peak_mb())))
sys.exit(main(sys.argv[1:]))
"""
SLOW_COST = "import time\ndef slow(ctx):\n    time.sleep(0.5)\n    return 1.0 + len(ctx.nodes) ** 2\n"
COLUMNS = ["case", "engine", "limit", "signal_at", "exit", "wall_seconds", "after_signal_seconds",
           "elapsed_seconds", "stop_reason", "proven", "listed", "count", "max_rss_mib", "peak_memory_mb"]


def chain_files(folder: Path) -> None:
    """chain300 and chain600 (x0 -> x1 -> ...), and 40 separate 3-node chains."""
    for n in (300, 600):
        names = [f"x{i}" for i in range(n)]
        folder.joinpath(f"chain{n}.json").write_text(json.dumps({
            "name": f"chain{n}", "nodes": [{"id": x, "states": 2} for x in names],
            "edges": [list(e) for e in zip(names, names[1:])], "observed": []}))
    names = [f"c{c}_{i}" for c in range(40) for i in range(3)]
    folder.joinpath("chains40.json").write_text(json.dumps({
        "name": "chains40", "nodes": [{"id": x, "states": 2} for x in names],
        "edges": [[f"c{c}_{i}", f"c{c}_{i + 1}"] for c in range(40) for i in range(2)], "observed": []}))
    folder.joinpath("slowcost.py").write_text(SLOW_COST)


CASES = {  # name: (arguments of dcmap solve, engine, seconds to the signal or None)
    "chain300-time5": (["chain300.json", "--time-limit", "5"], "native", None),
    "chain300-all": (["chain300.json"], "native", None),
    "chain300-sigint": (["chain300.json"], "native", 3.0),
    "chain600-time15": (["chain600.json", "--time-limit", "15"], "native", None),
    "chains40-all-time20": (["chains40.json", "--max-solutions", "0", "--time-limit", "20"], "native", None),
    "slow-cost-sigint": (["child", "--cost", "slowcost:slow"], "native", 2.5),
    "slow-cost-time3": (["child", "--cost", "slowcost:slow", "--time-limit", "3"], "native", None),
    "water-time8-checkpoint-native": (["water", "--time-limit", "8", "--checkpoint", "ck"], "native", None),
    "water-time8-checkpoint-python": (["water", "--time-limit", "8", "--checkpoint", "ck"], "python", None),
    "hepar2-time8-checkpoint-native": ([str(NETWORKS / "hepar2.bif.gz"), "--time-limit", "8", "--checkpoint", "ck"],
                                       "native", None),
    "hepar2-time8-checkpoint-python": ([str(NETWORKS / "hepar2.bif.gz"), "--time-limit", "8", "--checkpoint", "ck"],
                                       "python", None),
    "hepar2-memory250": ([str(NETWORKS / "hepar2.bif.gz"), "--memory-limit", "250"], "native", None),
}


def run(name: str, folder: Path) -> dict:
    """One case in a fresh folder: its row."""
    args, engine, signal_at = CASES[name]
    work = folder / name
    work.mkdir()
    for extra in folder.glob("*.*"):
        (work / extra.name).write_bytes(extra.read_bytes())
    env = {**os.environ, "DCMAP_ENGINE": engine}
    command = [sys.executable, "-c", PEAK_OF, "solve", *args, "-q", "-o", "r.json"]
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    after = None
    if signal_at is not None:
        time.sleep(signal_at)
        process.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        process.communicate(timeout=900)
        after = time.perf_counter() - sent
    else:
        process.communicate(timeout=900)
    wall = time.perf_counter() - start
    result = json.loads((work / "r.json").read_text()) if (work / "r.json").exists() else {}
    limit = next((f"{a} {b}" for a, b in zip(args, args[1:]) if a.endswith("-limit")), "")
    return {"case": name, "engine": engine, "limit": limit, "signal_at": signal_at or "", "exit": process.returncode,
            "wall_seconds": round(wall, 2), "after_signal_seconds": "" if after is None else round(after, 2),
            "elapsed_seconds": round(result.get("elapsed_seconds", float("nan")), 2),
            "stop_reason": result.get("stop_reason"), "proven": result.get("proven_optimal"),
            "listed": len(result.get("solutions", [])), "count": f"{result.get('solution_count', 0):.4g}",
            "max_rss_mib": round(float((work / "peak.txt").read_text()), 1),
            "peak_memory_mb": round(result.get("peak_memory_mb", float("nan")), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "results" / "limits.csv")
    parser.add_argument("--only", help="run only these cases (comma-separated)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(CASES)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        chain_files(folder)
        for name in names:
            row = run(name, folder)
            print(", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
            rows.append(row)
    with open(args.output, "w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
