"""Engine benchmark: the serial search of this tree against a baseline commit, in one run.

For each network the baseline (a ``git worktree`` of ``--baseline``, removed at the
end) and this tree solve it in turn, each in its own process on one core, with the
same time limit. A run reports iterations, iterations per CPU second, wall and CPU
time, the CPU time of the search alone (to its proof, before the optimal mappings are
listed and audited), peak memory (of the solve: read before the partitions are digested, which
builds lists of names as large as the listing), which engine ran (``build``: native or
Python; a baseline from before issue 56 says compiled or pure Python for its Python engine; the
baseline is installed beside this tree as pip installs it, compiled where it compiles,
unless ``--pure-baseline``) and, when proven, the time to proof; else the
lower bound and gap reached. Where both runs are proven, their optimal cost, their
``solution_count`` and, when both listed them all (:data:`LISTED` at most), their set of
optimal partitions must be equal (the script fails otherwise). Rows are appended to
``results/engine.csv`` with the command. ``--baseline none`` runs this tree alone (long
budgets on the networks still open). ``--repeat N`` runs each pair N times, alternating
baseline and new, and ends with the speed-up of the fastest run of each: on a shared
machine whose speed drifts over minutes, one pair measures the drift too.

    python scripts/benchmark_engine.py --networks insurance,water --time-limit 900
    python scripts/benchmark_engine.py --networks hailfinder --time-limit 3600 --baseline none
    python scripts/benchmark_engine.py --networks water --repeat 2
    python scripts/benchmark_engine.py --networks water:user --baseline 41ce64c
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import math
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"
BASELINE = "8458db3"  # main before the engine work of issue 10
MEMORY_LIMIT_MB = 16000  # default: a run stops cleanly with its gap before the machine's 24 GiB run out
LISTED = 100_000  # optimal mappings listed (and digested) at most; hepar2's are too many to list
COLUMNS = ["network", "engine", "commit", "proven", "cost", "solutions", "partitions_digest", "iterations",
           "wall_seconds", "cpu_seconds", "iterations_per_cpu_second", "proof_seconds", "lower_bound", "gap",
           "speedup", "time_limit", "date", "command", "build", "peak_mib", "stop", "memory_limit_mb",
           "search_cpu_seconds", "search_speedup"]


def network_spec(label: str) -> dict:
    """load_network keyword arguments for a network label (seagrass-1slice/-2slices too),
    and the cost model's kind after a colon: ``water:user``, ``water:function`` (see
    :func:`user_model`)."""
    label, _, cost = label.partition(":")
    if cost not in ("", "user", "function"):
        raise SystemExit(f"unknown cost model {cost!r} in {label}:{cost}: user or function")
    spec = {"cost": cost} if cost else {}
    if label.startswith("seagrass-"):
        slices = 1 if label == "seagrass-1slice" else int(label.split("-")[1].removesuffix("slices"))
        return {**spec, "source": str(NETWORKS / "seagrass-2tbn.json"), "slices": slices, "order": "paper"}
    return {**spec, "source": str(NETWORKS / f"{label}.bif.gz")}


def user_model(kind: str, order: str) -> object:
    """The built-in model as a user's: ``user``, an object whose ``evaluate`` and bound
    hooks call the model's (the same costs, bound and iterations; every call crosses
    into Python through the checks of a user's model); ``function``, a plain function of
    the context (no hooks: no bound, so more iterations)."""
    from dcmap_dist import DcmapCost

    model = DcmapCost(order=order)

    class UserDcmap:
        def evaluate(self, context):
            return model.evaluate(context)

        def __getattr__(self, name):
            if name.endswith("lower_bounds") or name.endswith("lower_bound") or name == "estimate":
                return getattr(model, name)
            raise AttributeError(name)

    def dcmap_function(context):
        return model.evaluate(context)

    return UserDcmap() if kind == "user" else dcmap_function


def run_one(tree: str, label: str, time_limit: float, memory_limit_mb: float) -> dict:
    """Solve one network with the package of ``tree`` (in this process)."""
    sys.path.insert(0, tree)
    import dcmap_dist  # only the package's face: a baseline may have another layout inside
    from dcmap_dist import load_network, solve

    if not Path(dcmap_dist.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"{tree}: the package was imported from {dcmap_dist.__file__}")
    if (Path(tree) / "dcmap_dist" / "compiled.py").exists():
        from dcmap_dist.compiled import describe
    else:  # a tree from before the compiled build (an editable install elsewhere would answer for it)
        def describe() -> str:
            return "pure Python engine"

    spec = network_spec(label)
    network = load_network(spec["source"], slices=spec.get("slices"))
    searched = []  # CPU seconds at each progress report: the last is the search's end, before the listing
    start, cpu = time.perf_counter(), time.process_time()
    order = spec.get("order", "cpt")
    model = {"cost": user_model(spec["cost"], order)} if "cost" in spec else {"order": order}
    result = solve(network, **model, time_limit=time_limit, max_solutions=LISTED,
                   memory_limit_mb=memory_limit_mb, on_progress=lambda _: searched.append(time.process_time()))
    wall, cpu, search_cpu = time.perf_counter() - start, time.process_time() - cpu, searched[-1] - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the solve's, before the digest's lists
    partitions = sorted(sorted(sorted(c) for c in s.clusters) for s in result.solutions)
    return {
        "proven": result.proven_optimal, "cost": result.optimal_cost, "solutions": result.solution_count,
        "partitions_digest": (hashlib.sha256(json.dumps(partitions).encode()).hexdigest()[:16]
                              if result.solutions_complete else None),
        "iterations": result.iterations, "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
        "search_cpu_seconds": round(search_cpu, 2),
        "iterations_per_cpu_second": round(result.iterations / max(cpu, 1e-9)),
        "proof_seconds": round(wall, 2) if result.proven_optimal else None,
        "lower_bound": result.lower_bound, "gap": result.gap, "build": describe().removesuffix(" engine"),
        "peak_mib": round(peak),
        "stop": result.stop_reason, "memory_limit_mb": memory_limit_mb,
    }


def run_isolated(tree: str, label: str, time_limit: float, memory_limit_mb: float) -> dict:
    """:func:`run_one` in a fresh process (its own memo caches and memory)."""
    done = subprocess.run([sys.executable, __file__, "--run-one", tree, label, str(time_limit),
                           str(memory_limit_mb)],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def commit_of(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="insurance,water,seagrass-2slices,hailfinder")
    parser.add_argument("--time-limit", type=float, default=900.0, help="seconds per run (900)")
    parser.add_argument("--baseline", default=BASELINE,
                        help=f"commit to compare with ({BASELINE}), or none to run this tree alone")
    parser.add_argument("--memory-limit", type=float, default=MEMORY_LIMIT_MB,
                        help=f"MiB per run ({MEMORY_LIMIT_MB}; less when two runs share the machine)")
    parser.add_argument("--output", default=str(ROOT / "results" / "engine.csv"))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each pair, alternating (1)")
    parser.add_argument("--expect-changes", action="store_true",
                        help="print, instead of failing on, proven results that differ from the baseline's "
                             "(a baseline with a known flaw)")
    parser.add_argument("--pure-baseline", action="store_true",
                        help="run the baseline's source in pure Python instead of installing it")
    parser.add_argument("--run-one", nargs=4, metavar=("TREE", "NETWORK", "SECONDS", "MIB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        tree, label, seconds, mib = args.run_one
        print(json.dumps(run_one(tree, label, float(seconds), float(mib))))
        return
    sys.path.insert(0, str(ROOT))  # not before --run-one: that one imports the tree it is given
    from dcmap_dist.io.outputs import append_csv_row

    command = "python scripts/benchmark_engine.py " + shlex.join(sys.argv[1:])
    date = datetime.date.today().isoformat()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    rows = []
    fastest: dict[str, dict[str, dict]] = {}  # network -> engine -> its fastest run
    with baseline_tree(args.baseline, args.pure_baseline) as baseline:
        engines = {"new": (ROOT, ROOT)} if baseline is None else {"baseline": baseline, "new": (ROOT, ROOT)}
        for label in args.networks.split(","):
            for _ in range(args.repeat):
                got = {}
                for engine, (tree, importable) in engines.items():
                    row = {"network": label, "engine": engine, "commit": commit_of(tree),
                           **run_isolated(str(importable), label, args.time_limit, args.memory_limit),
                           "time_limit": args.time_limit, "date": date, "command": command}
                    got[engine] = row
                    if engine != "baseline" and "baseline" in got:
                        row["speedup"] = speedup(got["baseline"], row)
                        row["search_speedup"] = round(got["baseline"]["search_cpu_seconds"]
                                                      / max(row["search_cpu_seconds"], 1e-9), 2)
                    print(json.dumps(row), flush=True)
                    append_csv_row(Path(args.output), row, COLUMNS)
                    rows.append(row)
                    best = fastest.setdefault(label, {}).get(engine)
                    if best is None or row["wall_seconds"] < best["wall_seconds"]:
                        fastest[label][engine] = row
                check_same(got, strict=not args.expect_changes)
    print(table(rows))
    if args.repeat > 1 and baseline is not None:
        for label, best in fastest.items():
            print(f"{label}: fastest of {args.repeat}: baseline {best['baseline']['wall_seconds']} s, "
                  f"new {best['new']['wall_seconds']} s, speed-up {speedup(best['baseline'], best['new'])}")


@contextlib.contextmanager
def baseline_tree(commit: str, pure: bool) -> Iterator[tuple[Path, Path] | None]:
    """A worktree of ``commit`` for the run and the folder its package is imported from,
    removed at the end (None for ``none``). Unless ``pure``, the baseline is installed
    there as pip installs it (compiled where its setup.py compiles), so that a compiled
    tree is compared with a compiled baseline; else the worktree's pure Python runs."""
    if commit == "none":
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="dcmap-baseline-") as scratch:
        baseline = Path(scratch) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(baseline), commit],
                       check=True)
        try:
            installed = baseline
            if not pure:
                installed = Path(scratch) / "installed"
                print(f"installing {commit} into {installed} ...", file=sys.stderr, flush=True)
                subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                                str(installed), str(baseline)], check=True)
            yield baseline, installed
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False)


def speedup(base: dict, new: dict) -> float | None:
    """Time to proof of the baseline over the new one when both are proven (None when
    the new one took no measurable time), else the ratio of iterations per CPU second."""
    if base["proven"] and new["proven"]:
        return round(base["wall_seconds"] / new["wall_seconds"], 2) if new["wall_seconds"] else None
    return round(new["iterations_per_cpu_second"] / max(base["iterations_per_cpu_second"], 1), 2)


def check_same(got: dict[str, dict], strict: bool = True) -> None:
    """Proven runs must agree on the optimal cost (within the SPEC's relative tolerance:
    engines that add the same costs in another order differ in the last bits), the
    solution count and (when both listed them all) the partitions. Unless ``strict``
    (a baseline known to be wrong), a difference is printed instead."""
    from dcmap_dist.search.tolerance import TOLERANCE

    proven = [row for row in got.values() if row["proven"]]
    if len(proven) == 2:
        keys = ("solutions", "partitions_digest")
        if any(row["partitions_digest"] is None for row in proven):
            keys = keys[:1]
        base, new = proven
        if (not math.isclose(base["cost"], new["cost"], rel_tol=TOLERANCE)
                or any(base[k] != new[k] for k in keys)):
            message = (f"results differ on {base['network']}: "
                       + "; ".join(f"{r['engine']} {[r[k] for k in ('cost',) + keys]}" for r in proven))
            if strict:
                raise SystemExit(message)
            print(message, flush=True)


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    head = ["network", "engine", "build", "proven", "iterations", "it/CPU s", "wall (s)", "CPU (s)", "search CPU (s)",
            "peak MiB", "gap", "speed-up", "search speed-up"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        gap = "" if r["proven"] or r["gap"] is None else f"{100 * r['gap']:.1f}%"
        lines.append(f"| {r['network']} | {r['engine']} | {r['build']} | {r['proven']} | {r['iterations']} | "
                     f"{r['iterations_per_cpu_second']} | {r['wall_seconds']} | {r['cpu_seconds']} | "
                     f"{r['search_cpu_seconds']} | {r['peak_mib']} | {gap} | {r.get('speedup') or ''} | "
                     f"{r.get('search_speedup') or ''} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
