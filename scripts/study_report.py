"""The figures and tables of a scaling study (results/README.md, section "Scaling
study"), from the CSV and the result JSONs that ``scripts/scaling_study.py`` wrote.

Writes ``scaling-study.png`` (iterations and seconds against nodes, log-log, with
each family's fitted exponent), ``scaling-study-fits.csv`` (every fit), and the
seagrass anytime figures (``seagrass-T<t>-trace.png``, ``seagrass-T1-clusters.png``)
to ``--out``, and prints the tables in Markdown.

    python scripts/study_report.py
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dcmap_dist.io.dynamic import unroll  # noqa: E402
from dcmap_dist.study.growth import PowerFit, fit_power  # noqa: E402
from dcmap_dist.study.similarity import similarities  # noqa: E402
from dcmap_dist.study.templates import study_template  # noqa: E402
from dcmap_dist.viz.drawing import draw_clusters  # noqa: E402
from dcmap_dist.viz.plots import plot_scaling, plot_trace  # noqa: E402

PAPER_EXPONENT = 2.0  # the paper's hypothesis: O(n^2) iterations to the first optimum, O(a n^2) to all
REAL = ("seagrass", "water", "diabetes")


def latest_rows(path: Path) -> list[dict[str, str]]:
    """The study's rows, the last one of each (template, T, workers) (a retried run's)."""
    with open(path, newline="") as handle:
        rows = {(r["template"], r["T"], r["workers"]): r for r in csv.DictReader(handle)}
    return list(rows.values())


def last_optimal_iteration(result_path: Path) -> int | None:
    """The iteration at which the last optimal mapping was found (a proven run whose
    optimal mappings are all listed), else None."""
    if not result_path.exists():
        return None
    result = json.loads(result_path.read_text())
    if not (result["proven_optimal"] and result["solutions_complete"] and result["solutions"]):
        return None
    return max(s["iteration"] for s in result["solutions"])


def proven_serial(rows: list[dict[str, str]], results_dir: Path) -> list[dict[str, str]]:
    """The proven serial runs, each with ``last_optimal_iteration`` (from its result
    JSON; empty when not known)."""
    out = []
    for r in rows:
        if r["proven"] == "True" and r["workers"] == "1":
            last = last_optimal_iteration(results_dir / f"{r['template']}-T{r['T']}-W1.json")
            out.append({**r, "last_optimal_iteration": "" if last is None else str(last)})
    return out


FIT_COLUMNS = ["measure", "family", "points", "exponent", "low", "high", "r_squared", "supports_2", "dropped_zero"]


def fit_row(column: str, family: str, fit: PowerFit | None, points: int, dropped: int) -> dict[str, Any]:
    """One line of the fits table (no fit below 3 points)."""
    if fit is None:
        return {"measure": column, "family": family, "points": points, "dropped_zero": dropped}
    return {"measure": column, "family": family, "points": fit.points, "exponent": round(fit.slope, 3),
            "low": round(fit.low, 3), "high": round(fit.high, 3), "r_squared": round(fit.r_squared, 3),
            "supports_2": fit.supports(PAPER_EXPONENT), "dropped_zero": dropped}


def fits(proven: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Power fits of iterations against nodes over the proven serial runs (from
    :func:`proven_serial`): per family, and over all families pooled, for the first
    optimal mapping, the last optimal mapping found, and the proof. Runs with 0
    iterations (solved by the greedy dive or without a search) cannot be drawn on a
    log axis and are counted apart."""
    out = []
    families = sorted({r["family"] for r in proven}) + ["all"]
    for column in ("first_optimal_iteration", "last_optimal_iteration", "proof_iterations"):
        for family in families:
            chosen = [r for r in proven if family in ("all", r["family"]) and r[column] != ""]
            points = [(float(r["nodes"]), float(r[column])) for r in chosen if float(r[column]) > 0]
            fit = fit_power(*zip(*points)) if len(points) >= 3 else None
            out.append(fit_row(column, family, fit, len(points), len(chosen) - len(points)))
    return out


def replication_table(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The real templates' T-slice optima against the replicated 1- and 2-slice optima."""
    out = []
    for r in sorted((r for r in rows if r["family"] in REAL and r["workers"] == "1"),
                    key=lambda r: (REAL.index(r["family"]), int(r["T"]))):
        entry = {"template": r["template"], "T": int(r["T"]), "nodes": int(r["nodes"]), "optimum": float(r["cost"]),
                 "proven": r["proven"] == "True", "gap": r["gap"]}
        for k in (1, 2):
            cost = r[f"replicated_k{k}_cost"]
            entry[f"k{k}"] = float(cost) if cost else None
            entry[f"k{k}_excess"] = (float(cost) / float(r["cost"]) - 1) if cost else None
            entry[f"k{k}_repaired"] = r[f"replicated_k{k}_repaired"]
        out.append(entry)
    return out


def random_replication(rows: list[dict[str, str]]) -> dict[str, Any]:
    """How often replicating the random templates' 1- and 2-slice optima is optimal,
    over their proven runs with T > k."""
    summary = {}
    for k in (1, 2):
        runs = [r for r in rows if r["family"] == "random" and r["proven"] == "True" and int(r["T"]) > k
                and r[f"replicated_k{k}_cost"]]
        excess = [float(r[f"replicated_k{k}_cost"]) / float(r["cost"]) - 1 for r in runs]
        summary[k] = {"runs": len(runs), "optimal": sum(e < 1e-9 for e in excess),
                      "median_excess": sorted(excess)[len(excess) // 2] if excess else math.nan,
                      "max_excess": max(excess, default=math.nan),
                      "repaired": sum(int(r[f"replicated_k{k}_repaired"] or 0) > 0 for r in runs)}
    return summary


def anytime(results_dir: Path, out: Path, networks: Path) -> list[dict[str, Any]]:
    """The seagrass runs' anytime figures, and when their improving mappings first come
    within 80% and 90% similarity of the optimal set."""
    table = []
    template, _ = study_template("seagrass", networks)
    for t in (1, 2, 3):
        path = results_dir / f"seagrass-T{t}-W1.json"
        if not path.exists():
            continue
        result = json.loads(path.read_text())
        plot_trace(result, out / f"seagrass-T{t}-trace.png", f"seagrass, {t} slice(s): anytime trace")
        if t == 1:
            network = unroll(template, 1)
            draw_clusters(network, result["solutions"][0]["clusters"], out / "seagrass-T1-clusters.png",
                          "seagrass, one slice: an optimal mapping (cost 1249.8)")
        trace = [p for p in result["trace"] if "clusters" in p]
        nodes = sorted(x for c in result["solutions"][0]["clusters"] for x in c)
        scores = similarities([p["clusters"] for p in trace], [s["clusters"] for s in result["solutions"]], nodes)
        first_at = {level: next((p["iteration"] for p, s in zip(trace, scores) if s >= level), None)
                    for level in (0.8, 0.9)}
        table.append({"T": t, "proven": result["proven_optimal"], "cost": result["optimal_cost"],
                      "improvements": len(trace), "first_optimal": result["first_optimal_iteration"],
                      "similarity_0.8": first_at[0.8], "similarity_0.9": first_at[0.9],
                      "iterations": result["iterations"], "solutions": result["solution_count"],
                      "start_similarity": round(scores[0], 3) if scores else None})
    return table


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of ``rows`` (the union of their keys, in order of appearance);
    gaps and ``*excess`` columns as percentages, costs with one decimal."""
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    lines = ["| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(k, row.get(k)) for k in keys) + " |")
    return "\n".join(lines)


def _cell(key: str, value: Any) -> str:
    if value is None or value == "":
        return ""
    if key == "gap" or key.endswith("excess"):
        return f"{float(value):.1%}"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4g}"
    return str(value)


def ratios(proven: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per family, the median over the proven serial runs (from :func:`proven_serial`)
    of the iterations to the last optimal mapping and to the proof, each divided by
    those to the first (the paper's a in O(a n^2)); runs whose first optimum came at
    iteration 0 are left out."""
    out = []
    for family in sorted({r["family"] for r in proven}):
        runs = [r for r in proven if r["family"] == family and r["first_optimal_iteration"] not in ("", "0")]
        last = sorted(float(r["last_optimal_iteration"]) / float(r["first_optimal_iteration"])
                      for r in runs if r["last_optimal_iteration"])
        proof = sorted(float(r["proof_iterations"]) / float(r["first_optimal_iteration"]) for r in runs)
        out.append({"family": family, "runs": len(runs),
                    "median last/first": last[len(last) // 2] if last else None,
                    "median proof/first": proof[len(proof) // 2] if proof else None})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, default=ROOT / "results" / "scaling-study.csv")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "results" / "study")
    parser.add_argument("--networks", type=Path, default=ROOT.parent / "shared" / "networks")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)
    rows = latest_rows(args.csv)
    shown = plot_scaling(rows, args.out / "scaling-study.png")
    print(f"wrote {args.out / 'scaling-study.png'} ({len(shown)} fitted series)")
    proven = proven_serial(rows, args.results_dir)
    fitted = fits(proven)
    with open(args.out / "scaling-study-fits.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIT_COLUMNS)
        writer.writeheader()
        writer.writerows(fitted)
    print("\n## Fitted exponents (iterations = c * nodes^b, 95% interval)\n")
    print(markdown(fitted))
    print("\n## Iterations to all optimal mappings over iterations to the first\n")
    print(markdown(ratios(proven)))
    print("\n## Replication of the k-slice optimum (real templates)\n")
    print(markdown(replication_table(rows)))
    print("\n## Replication on the random templates\n")
    print(markdown([{"k": k, **v} for k, v in random_replication(rows).items()]))
    print("\n## Seagrass anytime\n")
    print(markdown(anytime(args.results_dir, args.out, args.networks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
