"""Pictures: ``dcmap plot`` and ``dcmap draw`` write PNG files (headless), the study's
scaling figure, and a clear failure without matplotlib."""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from dcmap_dist.viz import drawing
from dcmap_dist.viz import plots
from dcmap_dist.cli import main
from dcmap_dist.io.load import load_network
from dcmap_dist.model.topology import layer_nodes

PNG = b"\x89PNG\r\n\x1a\n"
# paper-example's three optimal mappings (cost 54.0)
OPTIMAL = [[["A"], ["B"], ["C"], ["D", "G"], ["E"], ["F"]],
           [["A", "D", "G"], ["B"], ["C"], ["E"], ["F"]],
           [["A", "F"], ["B"], ["C"], ["D", "G"], ["E"]]]
SINGLETONS = [[x] for x in "ABCDEFG"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a PNG file, checked to be one."""
    data = path.read_bytes()
    assert data[:8] == PNG, f"{path} is not a PNG file"
    assert len(data) > 5_000, f"{path} is suspiciously small ({len(data)} bytes)"
    return struct.unpack(">II", data[16:24])


def hand_result(**changes) -> dict:
    """A result of paper-example in the shape dcmap solve writes, with costs spanning two decades."""
    result = {
        "network": "paper-example", "scheme": "merge", "optimal_cost": 54.0, "proven_optimal": True,
        "lower_bound": 54.0, "solution_count": 3, "solutions_complete": True, "iterations": 120,
        "elapsed_seconds": 2.5, "first_optimal_iteration": 60, "first_optimal_seconds": 1.25,
        "solutions": [{"clusters": c, "cost": 54.0, "iteration": 60 + k} for k, c in enumerate(OPTIMAL)],
        "trace": [
            {"iteration": 0, "seconds": 0.1, "cost": 9000.0, "clusters": SINGLETONS},
            {"iteration": 25, "seconds": 0.6, "cost": 700.0, "clusters": [["A", "F"], *SINGLETONS[1:5], ["G"]]},
            {"iteration": 60, "seconds": 1.25, "cost": 54.0, "clusters": OPTIMAL[0]},
        ],
        "bounds": [{"iteration": 10, "seconds": 0.3, "lower_bound": 20.0},
                   {"iteration": 90, "seconds": 2.0, "lower_bound": 40.0}],
    }
    result.update(changes)
    return result


@pytest.fixture(scope="module")
def sachs(tmp_path_factory) -> Path:
    """The result file of a real solve of the bundled sachs network (11 nodes, 5 improvements)."""
    path = tmp_path_factory.mktemp("sachs") / "sachs.json"
    assert main(["solve", "sachs", "--quiet", "--output", str(path)]) == 0
    return path


def test_the_similarity_of_each_trace_mapping_by_hand():
    # all singletons share the diagonal, 7 pairs: of 9 in OPTIMAL[0] (D-G), 13 and 11 in the others
    # {A, F}: 7 + 2 of OPTIMAL[2]'s 11; OPTIMAL[0] itself: 1
    points, note = plots._similarity_panel(hand_result(), hand_result()["trace"])
    assert note is None
    assert points == [(0, pytest.approx(7 / 9)), (25, pytest.approx(9 / 11)), (60, 1.0)]


def test_costs_spanning_decades_get_a_log_axis():
    pytest.importorskip("matplotlib")
    for cost, scale in ((9000.0, "log"), (90.0, "linear")):
        result = hand_result()
        result["trace"][0]["cost"] = cost
        result["trace"][1]["cost"] = 60.0
        ax = plots.figure().subplots()
        plots._cost_panel(ax, result, result["trace"], "iteration")
        assert ax.get_yscale() == scale
        labels = ax.get_legend_handles_labels()[1]
        assert "proven optimum 54" in labels and "first optimal mapping (iteration 60)" in labels


def test_plot_writes_the_trace_beside_the_result(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    source = tmp_path / "run.json"
    source.write_text(json.dumps(hand_result()))
    code, out, err = run(capsys, "plot", source)
    assert (code, err) == (0, "")
    assert "trace written to" in out
    width, height = png_size(tmp_path / "run-trace.png")
    assert width >= 600 and height >= 800  # three panels


def test_an_old_result_without_mappings_gets_no_similarity_panel(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    result = hand_result()
    for point in result["trace"]:
        del point["clusters"]
    del result["bounds"]
    source = tmp_path / "old.json"
    source.write_text(json.dumps(result))
    code, out, _ = run(capsys, "plot", source, "-o", tmp_path / "pictures" / "old.png")
    assert code == 0
    assert "note: no similarity panel: the trace records no mappings" in out
    width, height = png_size(tmp_path / "pictures" / "old.png")
    assert height < 800  # two panels


def test_an_incomplete_list_of_optimal_mappings_is_said(tmp_path):
    pytest.importorskip("matplotlib")
    result = hand_result(solution_count=5, solutions_complete=False)
    ax = plots.figure().subplots()
    plots._draw_similarity(ax, result, [(0, 0.5), (60, 1.0)])
    assert ax.get_legend_handles_labels()[1][0] == ("similarity to the 3 listed of 5 optimal mappings "
                                                    "(the list is incomplete)")


def test_plot_and_draw_a_real_solve(sachs, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    result = json.loads(sachs.read_text())
    if "clusters" not in result["trace"][0]:
        pytest.skip("the solve's trace does not record mappings yet (issue 9: added in parallel)")
    code, out, _ = run(capsys, "plot", sachs, "-o", tmp_path / "trace.png")
    assert code == 0 and "note" not in out
    png_size(tmp_path / "trace.png")
    code, out, _ = run(capsys, "draw", "sachs", sachs)
    assert code == 0 and "clusters written to" in out
    width, height = png_size(sachs.with_name("sachs-clusters.png"))
    assert width >= 500 and height >= 300
    code, _, _ = run(capsys, "draw", "sachs", sachs, "--trace-point", 0, "-o", tmp_path / "first.png")
    assert code == 0
    png_size(tmp_path / "first.png")


def test_draw_every_optimal_mapping_of_paper_example(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    source = tmp_path / "pe.json"
    source.write_text(json.dumps(hand_result()))
    for k in range(3):
        code, out, err = run(capsys, "draw", "paper-example", source, "--solution", k, "-o", tmp_path / f"{k}.png")
        assert (code, err) == (0, "")
        png_size(tmp_path / f"{k}.png")


@pytest.mark.parametrize("argv, message", [
    (["--solution", "3"], "the result lists 3 mappings (0 to 2), not 3"),
    (["--trace-point", "7"], "the result's trace has 3 points (0 to 2), not 7"),
    (["--solution", "0", "--trace-point", "0"], "not allowed with argument"),
])
def test_draw_refuses_a_mapping_the_result_does_not_have(tmp_path, capsys, argv, message):
    source = tmp_path / "pe.json"
    source.write_text(json.dumps(hand_result()))
    code, _, err = run(capsys, "draw", "paper-example", source, *argv)
    assert code == 2 and message in err
    assert not (tmp_path / "pe-clusters.png").exists()


def test_draw_refuses_a_result_of_another_network(sachs, capsys):
    code, _, err = run(capsys, "draw", "paper-example", sachs)
    assert code == 2
    assert "does not fit paper-example" in err and "unknown node" in err


def test_plot_refuses_bad_inputs(tmp_path, capsys):
    source = tmp_path / "r.json"
    source.write_text(json.dumps(hand_result()))
    code, _, err = run(capsys, "plot", source, "-o", source)
    assert code == 2 and "it is the input file" in err
    network = tmp_path / "net.json"
    network.write_text(json.dumps({"nodes": [{"id": "A", "states": 2}], "edges": []}))
    code, _, err = run(capsys, "plot", network)
    assert code == 2 and "no 'trace' list" in err
    code, _, err = run(capsys, "draw", network, source, "-o", network)
    assert code == 2 and "it is the input file" in err
    (tmp_path / "list.json").write_text("[]")
    code, _, err = run(capsys, "plot", tmp_path / "list.json")
    assert code == 2 and "not a dcmap result" in err


def test_without_matplotlib_the_commands_say_how_to_install_it(tmp_path, capsys, monkeypatch):
    source = tmp_path / "r.json"
    source.write_text(json.dumps(hand_result()))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib... raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    for argv in (["plot", source], ["draw", "paper-example", source]):
        code, _, err = run(capsys, *argv)
        assert code == 2
        assert "matplotlib" in err and "pip install 'dcmap_dist[plot]'" in err
    assert list(tmp_path.iterdir()) == [source]
    with pytest.raises(plots.MissingMatplotlib, match=r"dcmap_dist\[plot\]"):
        plots.plot_scaling(study_rows(), tmp_path / "s.png")


def test_the_cli_and_plots_modules_do_not_import_matplotlib():
    code = ("import sys, dcmap_dist.cli, dcmap_dist.viz.plots; "
            "print(sorted(m for m in ('matplotlib', 'ray', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def study_rows() -> list[dict[str, str]]:
    """Made-up study rows: random templates with iterations exactly 2 n^2 (and seconds
    n^3 / 1000), seagrass with 3 n^1.5; an unproven run that would spoil the fit."""
    rows = []
    for family, sizes, workers in (("random", (6, 8, 10, 12), ("1", "2")), ("seagrass", (25, 50, 75), ("1",))):
        for n in sizes:
            for w in workers:
                iterations = 2 * n ** 2 if family == "random" else 3 * n ** 1.5
                rows.append({"template": f"{family}-{n}", "family": family, "T": "1", "nodes": str(n),
                             "workers": w, "proven": "True", "first_optimal_iteration": str(iterations / 2),
                             "first_optimal_seconds": str(n ** 3 / 2000), "proof_iterations": str(iterations),
                             "proof_seconds": str(n ** 3 / 1000)})
    rows.append({"template": "random-40", "family": "random", "T": "1", "nodes": "40", "workers": "1",
                 "proven": "False", "first_optimal_iteration": "5", "first_optimal_seconds": "",
                 "proof_iterations": "", "proof_seconds": ""})
    rows[0]["first_optimal_iteration"] = "0"  # found by the greedy dive: not on a log axis
    return rows


def test_the_scaling_figure_fits_each_family(tmp_path):
    pytest.importorskip("matplotlib")
    fits = plots.plot_scaling(study_rows(), tmp_path / "scaling.png")
    width, height = png_size(tmp_path / "scaling.png")
    assert width > height > 500  # a 2 x 2 grid
    assert fits[("proof_iterations", "random", 1)].slope == pytest.approx(2.0)
    assert fits[("proof_iterations", "random", 2)].slope == pytest.approx(2.0)
    assert fits[("proof_seconds", "random", 2)].slope == pytest.approx(3.0)
    assert fits[("proof_iterations", "seagrass", 1)].slope == pytest.approx(1.5)
    # the unproven run is left out, and so is the iteration 0 (3 points remain)
    assert fits[("first_optimal_iteration", "random", 1)].points == 3
    assert fits[("first_optimal_iteration", "random", 1)].slope == pytest.approx(2.0)
    assert len(fits) == 12


def test_the_scaling_figure_refuses_bad_rows(tmp_path):
    rows = study_rows()
    rows[2]["proof_seconds"] = "fast"
    with pytest.raises(ValueError, match="row 3: proof_seconds is 'fast', not a number"):
        plots.plot_scaling(rows, tmp_path / "s.png")
    with pytest.raises(ValueError, match="no 'family' column"):
        plots.plot_scaling([{"nodes": "5"}], tmp_path / "s.png")
    with pytest.raises(ValueError, match="unknown column 'eta'"):
        plots.plot_scaling(study_rows(), tmp_path / "s.png", columns=["eta"])


def test_layers_keep_their_nodes_and_sweeps_do_not_add_crossings():
    network = load_network("seagrass-2tbn", slices=2)
    labels = {x: 0 for x in network.nodes}
    rows = drawing._layer_order(network, labels)
    assert [sorted(row) for row in rows] == [sorted(row) for row in layer_nodes(network)]
    before = drawing._crossings(network, [list(row) for row in layer_nodes(network)])
    assert drawing._crossings(network, rows) < before


def test_crossings_of_straight_arcs_by_hand():
    network = load_network({"nodes": [{"id": x, "states": 2} for x in "ABCD"], "edges": [["A", "C"], ["B", "D"]]})
    assert drawing._crossings(network, [["C", "D"], ["A", "B"]]) == 0
    assert drawing._crossings(network, [["D", "C"], ["A", "B"]]) == 1


@pytest.mark.parametrize("name,slices,order", [("seagrass-2tbn", 1, "paper"), ("child", None, "cpt"),
                                               ("sachs", None, "cpt")])
def test_cluster_bands_run_clear_of_other_nodes(name, slices, order):
    """A band joins a cluster's members along its arcs; an arc that skips layers runs
    through slots kept for it, so no band crosses a node of another cluster (before, a
    band drawn straight across layers ran over the nodes between)."""
    from dcmap_dist.study.similarity import cluster_labels
    from dcmap_dist.solve import solve

    network = load_network(name, slices=slices)
    clusters = solve(network, order=order, max_solutions=1).solutions[0].clusters
    labels = dict(zip(network.nodes, cluster_labels(clusters, network.nodes).tolist()))
    chains = drawing._chains(network, labels)
    place = drawing._positions(drawing._layer_order(network, labels, chains))
    routes = drawing._routes(network, place, chains)
    crossing = [(u, v) for u, v in network.edges if labels[u] == labels[v]
                and drawing.crossed(routes[u, v][1], place, (u, v))]
    assert not crossing
    straight = [(u, v) for u, v in network.edges if labels[u] == labels[v]
                and drawing.crossed([place[u], place[v]], place, (u, v))]
    assert straight or name != "seagrass-2tbn"  # drawn straight, some would cross one


def test_the_legend_gives_each_cluster_its_cost(tmp_path, capsys):
    from dcmap_dist.cli.picture_commands import _cluster_costs

    network = load_network("paper-example")
    costs, note = _cluster_costs(network, OPTIMAL[1], {"name": "dcmap", "order": "cpt", "addition": 0.6})
    assert note is None and math.isclose(sum(costs), 54.0) and len(costs) == len(OPTIMAL[1])
    costs, note = _cluster_costs(network, OPTIMAL[1], {"name": "nowhere_module:cost"})
    assert costs is None and "cannot be rebuilt" in note
    source = tmp_path / "pe.json"
    source.write_text(json.dumps(hand_result(cost_model={"name": "dcmap", "order": "cpt", "addition": 0.6})))
    code, out, err = run(capsys, "draw", "paper-example", source, "-o", tmp_path / "pe.png")
    assert (code, err) == (0, "") and "note" not in out
