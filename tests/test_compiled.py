"""Tests for dcmap_dist.compiled: which engine runs (the check of a build:
tests/test_build.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from search_costs import comb_network

from dcmap_dist import compiled, solve


def test_describe_names_the_engine_that_runs(monkeypatch):
    if compiled.native_built():
        assert compiled.describe() == "native engine"
        monkeypatch.setenv(compiled.ENGINE_VARIABLE, "python")
        assert compiled.describe() == "Python engine; native engine built, off (DCMAP_ENGINE=python)"
    else:
        assert compiled.describe() == "Python engine"
    version = subprocess.run([sys.executable, "-m", "dcmap_dist", "--version"], capture_output=True, text=True)
    assert version.stdout.strip().endswith(f"({compiled.describe()})")


def test_an_unknown_engine_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "fast")
    with pytest.raises(ValueError, match="DCMAP_ENGINE='fast': expected native or python"):
        compiled.native_wanted()


def test_the_python_engine_is_plain_python():
    """Nothing but the native engine is an extension module: the Python engine runs from
    its sources."""
    import dcmap_dist.model.topology
    import dcmap_dist.search.explorer
    import dcmap_dist.search.problem

    for module in (dcmap_dist.search.problem, dcmap_dist.search.explorer, dcmap_dist.model.topology):
        assert module.__file__.endswith(".py"), module.__file__
    assert not list(compiled.PACKAGE.rglob("*.pxd"))


def test_the_installed_build_is_fresh():
    """No source of the native engine the tests import changed since its build
    (tests/test_build.py tests the check itself)."""
    compiled.check_build()
    assert compiled._stale == []


@pytest.mark.skipif(not compiled.native_built(), reason="the native engine is not built")
def test_both_engines_search_alike_beyond_a_machine_word(monkeypatch):
    """The native engine and the Python engine make the same search of a network whose
    layer holds 45 open components: bits past the 32nd of a branch's masks (a C shift of
    a 32-bit int once set them wrong, when the Python engine was compiled, and
    greedy_dive failed)."""
    runs = []
    for engine in ("native", "python"):
        monkeypatch.setenv(compiled.ENGINE_VARIABLE, engine)
        result = solve(comb_network(), max_iterations=3000, max_solutions=1)
        runs.append([result.iterations, result.optimal_cost, result.lower_bound, [p["cost"] for p in result.trace]])
    assert runs[0] == runs[1]
