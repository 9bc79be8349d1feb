"""Tests of output files (dcmap_dist.io.outputs) and of the command line's use of them:
checked before any work, written whole or not at all, nothing left behind."""

from __future__ import annotations

import json
import os
import stat
import threading

import networkx as nx
import pytest

from dcmap_dist.cli import main
from dcmap_dist.io.load import load_network
from dcmap_dist.io.outputs import OutputError, append_csv_row, check_output, write_atomic
from dcmap_dist.solve import solve


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- check_output


def test_check_output_accepts_new_files_in_new_folders_and_creates_nothing(tmp_path):
    check_output(tmp_path / "result.json")
    check_output(tmp_path / "a" / "b" / "result.json")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("case, message", [
    ("directory", r"cannot write .*out: it is a directory"),
    ("input", r"cannot write .*net\.json: it is the input file"),
    ("under-a-file", r"cannot write .*plain\.txt/result\.json: .*plain\.txt is not a directory"),
])
def test_check_output_refuses(tmp_path, case, message):
    (tmp_path / "out").mkdir()
    (tmp_path / "net.json").write_text("{}")
    (tmp_path / "plain.txt").write_text("x")
    path = {"directory": tmp_path / "out", "input": tmp_path / "net.json",
            "under-a-file": tmp_path / "plain.txt" / "result.json"}[case]
    with pytest.raises(OutputError, match=message):
        check_output(path, [tmp_path / "net.json"])


def test_check_output_sees_through_links_to_the_input(tmp_path):
    (tmp_path / "net.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "net.json")
    with pytest.raises(OutputError, match="it is the input file"):
        check_output(tmp_path / "link.json", [tmp_path / "net.json"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_check_output_refuses_a_folder_without_write_permission(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="no permission to write in"):
            check_output(locked / "result.json")
    finally:
        locked.chmod(0o700)


# --------------------------------------------------------------------------- write_atomic


def test_write_atomic_replaces_whole_with_the_umask_mode(tmp_path):
    path = tmp_path / "deep" / "result.json"
    write_atomic(path, "one\n")
    write_atomic(path, "two\n")
    assert path.read_text() == "two\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]


def test_write_atomic_refuses_a_symbolic_link_to_a_file(tmp_path):
    """Writing through a link would change a file the user did not name (issue 30):
    refused, the link and its target (content and mode) untouched; check_output says so
    before any work."""
    target = tmp_path / "data" / "result.json"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    for attempt in (lambda: write_atomic(link, "new"), lambda: check_output(link)):
        with pytest.raises(OutputError, match="symbolic link"):
            attempt()
    assert link.is_symlink() and target.read_text() == "old" and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_write_atomic_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "result.json"
    path.write_text("old")
    path.chmod(0o640)
    write_atomic(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_nothing_is_written_into_the_installed_package(tmp_path):
    from dcmap_dist.io.outputs import PACKAGE

    for path in (PACKAGE / "examples" / "paper-example.json", PACKAGE / "result.json"):
        with pytest.raises(OutputError, match="inside the installed package"):
            check_output(path)


def test_write_atomic_writes_into_a_pipe_instead_of_replacing_it(tmp_path):
    # before, a named pipe (or /dev/stdout, /dev/null) was replaced by a regular file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    write_atomic(fifo, "through the pipe")
    reader.join(timeout=10)
    assert received == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_write_atomic_failures_are_output_errors_and_leave_nothing(tmp_path, monkeypatch):
    (tmp_path / "plain.txt").write_text("x")
    with pytest.raises(OutputError, match=r"cannot write .*plain\.txt/result\.json"):
        write_atomic(tmp_path / "plain.txt" / "result.json", "text")

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OutputError, match=r"cannot write .*result\.json: No space left on device"):
        write_atomic(tmp_path / "result.json", "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt"]


# --------------------------------------------------------------------------- the command line


def test_solve_checks_its_output_before_solving(capsys, tmp_path, monkeypatch):
    from dcmap_dist.cli import search_commands

    def must_not_run(*args, **kwargs):
        raise AssertionError("the search ran although its output cannot be written")

    monkeypatch.setattr(search_commands, "solve", must_not_run)
    (tmp_path / "out").mkdir()
    code, out, err = run(capsys, "solve", "paper-example", "-o", tmp_path / "out")
    assert code == 2 and not out and err.startswith("dcmap: error: cannot write") and "is a directory" in err
    network = tmp_path / "net.json"
    network.write_text(json.dumps({"nodes": [{"id": "A", "states": 2}], "edges": []}))
    code, _, err = run(capsys, "solve", network, "-o", network)
    assert code == 2 and "it is the input file" in err
    assert json.loads(network.read_text())["nodes"]  # untouched


def test_template_checks_its_output_before_reading(capsys, tmp_path):
    (tmp_path / "out").mkdir()
    code, out, err = run(capsys, "template", "paper-example", "-o", tmp_path / "out")
    assert code == 2 and "is a directory" in err


def test_a_result_that_cannot_be_written_goes_to_stdout(capsys, tmp_path, monkeypatch):
    from dcmap_dist.cli import search_commands

    def full_disk(path, text):
        raise OutputError(f"cannot write {path}: No space left on device")

    monkeypatch.setattr(search_commands, "write_atomic", full_disk)
    code, out, err = run(capsys, "solve", "paper-example", "-q", "-o", tmp_path / "result.json")
    assert code == 2
    assert json.loads(out)["optimal_cost"] == pytest.approx(54.0)
    assert err == (f"dcmap: error: cannot write {tmp_path / 'result.json'}: No space left on device; "
                   "the result is on stdout instead\n")
    assert not (tmp_path / "result.json").exists()


# --------------------------------------------------------------------------- what a result records


def test_a_result_records_its_input_and_rounds_its_costs(capsys, tmp_path):
    template = {"name": "tiny", "nodes": [{"id": "a", "states": 2}, {"id": "b", "states": 3}],
                "edges": [["a", "b"]], "temporal_edges": [["b", "b"]]}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(template))
    code, out, _ = run(capsys, "solve", path, "--slices", "2", "--observe", "a", "-q", "-o", "-")
    assert code == 0
    data = json.loads(out)
    assert (data["source"], data["slices"], data["observed"]) == (str(path), 2, ["a_0", "a_1"])
    assert data["cost_model"] == {"name": "dcmap", "order": "cpt", "addition": 0.6}
    assert [part["names"] for part in data["components"]] == [["a_0", "a_1", "b_0", "b_1"]]
    # asia's anytime total is 68.80000000000001 in floating point: every cost in the file
    # has 12 significant digits
    code, out, _ = run(capsys, "solve", "asia", "-q", "-o", "-")
    data = json.loads(out)
    assert data["source"] == "asia" and data["slices"] is None and data["observed"] == []
    costs = [data["optimal_cost"], data["lower_bound"], *(s["cost"] for s in data["solutions"]),
             *(t["cost"] for t in data["trace"]), *(c["optimal_cost"] for c in data["components"])]
    assert set(costs) == {68.8}


def test_a_solution_found_first_is_at_the_first_optimal_iteration():
    # asia: the incumbent (the greedy dive's mapping) at iteration 0 is optimal, and so is
    # the all-singletons mapping, also known from the start; sachs: the trace
    # reached the optimum at iteration 70 with its second component's singletons, which
    # that component's search found only at its iteration 3 (83 in all)
    for name in ("asia", "sachs"):
        result = solve(name, max_solutions=None)
        assert result.first_optimal_iteration == min(s.iteration for s in result.solutions)
        reached = [t["iteration"] for t in result.trace if t["cost"] == pytest.approx(result.optimal_cost)]
        assert reached[0] == result.first_optimal_iteration
    asia = solve("asia", max_solutions=None)  # both the greedy dive's and all singletons: known at 0
    assert [[x] for x in sorted(load_network("asia").nodes)] in [s.clusters for s in asia.solutions if s.iteration == 0]


def test_an_optimal_incumbent_is_listed_at_iteration_0():
    cancer = {"nodes": [{"id": x, "states": 2} for x in ("Pollution", "Smoker", "Cancer", "Xray", "Dyspnoea")],
              "edges": [["Pollution", "Cancer"], ["Smoker", "Cancer"], ["Cancer", "Xray"], ["Cancer", "Dyspnoea"]]}
    result = solve(cancer, max_solutions=None)
    assert result.first_optimal_iteration == 0
    assert min(s.iteration for s in result.solutions) == 0


def test_integer_nodes_come_back_as_integers_and_as_names_in_json():
    graph = nx.DiGraph([(1, 10), (2, 10), (10, 3)])
    nx.set_node_attributes(graph, 2, "states")
    result = solve(graph)
    assert all(isinstance(x, int) for s in result.solutions for c in s.clusters for x in c)
    assert [sorted(x for c in s.clusters for x in c) for s in result.solutions][0] == [1, 2, 3, 10]
    assert all(c == sorted(c) for s in result.solutions for c in s.clusters)
    assert result.components[0]["names"] == [1, 10, 2, 3]  # input order
    data = json.loads(result.to_json())
    assert data["components"][0]["names"] == ["1", "10", "2", "3"]
    for solution in data["solutions"]:
        assert all(isinstance(x, str) for c in solution["clusters"] for x in c)
        assert solution["clusters"] == sorted(sorted(c) for c in solution["clusters"])


def test_append_csv_row_writes_the_header_once_and_refuses_other_columns(tmp_path):
    path = tmp_path / "deep" / "rows.csv"
    append_csv_row(path, {"a": 1, "b": "x,y"}, ["a", "b"])
    append_csv_row(path, {"b": 2, "a": 3, "ignored": 4}, ["a", "b"])
    assert path.read_text() == 'a,b\n1,"x,y"\n3,2\n'
    with pytest.raises(OutputError, match=r"rows\.csv has other columns \(a, b\) than these rows \(a, steps\)"):
        append_csv_row(path, {"a": 5, "steps": 6}, ["a", "steps"])
    assert path.read_text() == 'a,b\n1,"x,y"\n3,2\n'  # nothing appended
