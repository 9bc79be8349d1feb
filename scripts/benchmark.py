"""Serial benchmark: solve every network of ../shared/networks (the 24 bnlearn networks
and the seagrass case study, one and two slices) in order of size, with a time limit
per network, and compare DCMAP with breadth-first search and with DCMAP stripped of its
lower bound or of its lean dominance key.

Networks of up to ``--max-nodes`` nodes run every variant (DCMAP with ``--time-limit``,
the others with ``--other-time-limit``); larger ones run DCMAP and breadth-first search
with ``--large-time-limit``. Every run is its own process, so its peak memory is its
own. Rows are upserted into ``results/serial.csv`` (keyed by network and variant) and
``results/serial.md``, a page of its own, is rebuilt from it, with the commands that made
it (``--table-only`` rebuilds the page and runs nothing).

    python scripts/benchmark.py --time-limit 600 --other-time-limit 60 --large-time-limit 60
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
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
    "dcmap-no-bound": {"method": "dcmap", "use_bound": False},
    "dcmap-full-key": {"method": "dcmap", "key": "full"},
}
COLUMNS = ["network", "nodes", "arcs", "eta", "variant", "time_limit", "cost", "proven", "lower_bound", "gap",
           "solutions",
           "iterations", "first_optimal_iteration", "first_optimal_seconds", "proof_seconds",
           "elapsed_seconds", "peak_memory_mb", "stop_reason"]


def networks() -> list[tuple[int, str, dict]]:
    """(nodes, label, load_network keyword arguments) in order of node count."""
    sys.path.insert(0, str(ROOT))
    from dcmap_dist.io.load import load_network

    found = []
    for path in sorted(NETWORKS.glob("*.bif.gz")):
        found.append((path.name.removesuffix(".bif.gz"), {"source": str(path)}))
    template = str(NETWORKS / "seagrass-2tbn.json")
    found.append(("seagrass-1slice", {"source": template, "slices": 1, "order": "paper"}))
    found.append(("seagrass-2slices", {"source": template, "slices": 2, "order": "paper"}))
    sized = [(len(load_network(spec["source"], slices=spec.get("slices")).nodes), label, spec)
             for label, spec in found]
    return sorted(sized, key=lambda t: (t[0], t[1]))


def run_one(spec: dict, variant: str, time_limit: float) -> dict:
    """Solve one network in this process and describe the run."""
    sys.path.insert(0, str(ROOT))
    from dcmap_dist.io.load import load_network
    from dcmap_dist.model.topology import eta, scientific
    from dcmap_dist.solve import solve

    network = load_network(spec["source"], slices=spec.get("slices"))
    result = solve(network, order=spec.get("order", "cpt"), time_limit=time_limit, max_solutions=100,
                   **VARIANTS[variant])
    return {
        "nodes": len(network.nodes), "arcs": len(network.edges), "eta": scientific(eta(network), 3),
        "cost": round(result.optimal_cost, 6) if math.isfinite(result.optimal_cost) else None,
        "proven": result.proven_optimal,
        "lower_bound": round(result.lower_bound, 6),
        "gap": f"{100 * result.gap:.1f}%" if math.isfinite(result.gap) else None,
        "solutions": result.solution_count, "iterations": result.iterations,
        "first_optimal_iteration": result.first_optimal_iteration,
        "first_optimal_seconds": _round(result.first_optimal_seconds),
        "proof_seconds": _round(result.elapsed_seconds) if result.proven_optimal else None,
        "elapsed_seconds": _round(result.elapsed_seconds),
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "stop_reason": result.stop_reason,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _cell(value: object) -> str:
    """A table cell: "–" for a value that was not measured or not found."""
    return "–" if value in (None, "", "None", "inf") else str(value)


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


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def upsert(rows: list[dict], row: dict) -> list[dict]:
    """``rows`` with ``row`` replacing the row of the same network and variant."""
    kept = [r for r in rows if (r["network"], r["variant"]) != (row["network"], row["variant"])]
    return kept + [row]


def last_run(out_dir: Path) -> str | None:
    """The date of the last run, as the page (or, before it had a page of its own, the
    table in README.md) recorded it."""
    for name in ("serial.md", "README.md"):
        page = out_dir / name
        found = re.search(r"^Last run (\d{4}-\d{2}-\d{2})", page.read_text(), re.M) if page.exists() else None
        if found:
            return found.group(1)
    return None


def write_results(rows: list[dict], commands: list[str], out_dir: Path, run_date: str | None = None) -> None:
    """Write ``serial.csv``, ``serial-commands.txt`` and the page ``serial.md`` (its last
    run dated ``run_date``, today by default)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    order = {label: k for k, (_, label, _) in enumerate(networks())}
    variants = list(VARIANTS)
    rows = sorted(rows, key=lambda r: (order.get(r["network"], len(order)), variants.index(r["variant"])))
    with open(out_dir / "serial.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k) for k in COLUMNS})
    (out_dir / "serial-commands.txt").write_text("".join(c + "\n" for c in commands))
    run_date = run_date or time.strftime("%Y-%m-%d")
    lines = [
        "# Serial benchmark", "",
        "<!-- made by scripts/benchmark.py from serial.csv: edit the script, not this page -->", "",
        "Every network in order of size, solved by DCMAP and by breadth-first search, and on the "
        "smaller ones by DCMAP without its lower bound and with the full dominance key, each run "
        "in a process of its own with a time limit. The rows are those of the engine at the date "
        "of their run, not today's: the current figures are in [README.md](README.md).", "",
        "Made by (later commands replace the rows they rerun):", "",
        *[f"    {c}" for c in commands], "",
        f"Last run {run_date}; one process per run, one run at a time, on a 2-core machine.",
        "`cost` is the optimum when `proven` is yes, else the best found; `gap` is how far the "
        "best found may lie above the optimum (no mapping costs less than the open branches' "
        "least bound; 0% once proven; recorded for DCMAP only); times in seconds; "
        "memory is the run's peak resident size in MiB. `first opt.` is the iteration and "
        "second at which a mapping of the final cost was first found.", "",
        "| network | nodes | eta | variant | cost | proven | gap | mappings | iterations | first opt. (it / s) "
        "| proof (s) | memory (MiB) | stop |",
        "| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        proven = str(r.get("proven")) == "True"
        first = _cell(r.get("first_optimal_iteration"))
        if first != "–":
            first = f"{first} / {_cell(r.get('first_optimal_seconds'))}"
        lines.append(
            f"| {r['network']} | {_cell(r.get('nodes'))} | {_cell(r.get('eta'))} | {r['variant']} "
            f"| {_cell(r.get('cost'))} | {'yes' if proven else 'no'} "
            f"| {'0%' if proven else _cell(r.get('gap'))} | {_cell(r.get('solutions'))} | {_cell(r.get('iterations'))} | {first} "
            f"| {_cell(r.get('proof_seconds'))} | {_cell(r.get('peak_memory_mb'))} | {r.get('stop_reason', '')} |"
        )
    (out_dir / "serial.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--time-limit", type=float, default=600, help="seconds per network for dcmap")
    parser.add_argument("--other-time-limit", type=float, default=120,
                        help="seconds per network for bfs and the dcmap ablations")
    parser.add_argument("--max-nodes", type=int, default=40, help="networks up to this size run every variant")
    parser.add_argument("--large-time-limit", type=float, default=60, help="seconds per larger network")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="variants for the smaller networks")
    parser.add_argument("--only", help="comma-separated network labels to run")
    parser.add_argument("--out", default=str(ROOT / "results"))
    parser.add_argument("--table-only", action="store_true",
                        help="rebuild results/serial.md from serial.csv; run nothing")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        spec, variant, time_limit = json.loads(args.one)
        print(json.dumps(run_one(spec, variant, time_limit)))
        return
    out = Path(args.out)
    command = "python scripts/benchmark.py " + " ".join(sys.argv[1:])
    commands_file = out / "serial-commands.txt"
    commands = commands_file.read_text().splitlines() if commands_file.exists() else []
    commands = [c for c in commands if c != command] + [command]
    rows = read_rows(out / "serial.csv")
    if args.table_only:
        write_results(rows, commands[:-1], out, last_run(out))
        return
    only = set(args.only.split(",")) if args.only else None
    for size, label, spec in networks():
        if only and label not in only:
            continue
        small = size <= args.max_nodes
        requested = args.variants.split(",")
        for variant in requested if small else [v for v in ("dcmap", "bfs") if v in requested]:
            if not small:
                limit = args.large_time_limit
            else:
                limit = args.time_limit if variant == "dcmap" else args.other_time_limit
            row = run_isolated(label, spec, variant, limit)
            rows = upsert(rows, row)
            print(json.dumps(row), flush=True)
            write_results(rows, commands, out)


if __name__ == "__main__":
    main()
