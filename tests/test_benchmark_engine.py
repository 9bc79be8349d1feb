"""Tests for scripts/benchmark_engine.py: a small run against a baseline worktree, and its
refusal of runs that disagree."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "benchmark_engine.py"
ASIA = ROOT.parent / "shared" / "networks" / "asia.bif.gz"
CHILD = ROOT.parent / "shared" / "networks" / "child.bif.gz"

sys.path.insert(0, str(SCRIPT.parent))
import benchmark_engine  # noqa: E402


@pytest.mark.skipif(not CHILD.exists(), reason=f"{CHILD} is not here")
def test_a_run_against_head_compares_both_engines_and_removes_its_worktree(tmp_path):
    output = tmp_path / "engine.csv"
    before = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    # child (bundled): long enough (about a second) for a measurable ratio of times
    done = subprocess.run([sys.executable, str(SCRIPT), "--networks", "child", "--time-limit", "60",
                           "--baseline", "HEAD", "--pure-baseline", "--output", str(output)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(output)))
    assert [r["engine"] for r in rows] == ["baseline", "new"]
    assert all(r["proven"] == "True" and float(r["cost"]) == pytest.approx(639.4) and r["solutions"] == "5184"
               for r in rows)
    assert rows[0]["partitions_digest"] == rows[1]["partitions_digest"]
    assert float(rows[1]["speedup"]) > 0
    assert rows[0]["command"].startswith("python scripts/benchmark_engine.py --networks child")
    from dcmap_dist.compiled import describe

    build = describe().removesuffix(" engine")
    assert [r["build"] for r in rows] == ["Python", build]  # --pure-baseline: the worktree's source runs
    assert all(int(r["peak_mib"]) > 0 for r in rows)
    assert f"| child | new | {build} | True |" in done.stdout
    after = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before  # the baseline's worktree is gone


@pytest.mark.slow
@pytest.mark.skipif(not CHILD.exists(), reason=f"{CHILD} is not here")
def test_the_baseline_is_installed_as_pip_installs_it(tmp_path):
    """By default the baseline is installed beside this tree (compiled where it compiles),
    so that a compiled tree is compared with a compiled baseline."""
    output = tmp_path / "engine.csv"
    done = subprocess.run([sys.executable, str(SCRIPT), "--networks", "child", "--time-limit", "60",
                           "--baseline", "HEAD", "--output", str(output)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    from dcmap_dist.compiled import describe

    rows = list(csv.DictReader(open(output)))
    assert [r["build"] for r in rows] == [describe().removesuffix(" engine")] * 2


def test_runs_that_disagree_fail_the_benchmark():
    row = {"network": "asia", "engine": "baseline", "proven": True, "cost": 68.8, "solutions": 38,
           "partitions_digest": "a"}
    benchmark_engine.check_same({"baseline": row, "new": dict(row, engine="new")})
    benchmark_engine.check_same({"baseline": row, "new": dict(row, engine="new", proven=False, cost=70.0)})
    with pytest.raises(SystemExit, match="results differ on asia"):
        benchmark_engine.check_same({"baseline": row, "new": dict(row, engine="new", solutions=37)})
    with pytest.raises(SystemExit, match="results differ on asia"):
        benchmark_engine.check_same({"baseline": row, "new": dict(row, engine="new", partitions_digest="b")})
    benchmark_engine.check_same({"baseline": row, "new": dict(row, engine="new", solutions=37)}, strict=False)


@pytest.mark.skipif(not ASIA.exists(), reason=f"{ASIA} is not here")
def test_without_a_baseline_only_this_tree_runs(tmp_path):
    output = tmp_path / "engine.csv"
    done = subprocess.run([sys.executable, str(SCRIPT), "--networks", "asia", "--time-limit", "30",
                           "--baseline", "none", "--output", str(output)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(output)))
    assert [(r["engine"], r["proven"], r["cost"], r["speedup"]) for r in rows] == [("new", "True", "68.8", "")]


@pytest.mark.slow
@pytest.mark.skipif(not ASIA.exists(), reason=f"{ASIA} is not here")
def test_repeated_pairs_alternate_and_end_with_the_fastest_of_each(tmp_path):
    output = tmp_path / "engine.csv"
    # the baseline's source as it is (--pure-baseline): the pairs' order is what this tests,
    # and building a baseline (test_the_baseline_is_installed_as_pip_installs_it) takes minutes
    done = subprocess.run([sys.executable, str(SCRIPT), "--networks", "asia", "--time-limit", "30",
                           "--baseline", "HEAD", "--pure-baseline", "--repeat", "2", "--output", str(output)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(output)))
    assert [r["engine"] for r in rows] == ["baseline", "new", "baseline", "new"]
    assert all(r["proven"] == "True" and r["cost"] == "68.8" for r in rows)
    baseline = min(float(r["wall_seconds"]) for r in rows if r["engine"] == "baseline")
    new = min(float(r["wall_seconds"]) for r in rows if r["engine"] == "new")
    assert f"asia: fastest of 2: baseline {baseline} s, new {new} s" in done.stdout
    refused = subprocess.run([sys.executable, str(SCRIPT), "--networks", "asia", "--repeat", "0"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--repeat must be at least 1" in refused.stderr
