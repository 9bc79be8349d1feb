"""Tests for scripts/benchmark_memory.py: a small run walks every structure of the search
and appends one row per structure."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "benchmark_memory.py"
CHILD = ROOT.parent / "shared" / "networks" / "child.bif.gz"


@pytest.mark.skipif(not CHILD.exists(), reason=f"{CHILD} is not here")
def test_a_small_run_measures_every_structure(tmp_path):
    output = tmp_path / "memory.csv"
    done = subprocess.run([sys.executable, str(SCRIPT), "--networks", "child:3000", "--output", str(output)],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(output)))
    assert [r["structure"] for r in rows] == ["open branches", "link records", "histories", "dominated",
                                               "bound memo", "cost memo", "masks"]
    assert all(r["network"] == "child" and r["iterations"] == "3000" for r in rows)
    assert int(rows[1]["items"]) > 100 and float(rows[1]["bytes_per_item"]) > 0
    # every record keeps a history at least, and each history takes its 8-byte link to the
    # one before and 3 bytes at least (a count of bytes, not histories, read about 1.5)
    assert int(rows[2]["items"]) >= int(rows[1]["items"]) and float(rows[2]["bytes_per_item"]) > 11
    assert rows[0]["command"] == "python scripts/benchmark_memory.py --networks child:3000 --output " + str(output)
