"""Tests of the ``dcmap`` command line (info, cost, solve, template), run in-process
through ``dcmap_dist.cli.main`` and once through a subprocess."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shared_networks import NETWORKS

from dcmap_dist.cli import main
from dcmap_dist.progress import Progress
from dcmap_dist.io.load import load_network
from dcmap_dist.solve import solve

TESTS = Path(__file__).resolve().parent

OPTIMAL = [["A"], ["F"], ["D", "G"], ["E"], ["B"], ["C"]]
OPTIMAL_SET = {
    frozenset(map(frozenset, m)) for m in (
        OPTIMAL,
        [["A", "F"], ["D", "G"], ["E"], ["B"], ["C"]],
        [["A", "D", "G"], ["F"], ["E"], ["B"], ["C"]],
    )
}
# the cluster-layers of OPTIMAL (worked by hand in tests/test_cost_dcmap.py)
OPTIMAL_LAYERS = {
    ("F",): (0, 5.2), ("G",): (0, 10.4), ("D",): (1, 13.6), ("E",): (1, 7.2),
    ("A",): (2, 7.2), ("B",): (2, 5.2), ("C",): (2, 5.2),
}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, name, text) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def mapping_file(tmp_path, clusters, name="mapping.json") -> Path:
    return write(tmp_path, name, json.dumps({"clusters": clusters}))


def field(out: str, key: str) -> str:
    """The value column of a line ``key   value`` of ``dcmap info``."""
    match = re.search(rf"^{re.escape(key)}\s+(.*)$", out, re.M)
    assert match, f"no {key!r} line in:\n{out}"
    return match.group(1)


# =========================================================================== info


def test_info_paper_example(capsys):
    code, out, err = run(capsys, "info", "paper-example")
    assert code == 0 and not err
    assert field(out, "nodes").split()[0] == "7"
    assert field(out, "arcs").split()[0] == "6"
    assert field(out, "eta").split()[0] == "48"
    assert field(out, "naive cost").split()[0] == "85.8"


def test_info_paper_example_json(capsys):
    code, out, _ = run(capsys, "info", "paper-example", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["nodes"] == 7 and data["arcs"] == 6 and data["eta"] == 48
    assert data["naive_cost"] == pytest.approx(85.8, rel=1e-12)
    assert data["layers"] == 3 and data["nodes_per_layer"] == [2, 2, 3]
    assert data["components"] == 1 and data["long_arcs"] == 1


def test_info_seagrass_two_slices(capsys):
    code, out, _ = run(capsys, "info", "seagrass-2tbn", "--slices", "2", "--order", "paper")
    assert code == 0
    assert field(out, "nodes").split()[0] == "50"
    assert field(out, "naive cost").split()[0] == "3148386.4"
    code, out, _ = run(capsys, "info", "seagrass-2tbn", "--slices", "2", "--order", "paper", "--json")
    data = json.loads(out)
    assert data["nodes"] == 50
    assert data["naive_cost"] == pytest.approx(3148386.4, rel=1e-9)
    assert data["eta"] == 1514918115866050560000


def test_info_bad_network(capsys, tmp_path):
    bad = write(tmp_path, "cycle.json", json.dumps({
        "nodes": [{"id": "A", "states": 2}, {"id": "B", "states": 2}],
        "edges": [["A", "B"], ["B", "A"]]}))
    code, out, err = run(capsys, "info", bad)
    assert code == 2 and "cycle" in err and "Traceback" not in err


# =========================================================================== cost


def test_cost_of_the_optimal_mapping(capsys, tmp_path):
    """One row per cluster-layer with its cluster's number, so that the rows of one cluster
    show together (before, nothing said which cluster-layers shared a cluster)."""
    code, out, err = run(capsys, "cost", "paper-example", mapping_file(tmp_path, OPTIMAL))
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split() == ["cluster", "layer", "cost", "nodes"]
    assert lines[-1].startswith("total 54.0 (")
    rows, members = {}, {}
    for line in lines[1:-1]:
        match = re.fullmatch(r"(\d+)\s+(\d+)\s+([\d.]+)\s+(.*)", line.strip())
        assert match, line
        nodes = tuple(match.group(4).split(", "))
        rows[nodes] = (int(match.group(2)), float(match.group(3)))
        members.setdefault(int(match.group(1)), set()).update(nodes)
    assert rows.keys() == OPTIMAL_LAYERS.keys()
    for nodes, (layer, cost) in OPTIMAL_LAYERS.items():
        assert rows[nodes][0] == layer
        assert rows[nodes][1] == pytest.approx(cost, abs=0.05)
    assert sorted(map(sorted, members.values())) == sorted(map(sorted, OPTIMAL))


def test_cost_json(capsys, tmp_path):
    code, out, _ = run(capsys, "cost", "paper-example", mapping_file(tmp_path, OPTIMAL), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"total", "cluster_layers"}
    assert data["total"] == pytest.approx(54.0, rel=1e-12)
    assert len(data["cluster_layers"]) == 7
    got = {tuple(row["nodes"]): (row["layer"], row["cost"]) for row in data["cluster_layers"]}
    assert got.keys() == OPTIMAL_LAYERS.keys()
    for nodes, (layer, cost) in OPTIMAL_LAYERS.items():
        assert got[nodes][0] == layer and got[nodes][1] == pytest.approx(cost, rel=1e-12)
    assert sum(row["cost"] for row in data["cluster_layers"]) == pytest.approx(data["total"])


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_cost_of_every_optimal_mapping(capsys, tmp_path, order):
    for k, clusters in enumerate(OPTIMAL_SET):
        path = mapping_file(tmp_path, [sorted(c) for c in clusters], f"m{k}.json")
        code, out, _ = run(capsys, "cost", "paper-example", path, "--json", "--order", order)
        assert code == 0 and json.loads(out)["total"] == pytest.approx(54.0, rel=1e-12)


def test_cost_with_a_user_function(capsys, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    from search_costs import hash_cost

    from dcmap_dist.cost.base import evaluate_mapping
    from dcmap_dist.cost.user import FunctionCost

    code, out, _ = run(capsys, "cost", "paper-example", mapping_file(tmp_path, OPTIMAL), "--json",
                       "--cost", "search_costs:hash_cost")
    assert code == 0
    expected = sum(c.cost for c in evaluate_mapping(load_network("paper-example"), OPTIMAL,
                                                    FunctionCost(hash_cost)))
    assert json.loads(out)["total"] == pytest.approx(expected, rel=1e-12)


def test_cost_infeasible_mapping(capsys, tmp_path):
    clusters = [["A", "B"], ["F"], ["D", "G"], ["E"], ["C"]]
    code, out, err = run(capsys, "cost", "paper-example", mapping_file(tmp_path, clusters))
    assert code == 2
    assert not out
    assert "['A', 'B']" in err and "infeasible" in err
    assert "Traceback" not in err


def test_cost_single_scheme_rejects_a_merge(capsys, tmp_path):
    # {A, B, D, F} is feasible under merge (A and B join D's cluster), not under single
    clusters = [["A", "B", "D", "F"], ["C", "E", "G"]]
    path = mapping_file(tmp_path, clusters)
    code, _, _ = run(capsys, "cost", "paper-example", path)
    assert code == 0
    code, _, err = run(capsys, "cost", "paper-example", path, "--scheme", "single")
    assert code == 2 and "infeasible" in err


@pytest.mark.parametrize("text, message", [
    (json.dumps({"clusters": [["A"], ["F"], ["D", "G"], ["E"], ["B"]]}), "'C'"),
    (json.dumps({"clusters": OPTIMAL + [["Z"]]}), "'Z'"),
    (json.dumps({"clusters": [["A", "A"], ["F"], ["D", "G"], ["E"], ["B"], ["C"]]}), "'A'"),
    (json.dumps({"clusters": [["A"], [], ["F"], ["D", "G"], ["E"], ["B"], ["C"]]}), "empty"),
    ("this is not json {", "not valid JSON"),
    (json.dumps({"mapping": OPTIMAL}), "clusters"),
    (json.dumps(OPTIMAL), "clusters"),
], ids=["missing-node", "unknown-node", "node-twice", "empty-cluster", "not-json", "no-clusters",
        "bare-list"])
def test_cost_bad_mapping_files(capsys, tmp_path, text, message):
    path = write(tmp_path, "bad.json", text)
    code, out, err = run(capsys, "cost", "paper-example", path)
    assert code == 2
    assert not out
    assert err.startswith("dcmap: error:") and message in err
    assert "Traceback" not in err


def test_cost_missing_mapping_file(capsys, tmp_path):
    path = tmp_path / "nowhere.json"
    code, out, err = run(capsys, "cost", "paper-example", path)
    assert code == 2 and str(path) in err and "Traceback" not in err


@pytest.mark.parametrize("clusters", [5, [5], [[["A"]]]], ids=["number", "number-cluster", "nested-list"])
def test_cost_malformed_clusters(capsys, tmp_path, clusters):
    path = write(tmp_path, "bad.json", json.dumps({"clusters": clusters}))
    code, _, err = run(capsys, "cost", "paper-example", path)
    assert code == 2 and "dcmap: error:" in err


# =========================================================================== solve


def solve_json(capsys, *argv, code=0):
    got, out, err = run(capsys, "solve", *argv, "--output", "-")
    assert got == code, err
    return json.loads(out), err


def test_solve_to_stdout(capsys):
    data, _ = solve_json(capsys, "paper-example", "--quiet")
    assert data["optimal_cost"] == pytest.approx(54.0, rel=1e-9)
    assert data["proven_optimal"] is True
    assert len(data["solutions"]) == 3
    assert {frozenset(map(frozenset, s["clusters"])) for s in data["solutions"]} == OPTIMAL_SET
    assert data["network"] == "paper-example" and data["method"] == "dcmap"


def test_solve_records_how_to_reproduce_it(capsys):
    from datetime import datetime, timezone

    import dcmap_dist

    data, _ = solve_json(capsys, "paper-example", "--seed", "3", "-q")
    assert data["command"] == ["dcmap", "solve", "paper-example", "--seed", "3", "-q", "--output", "-"]
    started = datetime.fromisoformat(data["started_at"])
    assert started.tzinfo == timezone.utc and abs((datetime.now(timezone.utc) - started).total_seconds()) < 600
    assert data["environment"]["dcmap_dist"] == dcmap_dist.__version__
    assert data["environment"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert {"platform", "numpy", "networkx"} <= data["environment"].keys()
    assert data["seed"] == 3 and data["network_hash"]


def test_solve_to_a_file(capsys, tmp_path):
    target = tmp_path / "sub" / "result.json"
    code, out, err = run(capsys, "solve", "paper-example", "--output", target)
    assert code == 0
    data = json.loads(target.read_text())
    assert data["optimal_cost"] == pytest.approx(54.0) and len(data["solutions"]) == 3
    assert "54.0" in out and "proven optimal" in out and str(target) in out
    assert not [p for p in target.parent.iterdir() if p.name != "result.json"]  # no temp files left


def test_solve_bad_network_leaves_no_file(capsys, tmp_path):
    bad = write(tmp_path, "cycle.json", json.dumps({
        "nodes": [{"id": "A", "states": 2}, {"id": "B", "states": 2}, {"id": "C", "states": 2}],
        "edges": [["A", "B"], ["B", "C"], ["C", "A"]]}))
    target = tmp_path / "out" / "result.json"
    code, out, err = run(capsys, "solve", bad, "--output", target)
    assert code == 2
    assert "cycle" in err and "Traceback" not in err
    assert not target.exists()
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@pytest.mark.parametrize("method", ["bfs", "brute"])
@pytest.mark.parametrize("scheme", ["merge", "single"])
def test_solve_methods(capsys, method, scheme):
    data, _ = solve_json(capsys, "paper-example", "--method", method, "--scheme", scheme, "-q")
    assert data["method"] == method and data["scheme"] == scheme
    assert data["optimal_cost"] == pytest.approx(54.0) and data["proven_optimal"] is True
    assert {frozenset(map(frozenset, s["clusters"])) for s in data["solutions"]} == OPTIMAL_SET


def test_solve_user_cost(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    from search_costs import tie_cost

    data, _ = solve_json(capsys, "paper-example", "--cost", "search_costs:tie_cost", "-q")
    expected = solve(load_network("paper-example"), tie_cost, method="brute")
    assert data["proven_optimal"] is True
    assert data["optimal_cost"] == pytest.approx(expected.optimal_cost, rel=1e-9)
    assert ({frozenset(map(frozenset, s["clusters"])) for s in data["solutions"]}
            == {frozenset(map(frozenset, s.clusters)) for s in expected.solutions})
    assert data["cost_model"]["name"] == "search_costs:tie_cost"


def test_solve_unknown_user_cost(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    code, out, err = run(capsys, "solve", "paper-example", "--cost", "search_costs:nothing_here")
    assert code == 2 and "nothing_here" in err and "Traceback" not in err
    code, out, err = run(capsys, "solve", "paper-example", "--cost", "no_such_module_xyz:f")
    assert code == 2 and "no_such_module_xyz" in err


def test_solve_time_limit(capsys):
    data, _ = solve_json(capsys, "seagrass-2tbn", "--slices", "2", "--order", "paper",
                         "--time-limit", "0.3", "-q", code=3)
    assert data["proven_optimal"] is False and data["stop_reason"] == "time_limit"
    assert math.isfinite(data["optimal_cost"]) and data["solutions"]


def test_solve_max_iterations(capsys):
    data, _ = solve_json(capsys, "child", "--max-iterations", "50", "-q", code=3)
    assert data["proven_optimal"] is False and data["stop_reason"] == "max_iterations"
    assert math.isfinite(data["optimal_cost"]) and data["solutions"]


def test_solve_summary_says_not_proven(capsys, tmp_path):
    # a search stopped by a limit exits 3, also when it writes its result to a file
    code, out, _ = run(capsys, "solve", "child", "--max-iterations", "50", "-q")
    assert code == 3 and "not proven" in out and "max_iterations" in out
    target = tmp_path / "stopped.json"
    code, out, _ = run(capsys, "solve", "child", "--max-iterations", "50", "-q", "-o", target)
    assert code == 3 and json.loads(target.read_text())["proven_optimal"] is False


def test_solve_stopped_before_any_mapping(capsys):
    # breadth-first search completes no mapping in 5 iterations; before, the summary said "cost inf"
    code, out, _ = run(capsys, "solve", "child", "--method", "bfs", "--max-iterations", "5", "-q")
    assert code == 3
    assert out.startswith("child: no complete mapping found (max_iterations); no mapping costs less than")
    data, _ = solve_json(capsys, "child", "--method", "bfs", "--max-iterations", "5", "-q", code=3)
    assert data["optimal_cost"] is None and data["solutions"] == []


def test_solve_progress_on_stderr(capsys):
    _, err = solve_json(capsys, "paper-example")
    assert "improved" in err and "54.0" in err
    _, err = solve_json(capsys, "paper-example", "--quiet")
    assert err == ""


# =========================================================================== template


def test_template_water(capsys, tmp_path):
    water = NETWORKS / "water.bif.gz"
    if not water.exists():
        pytest.skip(f"{water} is missing")
    code, out, err = run(capsys, "template", water)
    assert code == 0
    data = json.loads(out)
    assert len(data["nodes"]) == 8
    assert data["slices"] == 4
    assert "temporal_edges" in data
    # the template file can be written and unrolled back to 32 nodes
    target = tmp_path / "water-2tbn.json"
    code, out, _ = run(capsys, "template", water, "--output", target)
    assert code == 0 and "8 nodes" in out
    assert len(load_network(target, slices=4).nodes) == 32


# =========================================================================== subprocess


def dcmap_command() -> list[str]:
    script = Path(sys.executable).parent / "dcmap"
    if script.exists():
        return [str(script)]
    found = shutil.which("dcmap")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from dcmap_dist.cli import main; sys.exit(main())"]


def test_subprocess_solve_and_errors(tmp_path):
    result = subprocess.run(dcmap_command() + ["solve", "paper-example", "--output", "-"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["optimal_cost"] == pytest.approx(54.0) and len(data["solutions"]) == 3
    bad = write(tmp_path, "bad.json", json.dumps({"clusters": [["A", "B"]]}))
    result = subprocess.run(dcmap_command() + ["cost", "paper-example", str(bad)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    result = subprocess.run(dcmap_command() + ["--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "dcmap" in result.stdout


def test_python_dash_m_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "dcmap_dist.cli", "info", "paper-example", "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert json.loads(result.stdout)["nodes"] == 7


def test_user_cost_module_in_the_working_directory(tmp_path):
    """`--cost mymodule:name` finds a module in the directory the user runs dcmap from."""
    script = shutil.which("dcmap")
    if script is None:
        pytest.skip("the dcmap script is not installed")
    (tmp_path / "mymodule.py").write_text(
        "def my_cost(ctx):\n"
        "    crossing = sum(1 for child in ctx.children if not child.same_cluster)\n"
        "    return 1.0 + len(ctx.nodes) ** 2 + crossing\n"
    )
    done = subprocess.run([script, "solve", "paper-example", "--cost", "mymodule:my_cost", "-o", "-", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["cost_model"]["name"] == "mymodule:my_cost"
    assert result["proven_optimal"]


# =========================================================================== errors and exit codes


@pytest.mark.parametrize("argv, message", [
    (["solve", "paper-example", "--alpha", "1.5"], "argument --alpha: expected a probability from 0 to 1, got '1.5'"),
    (["solve", "paper-example", "--time-limit", "-1"], "argument --time-limit: expected a positive number, got '-1'"),
    (["solve", "paper-example", "--time-limit", "nan"], "argument --time-limit: expected a positive number"),
    (["solve", "paper-example", "--memory-limit", "0"], "argument --memory-limit: expected a positive number"),
    (["solve", "paper-example", "--max-iterations", "0"], "argument --max-iterations: expected an integer >= 1"),
    (["solve", "paper-example", "--max-solutions", "-5"], "argument --max-solutions: expected an integer >= 0"),
    (["info", "seagrass-2tbn", "--slices", "0"], "argument --slices: expected an integer >= 1, got '0'"),
    (["info", "paper-example", "--addition", "inf"], "argument --addition: expected a number >= 0, got 'inf'"),
    (["info", "paper-example", "--order", "fifo"], "argument --order: invalid choice: 'fifo'"),
    (["solve"], "the following arguments are required: network"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
], ids=["alpha", "negative-time", "nan-time", "zero-memory", "zero-iterations", "negative-solutions",
        "zero-slices", "infinite-addition", "unknown-order", "no-network", "unknown-command"])
def test_bad_arguments_are_one_line_usage_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.count("\n") == 1 and err.startswith("dcmap: error: ") and message in err
    assert "--help" in err


def test_help_lists_the_bundled_examples_and_the_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "asia, child, paper-example, sachs, seagrass-2tbn" in text
    assert "3 stopped by a limit" in text and "4 interrupted" in text
    code, out, _ = run(capsys, "solve", "--help")
    assert code == 0 and "seagrass-2tbn" in out and "canonical" in out


def test_an_internal_error_is_one_line_asking_for_a_report(capsys, monkeypatch):
    from dcmap_dist.cli import search_commands

    def broken(*args, **kwargs):
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(search_commands, "solve", broken)
    monkeypatch.delenv("DCMAP_DEBUG", raising=False)
    code, out, err = run(capsys, "solve", "paper-example", "-q")
    assert code == 1 and not out
    assert err.count("\n") == 1
    assert err.startswith("dcmap: internal error: RuntimeError: the engine broke (please report this bug")
    assert "Traceback" not in err
    monkeypatch.setenv("DCMAP_DEBUG", "1")
    code, _, err = run(capsys, "solve", "paper-example", "-q")
    assert code == 1 and "Traceback" in err and "the engine broke" in err


def test_a_failing_user_cost_is_an_input_error_naming_the_model(capsys, tmp_path, monkeypatch):
    (tmp_path / "fragile_cost.py").write_text(
        "def cost(ctx):\n"
        "    return 1.0 / (len(ctx.nodes) - 1)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCMAP_DEBUG", raising=False)
    code, out, err = run(capsys, "solve", "paper-example", "--cost", "fragile_cost:cost", "-q")
    assert code == 2 and not out and "Traceback" not in err
    assert re.fullmatch(r"dcmap: error: cost model fragile_cost:cost: evaluate failed on cluster-layer "
                        r"\['\w'\] \(layer 0\): ZeroDivisionError: float division by zero\n", err)
    monkeypatch.setenv("DCMAP_DEBUG", "1")  # the traceback reaches into the user's code
    code, _, err = run(capsys, "solve", "paper-example", "--cost", "fragile_cost:cost", "-q")
    assert code == 2 and "fragile_cost.py" in err and "Traceback" in err


def test_the_progress_line_is_cleared_when_the_search_fails(capsys, monkeypatch):
    from dcmap_dist.cli import search_commands
    from dcmap_dist.cost.base import CostError

    def failing(*args, on_progress, **kwargs):
        on_progress(Progress(iterations=5, best_cost=60.0, lower_bound=None, open_branches=3, rate=10.0,
                             elapsed_seconds=0.5, peak_memory_mb=50))
        raise CostError("cost model m: evaluate failed")

    monkeypatch.setattr(search_commands, "solve", failing)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run(capsys, "solve", "paper-example")
    assert code == 2
    line, _, rest = err.rpartition("\r\033[K")
    assert "iterations          5  best 60.0" in line
    assert rest == "dcmap: error: cost model m: evaluate failed\n"  # on a line of its own


def test_the_progress_line_fits_the_terminal_and_clears_what_was_there(capsys, monkeypatch):
    from dcmap_dist.cli.display import ProgressDisplay

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda: os.terminal_size((40, 24)))
    progress = ProgressDisplay(enabled=True)
    progress.update(Progress(iterations=12, best_cost=54.0, lower_bound=None, open_branches=2, rate=100.0,
                             elapsed_seconds=1.0, peak_memory_mb=80))
    _, err = capsys.readouterr()
    assert err.startswith("\r\033[K") and len(err) == len("\r\033[K") + 39


def test_a_network_past_the_float_range(capsys, tmp_path):
    states = {"P1": 10**110, "P2": 10**110, "P3": 10**110, "P4": 10**110, "X1": 2, "X2": 2, "Y": 2}
    edges = [["P1", "X1"], ["P2", "X1"], ["P3", "X2"], ["P4", "X2"], ["X1", "Y"], ["X2", "Y"]]
    net = write(tmp_path, "huge.json", json.dumps(
        {"nodes": [{"id": x, "states": s} for x, s in states.items()], "edges": edges}))
    code, out, _ = run(capsys, "info", net)
    assert code == 0 and field(out, "naive cost").startswith("past the float range")
    code, out, _ = run(capsys, "info", net, "--json")
    assert code == 0 and json.loads(out)["naive_cost"] is None
    merged = mapping_file(tmp_path, [["X1", "X2", "Y"], ["P1"], ["P2"], ["P3"], ["P4"]])
    code, out, _ = run(capsys, "cost", net, merged, "--json")
    assert code == 0 and json.loads(out)["total"] is None  # valid JSON, no Infinity
    data, _ = solve_json(capsys, net, "-q")
    assert data["proven_optimal"] and data["optimal_cost"] == pytest.approx(8.2e220, rel=1e-9)


@pytest.mark.parametrize("command", ["info", "solve"])
def test_a_node_with_10_to_the_400_states_is_a_one_line_error_or_past_the_float_range(capsys, tmp_path, command):
    net = write(tmp_path, "vast.json", '{"nodes": [{"id": "A", "states": 1' + "0" * 400 + '}, '
                                       '{"id": "B", "states": 2}], "edges": [["A", "B"]]}')
    code, out, err = run(capsys, command, net)
    if command == "info":
        assert code == 0 and field(out, "naive cost").startswith("past the float range")
    else:
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith("dcmap: error: the dcmap cost of 'vast' passes the floating-point range")


def test_a_memory_limit_below_what_the_process_uses_is_refused_up_front(capsys, tmp_path):
    target = tmp_path / "result.json"
    code, out, err = run(capsys, "solve", "paper-example", "--memory-limit", "1", "-o", target)
    assert code == 2 and out == "" and not target.exists()
    assert re.fullmatch(r"dcmap: error: --memory-limit 1 MiB is below the \d+ MiB this process already uses "
                        r"before searching\n", err)


def test_brute_force_on_a_network_with_too_many_mappings_is_refused_up_front(capsys, tmp_path):
    target = tmp_path / "result.json"
    code, out, err = run(capsys, "solve", "child", "--method", "brute", "-o", target)
    assert code == 2 and out == "" and not target.exists() and err.count("\n") == 1
    assert err.startswith("dcmap: error: brute force would enumerate up to 3.355e+7 mappings of 'child'")


def test_solve_refuses_a_network_too_large_to_set_up_unless_forced(capsys, monkeypatch):
    code, out, err = run(capsys, "solve", "seagrass-2tbn", "--slices", "1000", "--time-limit", "10")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert re.search(r"seagrass-2tbn\.json: unrolling 'seagrass' to 1000 slices gives 25,000 nodes and 57,990 "
                     r"arcs, more than the 10,000 nodes allowed by dcmap solve: .*--time-limit does not cover; "
                     r"use fewer slices, or give --force\n$", err)
    code, _, err = run(capsys, "solve", "seagrass-2tbn", "--slices", "10000000", "--force")
    assert code == 2 and "gives 250,000,000 nodes" in err and "more than the 1,000,000 nodes allowed\n" in err
    monkeypatch.setattr("dcmap_dist.cli.search_commands.MAX_SOLVE_NODES", 6)
    code, _, err = run(capsys, "solve", "paper-example")
    assert code == 2 and "'paper-example' has 7 nodes, more than the 6 allowed by dcmap solve" in err
    assert err.endswith("; give --force\n")
    code, out, _ = run(capsys, "solve", "paper-example", "--force", "-q")
    assert code == 0 and "cost 54.0, proven optimal" in out
