"""Tests for scripts/scaling_study.py, run as a subprocess on tiny random templates."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dcmap_dist.io.load import load_network
from dcmap_dist.solve import solve
from dcmap_dist.study.templates import random_template

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "scaling_study.py"
RANDOM = ["--templates", "random", "--random-sizes", "3", "--random-count", "2", "--seed", "4",
          "--intra-density", "0.5", "--temporal-density", "0.3", "--run-budget", "30", "--study-budget", "60"]
TEMPLATES = [random_template(3, 0.5, 0.3, 4, seed) for seed in (4, 5)]


def study(tmp_path: Path, *args: str, output: str = "study.csv") -> str:
    """Run the script in ``tmp_path``; return its stdout."""
    command = [sys.executable, str(SCRIPT), *RANDOM, "--output", output, "--results-dir", "results",
               "--checkpoint", "ck", *args]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_rows_skips_and_resumes(tmp_path: Path) -> None:
    study(tmp_path, "--max-slices", "2", "--replicate")
    first = rows(tmp_path / "study.csv")
    assert [(r["template"], r["T"]) for r in first] == [(t["name"], str(s)) for t in TEMPLATES for s in (1, 2)]
    for row in first:
        template = next(t for t in TEMPLATES if t["name"] == row["template"])
        slices = int(row["T"])
        network = load_network(template, slices=slices)
        optimum = solve(network)
        assert (row["family"], row["slice_nodes"], row["seed"]) == ("random", "3", template["name"][-1])
        assert (int(row["nodes"]), int(row["arcs"])) == (len(network), len(network.edges))
        assert float(row["cost"]) == pytest.approx(optimum.optimal_cost, rel=1e-9)
        assert (row["proven"], row["gap"], row["resumed"], row["workers"]) == ("True", "0.0", "False", "1")
        assert row["proof_iterations"] == row["iterations"] and int(row["solutions"]) == optimum.solution_count
        assert float(row["proof_seconds"]) == float(row["elapsed_seconds"]) > 0
        # replicating the k-slice optimum over k slices gives it back
        assert float(row[f"replicated_k{slices}_cost"]) == pytest.approx(optimum.optimal_cost, rel=1e-9)
        assert row[f"replicated_k{slices}_repaired"] == "0"
        assert (row["replicated_k2_cost"] == "") == (slices == 1)
        saved = json.loads((tmp_path / "results" / f"{row['template']}-T{slices}-W1.json").read_text())
        assert saved["proven_optimal"] and saved["slices"] == slices
    text = (tmp_path / "study.csv").read_text()
    assert text.count("template,family") == 1

    # a rerun appends nothing: every run is recorded
    again = study(tmp_path, "--max-slices", "2", "--replicate")
    assert again.count("skipped") == 4
    assert (tmp_path / "study.csv").read_text() == text

    # a run stopped before its row was written resumes from its checkpoint; a row cut
    # short by a killed write is removed
    stopped = solve(load_network(TEMPLATES[0], slices=3), max_iterations=3,
                    checkpoint=tmp_path / "ck" / f"{TEMPLATES[0]['name']}-T3-W1")
    assert not stopped.proven_optimal
    with open(tmp_path / "study.csv", "a") as handle:
        handle.write(f"{TEMPLATES[0]['name']},random,3,3,9")
    study(tmp_path, "--max-slices", "3")
    extended = rows(tmp_path / "study.csv")
    assert extended[:4] == first
    assert [(r["template"], r["T"], r["resumed"], r["proven"]) for r in extended[4:]] == [
        (TEMPLATES[0]["name"], "3", "True", "True"), (TEMPLATES[1]["name"], "3", "False", "True")]
    assert float(extended[4]["cost"]) == pytest.approx(solve(load_network(TEMPLATES[0], slices=3)).optimal_cost)


def test_the_first_unproven_run_ends_a_template(tmp_path: Path) -> None:
    out = study(tmp_path, "--max-slices", "4", "--max-iterations", "3", output="limited.csv")
    found = rows(tmp_path / "limited.csv")
    for template in TEMPLATES:
        mine = [r for r in found if r["template"] == template["name"]]
        assert [r["proven"] for r in mine][-1] == "False"
        assert all(r["proven"] == "True" for r in mine[:-1])
        last = mine[-1]
        assert (last["stop_reason"], last["proof_iterations"], last["proof_seconds"]) == ("max_iterations", "", "")
        assert 0 <= float(last["gap"]) < 1 and float(last["lower_bound"]) <= float(last["cost"])
    assert "not proven (max_iterations" in out
    # skipped on a rerun, and the loop still ends there
    again = study(tmp_path, "--max-slices", "4", "--max-iterations", "3", output="limited.csv")
    assert again.count("proven False), skipped") == 2 and rows(tmp_path / "limited.csv") == found


def test_bad_arguments(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--templates", "random,alarm"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "unknown template 'alarm'" in done.stderr
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    done = subprocess.run([sys.executable, str(SCRIPT), *RANDOM, "--output", "other.csv"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 1 and "other.csv has other columns than this study's" in done.stderr
