"""Serial benchmark: solve the bnlearn networks and the seagrass case study in order of
size, with a time limit per network, and compare DCMAP with breadth-first search and
with DCMAP stripped of its lower bound or of its lean dominance key.

Every run is its own process, so the peak memory of one run is its own. Writes
``results/serial.csv`` and the table in ``results/README.md``.

    python scripts/benchmark.py --time-limit 600 --other-time-limit 120 --max-nodes 40
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"
VARIANTS = {  # name: keyword arguments of solve()
    "dcmap": {"method": "dcmap"},
    "bfs": {"method": "bfs"},
    "dcmap-no-bound": {"method": "dcmap", "lower_bound": False},
    "dcmap-full-key": {"method": "dcmap", "key": "full"},
}
COLUMNS = ["network", "nodes", "arcs", "eta", "variant", "time_limit", "cost", "proven", "solutions",
           "iterations", "first_optimal_iteration", "first_optimal_seconds", "proof_seconds",
           "elapsed_seconds", "peak_memory_mb", "stop_reason"]


def networks(max_nodes: int | None) -> list[tuple[str, dict]]:
    """(label, load_network keyword arguments) in order of node count."""
    sys.path.insert(0, str(ROOT))
    from dcmap_dist.loading import load_network

    found = []
    for path in sorted(NETWORKS.glob("*.bif.gz")):
        found.append((path.name.removesuffix(".bif.gz"), {"source": str(path)}))
    template = str(NETWORKS / "seagrass-2tbn.json")
    found.append(("seagrass-1slice", {"source": template, "slices": 1, "order": "paper"}))
    found.append(("seagrass-2slices", {"source": template, "slices": 2, "order": "paper"}))
    sized = []
    for label, spec in found:
        size = len(load_network(spec["source"], slices=spec.get("slices")).nodes)
        if max_nodes is None or size <= max_nodes:
            sized.append((size, label, spec))
    return [(label, spec) for _, label, spec in sorted(sized, key=lambda t: (t[0], t[1]))]


def run_one(spec: dict, variant: str, time_limit: float) -> dict:
    """Solve one network in this process and describe the run."""
    sys.path.insert(0, str(ROOT))
    from dcmap_dist.loading import load_network
    from dcmap_dist.solve import solve
    from dcmap_dist.structure import eta

    network = load_network(spec["source"], slices=spec.get("slices"))
    result = solve(network, order=spec.get("order", "cpt"), time_limit=time_limit, **VARIANTS[variant])
    return {
        "nodes": len(network.nodes), "arcs": len(network.edges), "eta": f"{eta(network):.3g}",
        "cost": round(result.optimal_cost, 6), "proven": result.proven_optimal,
        "solutions": len(result.solutions), "iterations": result.iterations,
        "first_optimal_iteration": result.first_optimal_iteration,
        "first_optimal_seconds": _round(result.first_optimal_seconds),
        "proof_seconds": _round(result.elapsed_seconds) if result.proven_optimal else None,
        "elapsed_seconds": _round(result.elapsed_seconds),
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "stop_reason": result.stop_reason,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _blank(value: object) -> object:
    return "" if value is None else value


def run_isolated(label: str, spec: dict, variant: str, time_limit: float) -> dict:
    """``run_one`` in a child process; a crash or a hang past the limit is recorded."""
    command = [sys.executable, __file__, "--one", json.dumps([spec, variant, time_limit])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=time_limit + 300)
        row = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {
            "stop_reason": f"crashed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"}
    except subprocess.TimeoutExpired:
        row = {"stop_reason": "killed: did not stop at its time limit"}
    return {"network": label, "variant": variant, "time_limit": time_limit, **row}


def write_results(rows: list[dict], command: str, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "serial.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k) for k in COLUMNS})
    lines = [
        "# Serial benchmark", "",
        "Made by:", "", f"    {command}", "",
        f"on {time.strftime('%Y-%m-%d')}, one process per run, on a 2-core machine (runs one at a time).",
        "`cost` is the optimum when `proven` is yes, else the best found; times in seconds; "
        "memory is the run's peak resident size in MiB. `first opt.` is the iteration and "
        "second at which a mapping of the final cost was first found.", "",
        "| network | nodes | eta | variant | cost | proven | mappings | iterations | first opt. (it / s) "
        "| proof (s) | memory (MiB) | stop |",
        "| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        first = f"{r.get('first_optimal_iteration')} / {r.get('first_optimal_seconds')}"
        lines.append(
            f"| {r['network']} | {r.get('nodes', '')} | {r.get('eta', '')} | {r['variant']} | {r.get('cost', '')} "
            f"| {'yes' if r.get('proven') else 'no'} | {r.get('solutions', '')} | {r.get('iterations', '')} "
            f"| {first} | {_blank(r.get('proof_seconds'))} | {r.get('peak_memory_mb', '')} | {r.get('stop_reason', '')} |"
        )
    table = "\n".join(lines) + "\n"
    readme = out_dir / "README.md"
    text = readme.read_text() if readme.exists() else ""
    start, end = "<!-- serial benchmark -->", "<!-- end serial benchmark -->"
    block = f"{start}\n{table}{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = (text + "\n\n" if text else "") + block + "\n"
    readme.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--time-limit", type=float, default=600, help="seconds per network for dcmap")
    parser.add_argument("--other-time-limit", type=float, default=120,
                        help="seconds per network for bfs and the dcmap ablations")
    parser.add_argument("--max-nodes", type=int, default=40, help="skip larger networks (default 40)")
    parser.add_argument("--variants", default="dcmap,bfs,dcmap-no-bound,dcmap-full-key")
    parser.add_argument("--only", help="comma-separated network labels to run")
    parser.add_argument("--out", default=str(ROOT / "results"))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        spec, variant, time_limit = json.loads(args.one)
        print(json.dumps(run_one(spec, variant, time_limit)))
        return
    command = "python scripts/benchmark.py " + " ".join(sys.argv[1:])
    rows = []
    only = set(args.only.split(",")) if args.only else None
    for label, spec in networks(args.max_nodes):
        if only and label not in only:
            continue
        for variant in args.variants.split(","):
            limit = args.time_limit if variant == "dcmap" else args.other_time_limit
            row = run_isolated(label, spec, variant, limit)
            rows.append(row)
            print(json.dumps(row), flush=True)
            write_results(rows, command, Path(args.out))


if __name__ == "__main__":
    main()
