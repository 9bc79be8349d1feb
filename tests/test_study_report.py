"""Tests for scripts/study_report.py on a tiny study made by scripts/scaling_study.py."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from dcmap_dist.study.growth import fit_power  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_report_fits_and_tables(tmp_path: Path) -> None:
    study = [sys.executable, str(ROOT / "scripts" / "scaling_study.py"), "--templates", "random",
             "--random-sizes", "3,4", "--random-count", "2", "--max-slices", "3", "--run-budget", "30",
             "--study-budget", "60", "--replicate", "--output", "study.csv", "--results-dir", "runs"]
    done = subprocess.run(study, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = [sys.executable, str(ROOT / "scripts" / "study_report.py"), "--csv", "study.csv",
              "--results-dir", "runs", "--out", "out"]
    done = subprocess.run(report, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "scaling-study.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "study.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    with open(tmp_path / "out" / "scaling-study-fits.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        fits = {(f["measure"], f["family"]): f for f in reader}
    assert len(set(reader.fieldnames)) == len(reader.fieldnames), reader.fieldnames
    # the proof fit is the least-squares fit of the proven runs' iterations, zeros left out
    points = [(float(r["nodes"]), float(r["proof_iterations"])) for r in rows
              if r["proven"] == "True" and float(r["proof_iterations"]) > 0]
    expected = fit_power(*zip(*points))
    got = fits[("proof_iterations", "random")]
    assert int(got["points"]) == len(points)
    assert float(got["exponent"]) == pytest.approx(expected.slope, abs=1e-3)
    assert float(got["low"]) == pytest.approx(expected.low, abs=1e-3)
    assert fits[("proof_iterations", "all")]["exponent"] == got["exponent"]
    # the last optimal mapping's iteration comes from the run's result: the largest
    # iteration among its listed optimal mappings
    row = next(r for r in rows if r["T"] == "3")
    result = json.loads((tmp_path / "runs" / f"{row['template']}-T3-W1.json").read_text())
    assert result["solutions_complete"]
    last = max(s["iteration"] for s in result["solutions"])
    assert int(row["first_optimal_iteration"]) <= last <= int(row["proof_iterations"])
    assert "## Replication on the random templates" in done.stdout
    # every replicated run is counted: proven runs with T > k that have a replicated cost
    for k in (1, 2):
        runs = sum(1 for r in rows if r["proven"] == "True" and int(r["T"]) > k and r[f"replicated_k{k}_cost"])
        assert f"| {k} | {runs} |" in done.stdout
