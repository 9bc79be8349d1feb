"""Tests of the network model and of load_network (SPEC section 1)."""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from dcmap_dist.io.load import load_network
from dcmap_dist.io.plain import network_from_dict, network_from_digraph
from dcmap_dist.model.network import Network, NetworkError, find_cycle, weak_components

NETWORKS = Path(__file__).resolve().parents[1].parent / "shared" / "networks"

SMALL = {
    "name": "small",
    "nodes": [
        {"id": "A", "states": 2},
        {"id": "B", "states": 3},
        {"id": "C", "states": 4},
        {"id": "D", "states": 2},
    ],
    "edges": [["A", "C"], ["B", "C"], ["C", "D"]],
    "observed": ["B"],
}


def shared(name: str) -> Path:
    path = NETWORKS / name
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return path


def check_small(network: Network, name: str = "small") -> None:
    assert network.name == name
    assert network.nodes == ("A", "B", "C", "D")
    assert network.states == {"A": 2, "B": 3, "C": 4, "D": 2}
    assert network.edges == (("A", "C"), ("B", "C"), ("C", "D"))
    assert network.parents == {"A": (), "B": (), "C": ("A", "B"), "D": ("C",)}
    assert network.children == {"A": ("C",), "B": ("C",), "C": ("D",), "D": ()}
    assert network.observed == frozenset({"B"})
    # an observed node counts with one state; its number of states is kept
    assert [network.card(x) for x in network.nodes] == [2, 1, 4, 2]
    assert len(network) == 4


# --------------------------------------------------------------------------- loading


def test_load_dict():
    check_small(load_network(SMALL))
    check_small(network_from_dict(SMALL))


def test_load_json_file(tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    check_small(load_network(path))
    check_small(load_network(str(path)))


def test_load_json_gz_file(tmp_path):
    path = tmp_path / "small.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(SMALL, handle)
    check_small(load_network(path))


def test_json_file_without_name_is_named_after_the_file(tmp_path):
    data = {k: v for k, v in SMALL.items() if k != "name"}
    path = tmp_path / "unnamed-net.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(data, handle)
    check_small(load_network(path), name="unnamed-net")


def test_observed_nodes_and_observe_argument():
    data = dict(SMALL, observed=[])
    plain = load_network(data)
    assert plain.observed == frozenset()
    assert [plain.card(x) for x in plain.nodes] == [2, 3, 4, 2]
    observed = load_network(data, observe=["C", "B"])
    assert observed.observed == frozenset({"B", "C"})
    assert [observed.card(x) for x in observed.nodes] == [2, 1, 1, 2]
    assert observed.states == plain.states
    # with_observed adds to the nodes already observed
    more = load_network(SMALL).with_observed(["D"])
    assert more.observed == frozenset({"B", "D"})
    assert [more.card(x) for x in more.nodes] == [2, 1, 4, 1]


def test_observe_unknown_name_errors():
    with pytest.raises(NetworkError, match="'Nope'"):
        load_network(SMALL, observe=["Nope"])


def test_load_networkx_digraph():
    graph = nx.DiGraph(name="from-nx")
    graph.add_node("A", states=2)
    graph.add_node("B", states=3)
    graph.add_node("C", states=4, observed=False)
    graph.add_node("D", states=2)
    graph.add_edges_from([("A", "C"), ("B", "C"), ("C", "D")])
    graph.nodes["B"]["observed"] = True
    check_small(load_network(graph), name="from-nx")
    check_small(network_from_digraph(graph, name="small"))
    # round trip through Network.digraph
    back = network_from_digraph(load_network(SMALL).digraph())
    check_small(back)


def test_digraph_without_states_attribute_errors():
    graph = nx.DiGraph()
    graph.add_node("A", states=2)
    graph.add_node("B")
    graph.add_edge("A", "B")
    with pytest.raises(NetworkError, match=r"'B'.*states"):
        load_network(graph)


def test_bundled_example_by_name():
    network = load_network("paper-example")
    assert network.name == "paper-example"
    assert network.nodes == tuple("ABCDEFG")
    assert set(network.edges) == {
        ("A", "F"), ("A", "D"), ("B", "D"), ("C", "E"), ("D", "G"), ("E", "G")
    }
    assert all(network.states[x] == 2 for x in network.nodes)
    assert network.observed == frozenset()


def test_network_passes_through_load_network():
    network = load_network(SMALL)
    assert load_network(network) is network
    assert load_network(network, observe=["D"]).observed == frozenset({"B", "D"})


def test_a_duplicate_edge_is_refused_and_named():
    data = dict(SMALL, edges=[["A", "C"], ["B", "C"], ["A", "C"], ["C", "D"]])
    with pytest.raises(NetworkError, match=r"^duplicate edge 'A' -> 'C'$"):
        load_network(data)
    template = dict(SMALL, temporal_edges=[["D", "A"], ["D", "A"]])
    with pytest.raises(NetworkError, match=r"^duplicate temporal edge 'D' -> 'A'$"):
        load_network(template, slices=2)


# --------------------------------------------------------------------------- bad input


def nodes(*names: str, states: int = 2) -> list[dict]:
    return [{"id": x, "states": states} for x in names]


def test_cycle_is_named():
    data = {
        "nodes": nodes("D", "A", "B", "C", "E"),
        "edges": [["D", "A"], ["A", "B"], ["B", "C"], ["C", "A"], ["C", "E"]],
    }
    with pytest.raises(NetworkError, match="cycle") as info:
        load_network(data)
    named = set(re.findall(r"\b[A-E]\b", str(info.value).split(":", 1)[1]))
    assert named == {"A", "B", "C"}


def test_self_loop_is_a_cycle():
    with pytest.raises(NetworkError, match=r"cycle: A -> A"):
        load_network({"nodes": nodes("A", "B"), "edges": [["A", "A"], ["A", "B"]]})


def test_cycles_and_components_agree_with_networkx_on_random_graphs():
    """The checks the search's own path makes without networkx give networkx's answers:
    acyclic or not (and a cycle found is one), and the same weak components."""
    rng = random.Random(7)
    cyclic = 0
    for _ in range(400):
        n = rng.randint(1, 9)
        names = [f"v{i}" for i in range(n)]
        arcs = {(rng.choice(names), rng.choice(names)) for _ in range(rng.randint(0, 2 * n))}
        graph = nx.DiGraph(arcs)
        graph.add_nodes_from(names)
        children = {x: list(graph.successors(x)) for x in names}
        parents = {x: list(graph.predecessors(x)) for x in names}
        cycle = find_cycle(names, children)
        assert bool(cycle) != nx.is_directed_acyclic_graph(graph)
        cyclic += bool(cycle)
        assert all(graph.has_edge(u, v) for u, v in zip(cycle, cycle[1:] + cycle[:1]))
        assert len(set(cycle)) == len(cycle)
        found = weak_components(names, parents, children)
        assert sorted(map(sorted, found)) == sorted(map(sorted, nx.weakly_connected_components(graph)))
        assert [min(c, key=names.index) for c in found] == sorted((min(c, key=names.index) for c in found),
                                                                  key=names.index)
    assert 50 < cyclic < 350


def test_solving_imports_neither_networkx_nor_numpy():
    """A process that loads a file and solves it keeps networkx and numpy (and Ray and
    pyarrow) out of memory: they are imported where a graph, a matrix, a distributed run
    or a checkpoint is asked for."""
    code = ("import sys; from dcmap_dist import load_network, solve; solve(load_network('asia'));"
            "print(sorted(m for m in ('networkx', 'numpy', 'pyarrow', 'ray') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_edge_to_unknown_node():
    data = {"nodes": nodes("A", "B"), "edges": [["A", "B"], ["B", "Zed"]]}
    with pytest.raises(NetworkError, match=r"unknown node 'Zed'"):
        load_network(data)


def test_edge_from_unknown_node():
    data = {"nodes": nodes("A", "B"), "edges": [["Zed", "A"]]}
    with pytest.raises(NetworkError, match=r"unknown node 'Zed'"):
        load_network(data)


def test_duplicate_node():
    data = {"nodes": nodes("A", "B", "A"), "edges": [["A", "B"]]}
    with pytest.raises(NetworkError, match=r"duplicate node 'A'"):
        load_network(data)


@pytest.mark.parametrize("states", [0, -3])
def test_node_with_fewer_than_one_state(states):
    data = {"nodes": nodes("A") + [{"id": "B", "states": states}], "edges": [["A", "B"]]}
    with pytest.raises(NetworkError, match=rf"'B' has {states} states"):
        load_network(data)


def test_one_state_is_allowed():
    network = load_network({"nodes": nodes("A", "B", states=1), "edges": [["A", "B"]]})
    assert network.card("A") == 1 and network.card("B") == 1


def test_observed_name_not_a_node():
    data = {"nodes": nodes("A", "B"), "edges": [["A", "B"]], "observed": ["A", "Ghost"]}
    with pytest.raises(NetworkError, match=r"observed name 'Ghost' is not a node"):
        load_network(data)


def test_empty_graph():
    with pytest.raises(NetworkError, match="empty"):
        load_network({"name": "void", "nodes": [], "edges": []})
    with pytest.raises(NetworkError, match="empty"):
        load_network(nx.DiGraph())
    with pytest.raises(NetworkError, match="empty"):
        Network("void", [], {}, [])


def test_malformed_json_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"nodes": [{"id": "A", "states": 2},]')
    with pytest.raises(NetworkError, match=r"broken\.json is not valid JSON"):
        load_network(path)


def test_missing_file(tmp_path):
    with pytest.raises(NetworkError, match="no such file"):
        load_network(tmp_path / "absent.json")


def test_missing_nodes():
    with pytest.raises(NetworkError, match="'nodes'"):
        load_network({"name": "x", "edges": []})


def test_node_without_states():
    with pytest.raises(NetworkError, match=r"'B' has no 'states'"):
        load_network({"nodes": [{"id": "A", "states": 2}, {"id": "B"}], "edges": []})


@pytest.mark.parametrize("states", ["2", 2.0, 2.5, True, None])
def test_non_integer_states(states):
    data = {"nodes": nodes("A") + [{"id": "B", "states": states}], "edges": [["A", "B"]]}
    with pytest.raises(NetworkError, match=r"'B' has a non-integer number of states"):
        load_network(data)


def test_edge_that_is_not_a_pair():
    data = {"nodes": nodes("A", "B", "C"), "edges": [["A", "B", "C"]]}
    with pytest.raises(NetworkError, match="pair"):
        load_network(data)


@pytest.mark.parametrize("data, message", [
    (dict(SMALL, edge=[["A", "C"]]), r"unknown key 'edge' in the network \(did you mean 'edges'\?\); "
                                      r"expected keys: name, nodes, edges, observed, source, description$"),
    (dict(SMALL, observd=["A"]), r"unknown key 'observd' in the network \(did you mean 'observed'\?\)"),
    ({"nodes": SMALL["nodes"], "links": [{"source": "A", "target": "C"}]},
     r"unknown key 'links' in the network \(a networkx node-link graph also has \"directed\": true\)"),
    (dict(SMALL, nodes=[{"id": "A", "states": 2, "state": 3}]),
     r"unknown key 'state' in node 'A' \(did you mean 'states'\?\); expected keys: id, states$"),
    (dict(SMALL, temporal_edge=[["A", "A"]]), r"unknown key 'temporal_edge' in the network"),
    (dict(SMALL, temporal_edges=[], slices=2, colour="red"), r"unknown key 'colour' in the network;"),
], ids=["edge", "observd", "links", "node-key", "temporal_edge", "template"])
def test_an_unknown_key_is_refused_with_the_keys_expected(data, message):
    with pytest.raises(NetworkError, match=message):
        load_network(data)


def test_free_text_keys_and_recovered_template_keys_are_accepted():
    assert len(load_network(dict(SMALL, source="a paper", description="four nodes"))) == 4
    recovered = dict(SMALL, temporal_edges=[["D", "A"]], slices=2, slice_tags=["0", "1"], static_nodes=[],
                     static_edges=[], partial_slice=None)
    assert len(load_network(recovered, slices=3)) == 12


def test_networkx_node_link_format_is_read_like_the_digraph(tmp_path):
    graph = nx.DiGraph(name="linked")
    graph.add_node("A", states=2, observed=True, label="ignored, like any other attribute")
    graph.add_node(7, states=3)
    graph.add_edge("A", 7)
    for key in ("links", "edges"):  # networkx writes "edges" now, "links" before 3.4
        path = tmp_path / f"{key}.json"
        try:
            data = nx.node_link_data(graph, edges=key)
        except TypeError:  # networkx before 3.4 (pyproject.toml admits 3.2) names it link
            data = nx.node_link_data(graph, link=key)
        path.write_text(json.dumps(data))
        network = load_network(path)
        assert (network.name, network.nodes, network.edges) == ("linked", ("A", "7"), (("A", "7"),))
        assert network.observed == {"A"} and network.states == {"A": 2, "7": 3}
        assert network.label("7") == 7
    unnamed = nx.node_link_data(nx.DiGraph([("A", "B")]))
    for x in unnamed["nodes"]:
        x["states"] = 2
    (tmp_path / "plain.json").write_text(json.dumps(unnamed))
    assert load_network(tmp_path / "plain.json").name == "plain"


@pytest.mark.parametrize("change, message", [
    ({"directed": False}, r"node-link graph is not directed"),
    ({"multigraph": True}, r"multigraph \(networkx MultiDiGraph\) may hold parallel arcs"),
    ({"nodes": [{"id": "A"}]}, r"node 'A' has no 'states' attribute"),
    ({"nodes": [{"id": ["A"], "states": 2}]}, r"node ids of a node-link graph must be strings or integers"),
    ({"edges": [["A", "B"]]}, r"arcs of a node-link graph must be a list of objects with 'source' and 'target'"),
    ({"links": []}, r"has both 'links' and 'edges'"),
    ({"temporal_edges": []}, r"unknown key 'temporal_edges' in the networkx node-link graph"),
    ({"nodes": [{"id": 1, "states": 2}, {"id": "1", "states": 2}], "edges": []},
     r"nodes 1 and '1' have the same name '1'"),
], ids=["undirected", "multigraph", "no-states", "list-id", "pair-arcs", "links-and-edges", "template",
        "same-name"])
def test_bad_node_link_graphs_are_refused(change, message):
    data = {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes("A", "B"),
            "edges": [{"source": "A", "target": "B"}], **change}
    with pytest.raises(NetworkError, match=message):
        load_network(data)


def test_a_multidigraph_is_refused_and_integer_nodes_are_kept():
    multi = nx.MultiDiGraph()
    multi.add_nodes_from([1, 2], states=2)
    multi.add_edges_from([(1, 2), (1, 2)])
    with pytest.raises(NetworkError, match=r"MultiDiGraph\) may hold parallel arcs.*nx\.DiGraph\(graph\)"):
        load_network(multi)
    network = load_network(nx.DiGraph(multi))
    assert network.nodes == ("1", "2") and [network.label(x) for x in network.nodes] == [1, 2]
    assert network.subnetwork(["2"]).label("2") == 2 and network.with_observed(["1"]).label("1") == 1


def test_slices_on_a_non_template():
    with pytest.raises(NetworkError, match="template"):
        load_network(SMALL, slices=2)
    with pytest.raises(NetworkError, match="template"):
        load_network("paper-example", slices=1)


# --------------------------------------------------------------------------- components


def test_two_components_in_input_order():
    data = {
        "name": "two",
        "nodes": [
            {"id": "p", "states": 2},
            {"id": "a", "states": 3},
            {"id": "q", "states": 4},
            {"id": "b", "states": 5},
            {"id": "r", "states": 2},
        ],
        "edges": [["q", "p"], ["b", "a"], ["p", "r"]],
        "observed": ["b"],
    }
    network = load_network(data)
    comps = network.components()
    assert len(comps) == 2
    first, second = comps
    # ordered by their first node in input order; nodes keep input order
    assert first.nodes == ("p", "q", "r")
    assert second.nodes == ("a", "b")
    assert first.edges == (("q", "p"), ("p", "r"))
    assert second.edges == (("b", "a"),)
    assert first.states == {"p": 2, "q": 4, "r": 2}
    assert second.states == {"a": 3, "b": 5}
    assert first.observed == frozenset() and second.observed == frozenset({"b"})
    assert first.name != second.name


def test_connected_network_is_one_component():
    network = load_network("paper-example")
    comps = network.components()
    assert len(comps) == 1
    assert comps[0].nodes == network.nodes and comps[0].edges == network.edges


@pytest.mark.parametrize("name", ["sachs", "andes", "link"])
def test_real_networks_with_several_components(name):
    from dcmap_dist.io.bif import read_bif

    network = read_bif(shared(f"{name}.bif.gz"))
    graph = nx.DiGraph()
    graph.add_nodes_from(network.nodes)
    graph.add_edges_from(network.edges)
    expected = nx.number_weakly_connected_components(graph)
    comps = network.components()
    assert expected > 1
    assert len(comps) == expected
    # a partition of the nodes and of the arcs, each part weakly connected
    assert sorted(x for c in comps for x in c.nodes) == sorted(network.nodes)
    assert sorted(e for c in comps for e in c.edges) == sorted(network.edges)
    firsts = [network.index[c.nodes[0]] for c in comps]
    assert firsts == sorted(firsts)
    for comp in comps:
        sub = nx.DiGraph()
        sub.add_nodes_from(comp.nodes)
        sub.add_edges_from(comp.edges)
        assert nx.is_weakly_connected(sub)
        assert list(comp.nodes) == sorted(comp.nodes, key=network.index.__getitem__)


# --------------------------------------------------------------------------- content hash


def test_content_hash_is_stable(tmp_path):
    first = load_network(SMALL).content_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert load_network(SMALL).content_hash() == first
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    assert load_network(path).content_hash() == first
    network = load_network(SMALL)
    rebuilt = Network(network.name, network.nodes, network.states, network.edges, network.observed)
    assert rebuilt.content_hash() == first
    # the bundled example hashes the same every time
    assert load_network("paper-example").content_hash() == load_network("paper-example").content_hash()


def test_content_hash_changes_with_the_structure():
    base = load_network(SMALL).content_hash()
    reversed_arc = dict(SMALL, edges=[["A", "C"], ["B", "C"], ["D", "C"]])
    extra_arc = dict(SMALL, edges=SMALL["edges"] + [["A", "D"]])
    moved_arc = dict(SMALL, edges=[["A", "C"], ["B", "D"], ["C", "D"]])
    hashes = {
        load_network(reversed_arc).content_hash(),
        load_network(extra_arc).content_hash(),
        load_network(moved_arc).content_hash(),
        load_network(SMALL, observe=["D"]).content_hash(),
        load_network(dict(SMALL, observed=[])).content_hash(),
        load_network(dict(SMALL, nodes=nodes("A", "B", "C", "D", states=3))).content_hash(),
    }
    assert base not in hashes
    assert len(hashes) == 6
