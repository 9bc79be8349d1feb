"""Tests of the input paths of load_network that are not one file format's parser:
bad files, the bundled examples, observe arguments, recovered templates, and the
pgmpy and pyAgrum interop (skipped when those libraries are not installed)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

import dcmap_dist
from dcmap_dist.io import load as loading
from dcmap_dist.io.dynamic import recover_template, unroll
from dcmap_dist.io.load import bundled_examples, load_network
from dcmap_dist.model.network import NetworkError

SMALL = {
    "name": "small",
    "nodes": [{"id": "A", "states": 2}, {"id": "B", "states": 3}, {"id": "C", "states": 2}],
    "edges": [["A", "B"], ["B", "C"]],
}
TEMPLATE = {**SMALL, "name": "tiny", "temporal_edges": [["A", "A"], ["C", "B"]]}
ASIA = Path(dcmap_dist.__file__).parent / "examples" / "asia.bif"  # of the package the tests import


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------- bad files


def test_a_damaged_gzip_file_is_an_input_error(tmp_path):
    packed = gzip.compress(json.dumps(SMALL).encode() * 50)
    truncated = write(tmp_path, "cut.json.gz", packed[:-20])
    with pytest.raises(NetworkError, match=r"cannot read .*cut\.json\.gz: Compressed file ended"):
        load_network(truncated)
    damaged = bytearray(packed)
    damaged[len(damaged) // 2] ^= 0xFF
    damaged[len(damaged) // 2 + 1] ^= 0xFF
    with pytest.raises(NetworkError, match=r"cannot read .*bad\.bif\.gz"):
        load_network(write(tmp_path, "bad.bif.gz", bytes(damaged)))


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", r"list\.json: a network must be a JSON object with 'nodes' and 'edges', not a list"),
    (json.dumps({**SMALL, "nodes": SMALL["nodes"] * 2}), r"list\.json: duplicate node 'A'"),
    (json.dumps({**SMALL, "observed": [["A"]]}), r"list\.json: observed names must be node names \(strings\), got \['A'\]"),
    (json.dumps({**SMALL, "name": ["x"]}), r"list\.json: the network's 'name' must be a string, got \['x'\]"),
    (json.dumps({**TEMPLATE, "temporal_edges": [[["A"], "B"]]}), r"list\.json: temporal edge \['A'\] -> 'B' refers to unknown node"),
], ids=["top-level-list", "duplicate-node", "unhashable-observed", "name-not-a-string", "unhashable-temporal-end"])
def test_structure_errors_in_a_json_file_name_the_file(tmp_path, text, message):
    with pytest.raises(NetworkError, match=message):
        load_network(write(tmp_path, "list.json", text))


def test_a_byte_order_mark_is_ignored(tmp_path):
    path = write(tmp_path, "bom.json", b"\xef\xbb\xbf" + json.dumps(SMALL).encode())
    assert load_network(path).nodes == ("A", "B", "C")


def test_an_unknown_extension_says_which_formats_are_read(tmp_path):
    path = write(tmp_path, "net.txt", "variable x {}")
    with pytest.raises(NetworkError, match=r"net\.txt is not valid JSON.*network files are \.json, \.bif"):
        load_network(path)
    # a JSON network under another extension still loads
    assert load_network(write(tmp_path, "net.dat", json.dumps(SMALL))).name == "small"


def test_an_undirected_graph_is_refused():
    with pytest.raises(NetworkError, match="must be directed"):
        load_network(nx.path_graph(3))


# --------------------------------------------------------------------------- bundled examples


def test_bundled_examples_are_listed_and_an_unknown_name_names_them(monkeypatch, tmp_path):
    assert bundled_examples() == ["asia", "child", "paper-example", "sachs", "seagrass-2tbn", "water"]
    monkeypatch.chdir(tmp_path)
    for name in bundled_examples():
        assert load_network(name).nodes
    with pytest.raises(NetworkError, match=r"no such file or bundled example: 'asai' \(bundled: asia, child, "):
        load_network("asai")
    with pytest.raises(NetworkError, match=r"no such file or bundled example: 'README'"):
        load_network("README")  # the examples' README is not a network


def test_an_unknown_name_suggests_the_networks_folders(monkeypatch, tmp_path):
    shared = tmp_path / "shared" / "networks"
    shared.mkdir(parents=True)
    (shared / "alarm.bif.gz").write_bytes(b"")
    (tmp_path / "work" / "networks").mkdir(parents=True)
    (tmp_path / "work" / "networks" / "alarm.json").write_text("{}")
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setattr(loading, "NETWORK_FOLDERS", (shared, Path("networks"), Path("..") / "shared" / "networks"))
    expected = r"; did you mean \.\./shared/networks/alarm\.bif\.gz or networks/alarm\.json\?$"
    with pytest.raises(NetworkError, match=r"^no such file or bundled example: 'alarm' \(bundled: asia, .*" + expected):
        load_network("alarm")
    with pytest.raises(NetworkError, match=r"'alarm\.bif\.gz' .*did you mean \.\./shared/networks/alarm\.bif\.gz\?$"):
        load_network("alarm.bif.gz")
    with pytest.raises(NetworkError, match=r"\(bundled: [^)]*\)$"):
        load_network("hailfinder")


# --------------------------------------------------------------------------- solve


def test_solve_takes_whatever_load_network_takes(tmp_path):
    from dcmap_dist.solve import solve

    path = write(tmp_path, "small.json", json.dumps(SMALL))
    graph = nx.DiGraph([("A", "B"), ("B", "C")])
    nx.set_node_attributes(graph, {"A": 2, "B": 3, "C": 2}, "states")
    results = [solve(source) for source in (load_network(SMALL), SMALL, path, str(path), graph)]
    assert {r.network_hash for r in results} == {load_network(SMALL).content_hash()}
    assert len({r.optimal_cost for r in results}) == 1 and all(r.proven_optimal for r in results)
    assert solve("paper-example").optimal_cost == pytest.approx(54.0)
    with pytest.raises(NetworkError, match="no such file or bundled example"):
        solve("no-such-network")


# --------------------------------------------------------------------------- observe


def test_observe_takes_a_single_name_as_a_string():
    # before, the string was taken letter by letter: "observed name 's' is not a node"
    assert load_network("asia", observe="smoke").observed == {"smoke"}
    assert load_network(TEMPLATE, slices=2, observe="B").observed == {"B_0", "B_1"}


# --------------------------------------------------------------------------- recovered templates


def test_a_recovered_template_with_static_nodes_is_not_unrolled_silently(tmp_path):
    network = unroll(TEMPLATE, 3)
    static = load_network({
        "name": "with-static",
        "nodes": [{"id": x, "states": network.states[x]} for x in network.nodes] + [{"id": "S", "states": 2}],
        "edges": [list(e) for e in network.edges] + [["S", "A_0"]],
    })
    recovered = recover_template(static)
    assert recovered["static_nodes"] == ["S"]
    path = write(tmp_path, "recovered.json", json.dumps(recovered))
    with pytest.raises(NetworkError, match=r"recovered\.json: the template has static nodes \('static_nodes'\)"):
        load_network(path, slices=3)
    del recovered["static_nodes"]
    assert len(load_network(recovered, slices=3).nodes) == 9


def test_a_recovered_template_with_a_partial_slice_is_not_unrolled_silently():
    network = unroll(TEMPLATE, 3)
    partial = network.subnetwork([x for x in network.nodes if x != "C_2"])
    recovered = recover_template(partial)
    assert recovered["partial_slice"]["nodes"] == ["A_2", "B_2"]
    with pytest.raises(NetworkError, match=r"a partial slice \('partial_slice'\)"):
        load_network(recovered, slices=2)


# --------------------------------------------------------------------------- pgmpy


def test_a_pgmpy_network_loads_with_the_states_of_its_cpds():
    pytest.importorskip("pgmpy")
    from pgmpy.readwrite import BIFReader

    model = BIFReader(str(ASIA)).get_model()
    network = load_network(model, observe=["smoke"])
    asia = load_network("asia")
    assert set(network.nodes) == set(asia.nodes)
    assert set(network.edges) == set(asia.edges)
    assert network.states == asia.states and network.observed == {"smoke"}


def test_a_pgmpy_network_without_cpds_names_the_node():
    pytest.importorskip("pgmpy")
    from pgmpy.models import DiscreteBayesianNetwork

    with pytest.raises(NetworkError, match=r"pgmpy node 'A' has no tabular CPD"):
        load_network(DiscreteBayesianNetwork([("A", "B")]))


def test_other_pgmpy_models_are_refused():
    pytest.importorskip("pgmpy")
    from pgmpy.models import LinearGaussianBayesianNetwork

    with pytest.raises(NetworkError, match=r"cannot load a pgmpy LinearGaussianBayesianNetwork: dcmap needs a "
                                           r"discrete Bayesian network"):
        load_network(LinearGaussianBayesianNetwork([("A", "B")]))


def test_a_pgmpy_dynamic_network_is_a_two_slice_template():
    pytest.importorskip("pgmpy")
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DynamicBayesianNetwork

    model = DynamicBayesianNetwork([(("A", 0), ("B", 0)), (("B", 0), ("C", 0)),
                                    (("A", 0), ("A", 1)), (("C", 0), ("B", 1))])
    model.add_cpds(
        TabularCPD(("A", 0), 2, [[0.5], [0.5]]),
        TabularCPD(("B", 0), 3, [[0.2, 0.3], [0.3, 0.3], [0.5, 0.4]], evidence=[("A", 0)], evidence_card=[2]),
        TabularCPD(("C", 0), 2, [[0.5] * 3, [0.5] * 3], evidence=[("B", 0)], evidence_card=[3]),
    )
    network = load_network(model, slices=3, observe=["C"])
    expected = unroll(TEMPLATE, 3)
    assert network.nodes == expected.nodes and network.states == expected.states
    assert set(network.edges) == set(expected.edges)
    assert network.observed == {"C_0", "C_1", "C_2"}


# --------------------------------------------------------------------------- pyAgrum


def test_a_pyagrum_bayesnet_loads_in_id_order():
    gum = pytest.importorskip("pyagrum")
    bn = gum.fastBN("A->B[3]<-C;B->D")
    network = load_network(bn)
    assert network.nodes == ("A", "B", "C", "D")
    assert network.states == {"A": 2, "B": 3, "C": 2, "D": 2}
    assert set(network.edges) == {("A", "B"), ("C", "B"), ("B", "D")}


def test_files_in_pyagrum_formats_are_read_through_pyagrum(tmp_path):
    gum = pytest.importorskip("pyagrum")
    gum.saveBN(gum.loadBN(str(ASIA)), str(tmp_path / "asia.net"))
    network = load_network(tmp_path / "asia.net")
    asia = load_network("asia")
    assert network.name == "asia"
    assert set(network.nodes) == set(asia.nodes) and set(network.edges) == set(asia.edges)
    assert network.states == asia.states
    broken = write(tmp_path, "broken.net", "garbage {")
    with pytest.raises(NetworkError, match=r"broken\.net: pyAgrum cannot read it: .*Syntax error"):
        load_network(broken)


def test_pyagrum_formats_without_pyagrum_say_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyagrum", None)  # as if it were not installed
    with pytest.raises(NetworkError, match=r"reading \.xdsl files needs pyAgrum \(pip install pyagrum\)"):
        load_network(write(tmp_path, "model.xdsl", "<smile/>"))


# -- input that must not cost the machine (issue 30) ------------------------------------------


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcmap_dist", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, **(env or {})})


def test_json_nested_deeper_than_the_parser_goes_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    run = cli("info", str(path))
    assert run.returncode == 2 and "nested too deeply" in run.stderr and "Traceback" not in run.stderr


def test_a_gzip_that_inflates_past_the_cap_is_refused_before_it_fills_the_memory(tmp_path):
    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wb") as handle:
        for _ in range(8):
            handle.write(b" " * (1 << 20))  # 8 MiB of spaces, some kilobytes compressed
    assert path.stat().st_size < 100_000
    run = cli("info", str(path), env={"DCMAP_MAX_INPUT_MB": "4"})
    assert run.returncode == 2, run.stderr
    assert "more than 4 MiB once gunzipped" in run.stderr and "DCMAP_MAX_INPUT_MB" in run.stderr
    assert cli("info", str(path), env={"DCMAP_MAX_INPUT_MB": "64"}).returncode == 2  # read, then: not a network


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom"])
def test_an_endless_or_special_file_is_refused_at_once(special):
    run = cli("info", special)
    assert run.returncode == 2 and "not a regular file" in run.stderr


def test_a_key_twice_in_a_json_object_is_refused(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text('{"nodes": [{"id": "A", "states": 2}], "edges": [], "nodes": [{"id": "B", "states": 2}]}')
    with pytest.raises(NetworkError, match="the key 'nodes' appears twice"):
        load_network(path)
