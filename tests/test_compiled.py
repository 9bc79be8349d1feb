"""Tests for dcmap_dist.compiled: which modules run compiled, and which engine runs (the
check of a build: tests/test_build.py)."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from dcmap_dist import compiled

ROOT = Path(__file__).resolve().parents[1]


def test_describe_names_the_engine_that_runs(monkeypatch):
    found = compiled.compiled_modules()
    assert set(found) <= set(compiled.COMPILED)
    expected = {0: "pure Python engine", len(compiled.COMPILED): "compiled engine"}
    python = expected.get(len(found), f"engine compiled in part ({', '.join(found)})")
    if compiled.native_built():
        assert compiled.describe() == "native engine"
        monkeypatch.setenv(compiled.ENGINE_VARIABLE, "python")
        assert compiled.describe() == f"{python}; native engine built, off (DCMAP_ENGINE=python)"
    else:
        assert compiled.describe() == python
    version = subprocess.run([sys.executable, "-m", "dcmap_dist", "--version"], capture_output=True, text=True)
    assert version.stdout.strip().endswith(f"({compiled.describe()})")


def test_an_unknown_engine_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "fast")
    with pytest.raises(ValueError, match="DCMAP_ENGINE='fast': expected native or python"):
        compiled.native_wanted()


def test_the_running_modules_are_the_ones_reported():
    import dcmap_dist.search.problem as engine

    suffix = os.path.splitext(engine.__file__)[1]
    assert ("search/problem" in compiled.compiled_modules()) == (suffix != ".py")


def test_the_installed_build_is_fresh():
    """No source of the package the tests import changed since its build (tests/test_build.py
    tests the check itself)."""
    compiled.check_build()
    assert compiled._stale == []


@pytest.mark.skipif(len(compiled.compiled_modules()) != len(compiled.COMPILED) or not compiled.native_built(),
                    reason="the native and compiled engines are not installed")
def test_the_compiled_engine_searches_like_the_sources_beyond_a_machine_word(tmp_path):
    """The native engine, the compiled engine and its sources run as plain Python make the
    same search of a network whose layer holds 45 open components: bits past the 32nd of
    a branch's masks (a C shift of a 32-bit int once set them wrong, compiled only, and
    greedy_dive failed)."""
    runpy.run_path(str(ROOT / "scripts" / "test_pure_python.py"))["pure_copy"](tmp_path)
    script = ("import json; from search_costs import comb_network; from dcmap_dist import solve; "
              "r = solve(comb_network(), max_iterations=3000, max_solutions=1); "
              "print(json.dumps([r.iterations, r.optimal_cost, r.lower_bound, [p['cost'] for p in r.trace]]))")
    runs = []
    for path, engine in ((str(ROOT), "native"), (str(ROOT), "python"), (str(tmp_path), "python")):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([path, str(ROOT / "tests")]), DCMAP_ENGINE=engine)
        probe = "import dcmap_dist.compiled as c; print(c.describe()); "
        # -P: the checkout is not put first on sys.path
        done = subprocess.run([sys.executable, "-P", "-c", probe + script], env=env, capture_output=True, text=True,
                              check=True)
        runs.append(done.stdout.splitlines())
    assert [run[0] for run in runs] == ["native engine", "compiled engine; native engine built, off "
                                        "(DCMAP_ENGINE=python)", "pure Python engine"]
    assert runs[0][1] == runs[1][1] == runs[2][1]
