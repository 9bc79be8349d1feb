"""One SearchSettings from solve to checkpoint to result (dcmap_dist/settings.py): a
resumption from Python takes the checkpoint's settings as ``dcmap resume`` does, a
setting given again that contradicts the checkpoint is refused by name, and the
settings come back in the result; bad settings are refused by name before anything runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dcmap_dist.checkpoint.arrow import CheckpointError
from dcmap_dist.io.load import load_network
from dcmap_dist.settings import SearchSettings
from dcmap_dist.solve import solve

from search_costs import partition

# a search whose every setting differs from solve's defaults (and the model's order)
SETTINGS = dict(order="paper", addition=0.5, scheme="merge", link_key="full", use_bound=False, alpha=0.3, seed=5)
NETWORK = "child"  # proven in about a second with these settings


def summary(result) -> tuple:
    return (round(result.optimal_cost, 6), result.solution_count, result.proven_optimal,
            frozenset(partition(s.clusters) for s in result.solutions))


def reported(result) -> dict:
    """The settings a result reports (those of SearchSettings it holds)."""
    return {name: getattr(result, name) for name in ("scheme", "link_key", "use_bound", "alpha", "seed")} | {
        "order": result.cost_model["order"], "addition": result.cost_model["addition"]}


@pytest.fixture(scope="module")
def uninterrupted():
    return solve(load_network(NETWORK), max_solutions=None, **SETTINGS)


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.ray)])
def test_a_resumption_from_python_repeats_no_setting(tmp_path, workers, uninterrupted, request):
    if workers > 1:
        request.getfixturevalue("ray_session")
    network = load_network(NETWORK)
    first = solve(network, max_iterations=uninterrupted.iterations // 3, checkpoint=tmp_path / "ck", **SETTINGS)
    assert not first.proven_optimal
    resumed = solve(None, resume=tmp_path / "ck", max_solutions=None, workers=workers)
    assert summary(resumed) == summary(uninterrupted)
    assert reported(resumed) == reported(uninterrupted) == SETTINGS


def test_the_command_line_resumes_the_same_search(tmp_path, uninterrupted):
    """``dcmap resume DIR`` and ``solve(None, resume=DIR)`` continue the same search."""
    network = load_network(NETWORK)
    solve(network, max_iterations=uninterrupted.iterations // 3, checkpoint=tmp_path / "ck", **SETTINGS)
    shutil.copytree(tmp_path / "ck", tmp_path / "copy")
    done = subprocess.run([sys.executable, "-m", "dcmap_dist", "resume", str(tmp_path / "ck"), "-q", "-o",
                           str(tmp_path / "r.json"), "--max-solutions", "0"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=os.environ)
    assert done.returncode == 0, done.stderr
    from_python = solve(None, resume=tmp_path / "copy", max_solutions=None)
    data = json.loads((tmp_path / "r.json").read_text())
    assert (data["optimal_cost"], data["solution_count"], data["alpha"], data["seed"], data["link_key"]) == (
        round(from_python.optimal_cost, 9), from_python.solution_count, 0.3, 5, "full")
    assert summary(from_python) == summary(uninterrupted)


@pytest.mark.parametrize("change,named", [
    ({"alpha": 0.6}, "alpha"), ({"seed": 0}, "seed"), ({"link_key": "lean"}, "link_key"),
    ({"use_bound": True}, "use_bound"), ({"scheme": "single"}, "scheme"), ({"order": "cpt"}, "cost_model"),
    ({"addition": 0.6}, "cost_model"), ({"cost": "dcmap", "order": "cpt"}, "cost_model"),
])
def test_a_setting_that_contradicts_the_checkpoint_is_refused_by_name(tmp_path, change, named):
    network = load_network(NETWORK)
    solve(network, max_iterations=500, checkpoint=tmp_path / "ck", **SETTINGS)
    with pytest.raises(CheckpointError, match=f"its {named} is"):
        solve(None, resume=tmp_path / "ck", **change)
    agreeing = {name: SETTINGS.get(name, "dcmap") for name in change}
    assert solve(None, resume=tmp_path / "ck", max_iterations=600, **agreeing).iterations == 500 + 600


@pytest.mark.parametrize("bad,named", [
    ({"scheme": "both"}, "unknown scheme"), ({"method": "dfs"}, "unknown method"),
    ({"link_key": "short"}, "unknown link key"), ({"link_table": "shared"}, "unknown link table"),
    ({"alpha": 1.5}, "alpha must be"), ({"seed": 1.5}, "seed must be"), ({"workers": 0}, "workers must be"),
    ({"use_bound": "yes"}, "use_bound must be"), ({"snapshot_every": -1}, "snapshot_every must be"),
])
def test_bad_settings_are_refused_by_name(bad, named):
    with pytest.raises(ValueError, match=named):
        SearchSettings(**bad)
    with pytest.raises(ValueError, match=named):
        solve("paper-example", **bad)


def test_settings_are_frozen_and_replaced_with_checks():
    settings = SearchSettings()
    with pytest.raises(AttributeError):
        settings.alpha = 0.1
    assert settings.replace(alpha=0.1).alpha == 0.1
    with pytest.raises(ValueError, match="alpha"):
        settings.replace(alpha=2.0)
    assert not settings.distributed and settings.replace(workers=2).distributed
    assert not settings.replace(workers=2, method="bfs").distributed
    assert settings.replace(workers=2, method="bfs").of_result()["workers"] == 1


def test_a_checkpoint_written_at_41ce64c_resumes_with_its_settings(tmp_path):
    """tests/data/checkpoint-41ce64c-sachs: sachs stopped after 40 iterations by 41ce64c
    (before SearchSettings) with ``order="paper", alpha=0.3, seed=5, key="full"``. It
    resumes without those being repeated, and proves what the uninterrupted search does."""
    folder = tmp_path / "ck"
    shutil.copytree(Path(__file__).parent / "data" / "checkpoint-41ce64c-sachs", folder)
    resumed = solve(None, resume=folder, max_solutions=None)
    whole = solve(load_network("sachs"), order="paper", alpha=0.3, seed=5, link_key="full", max_solutions=None)
    assert summary(resumed) == summary(whole)
    assert (resumed.alpha, resumed.seed, resumed.link_key, resumed.cost_model["order"]) == (0.3, 5, "full", "paper")
