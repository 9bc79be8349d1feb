"""Tests of layers, S, eta and the feasible mappings (SPEC section 2)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from search_costs import random_network
from shared_networks import shared

from dcmap_dist.io.load import load_network
from dcmap_dist.model.mappings import MappingError, check_mapping, cluster_problem, enumerate_mappings
from dcmap_dist.model.network import Network, NetworkError
from dcmap_dist.model.topology import Topology, added, eta, layer_nodes, layers, long_arcs, same_cluster_matrix


@pytest.fixture(scope="module")
def paper() -> Network:
    return load_network("paper-example")


def as_partition(topo: Topology, clusters) -> frozenset[frozenset[str]]:
    return frozenset(topo.names(c) for c in clusters)


# --------------------------------------------------------------------------- the paper's example


def test_paper_example_layers(paper):
    assert layers(paper) == {"A": 2, "B": 2, "C": 2, "D": 1, "E": 1, "F": 0, "G": 0}
    assert layer_nodes(paper) == [("F", "G"), ("D", "E"), ("A", "B", "C")]
    topo = Topology(paper)
    assert topo.layer == [2, 2, 2, 1, 1, 0, 0]
    assert topo.l_max == 2


def test_paper_example_same_cluster_matrix(paper):
    # the paper's equation (egsameclust): row i, column j; 1 = j can share i's cluster
    expected = np.array(
        [
            #A  B  C  D  E  F  G
            [0, 0, 0, 0, 0, 0, 0],  # A
            [0, 0, 0, 0, 0, 0, 0],  # B
            [0, 0, 0, 0, 0, 0, 0],  # C
            [1, 1, 0, 0, 0, 0, 0],  # D
            [0, 0, 1, 0, 0, 0, 0],  # E
            [1, 0, 0, 0, 0, 0, 1],  # F
            [0, 0, 0, 1, 1, 0, 0],  # G
        ]
    )
    matrix = same_cluster_matrix(paper)
    assert matrix.shape == (7, 7)
    assert np.array_equal(matrix, expected)


def test_paper_example_eta(paper):
    # non-leaf nodes: A (2 children), B, C, D, E (1 child each): 3 * 2**4
    assert eta(paper) == 48


def test_paper_example_mapping_counts(paper):
    topo = Topology(paper)
    merge = list(enumerate_mappings(paper, "merge"))
    single = list(enumerate_mappings(paper, "single"))
    assert len(merge) == 56
    assert len(single) == 48
    merge_set = {as_partition(topo, m) for m in merge}
    single_set = {as_partition(topo, m) for m in single}
    # no mapping is enumerated twice, and every single mapping is a merge mapping
    assert len(merge_set) == 56
    assert len(single_set) == 48
    assert single_set <= merge_set
    for partition in merge_set:
        check_mapping(paper, partition, "merge")
    for partition in single_set:
        check_mapping(paper, partition, "single")


def test_paper_example_long_arcs(paper):
    assert long_arcs(paper) == [("A", "F")]


def test_unknown_scheme(paper):
    with pytest.raises(ValueError, match="unknown scheme 'both'"):
        list(enumerate_mappings(paper, "both"))
    with pytest.raises(ValueError, match="unknown scheme"):
        check_mapping(paper, [list("ABCDEFG")], "both")


# --------------------------------------------------------------------------- real networks


def test_alarm_long_arcs():
    from dcmap_dist.io.bif import read_bif

    alarm = read_bif(shared("alarm.bif.gz"))
    assert len(alarm.edges) == 46
    arcs = long_arcs(alarm)
    assert len(arcs) == 18
    layer = layers(alarm)
    assert all(layer[u] - layer[v] > 1 for u, v in arcs)
    assert sum(1 for u, v in alarm.edges if layer[u] - layer[v] > 1) == 18


def test_seagrass_eta():
    path = shared("seagrass-2tbn.json")
    one = load_network(path, slices=1)
    two = load_network(path, slices=2)
    assert len(one) == 25 and len(two) == 50
    assert eta(one) == 9909043200
    assert f"{eta(one):.4g}" == "9.909e+09"
    assert f"{eta(two):.4g}" == "1.515e+21"


# --------------------------------------------------------------------------- check_mapping


def test_check_mapping_accepts_and_returns_frozensets(paper):
    got = check_mapping(paper, [["A"], ["F"], ["D", "G"], ["E"], ["B"], ["C"]])
    assert got == [frozenset("A"), frozenset("F"), frozenset("DG"), frozenset("E"),
                   frozenset("B"), frozenset("C")]


def test_node_in_two_clusters(paper):
    with pytest.raises(MappingError, match=r"node 'D' is in two clusters"):
        check_mapping(paper, [["A", "D", "F"], ["D", "G"], ["B"], ["C"], ["E"]])


def test_node_twice_in_one_cluster(paper):
    # before, this said "node 'D' is in two clusters (1 and 1)"
    with pytest.raises(MappingError, match=r"node 'D' is twice in cluster 1$"):
        check_mapping(paper, [["A", "F"], ["D", "G", "D"], ["B"], ["C"], ["E"]])


def test_unknown_node(paper):
    with pytest.raises(MappingError, match=r"unknown node 'Q'"):
        check_mapping(paper, [["A"], ["B"], ["C"], ["D"], ["E"], ["F"], ["G", "Q"]])


def test_missing_node(paper):
    with pytest.raises(MappingError, match=r"node 'E' is in no cluster"):
        check_mapping(paper, [["A"], ["B"], ["C"], ["D"], ["F"], ["G"]])


def test_mapping_error_is_a_network_error(paper):
    assert issubclass(MappingError, NetworkError)
    with pytest.raises(MappingError, match="empty"):
        check_mapping(paper, [list("ABCDEFG"), []])


def test_non_contiguous_cluster(paper):
    # B -> D -> G: the path leaves {B, G} through D. {B, G} is also not weakly
    # connected, which the package reports first; either way the cluster is named.
    clusters = [["B", "G"], ["D"], ["A"], ["C"], ["E"], ["F"]]
    with pytest.raises(MappingError, match=r"cluster 0 \['B', 'G'\] is infeasible"):
        check_mapping(paper, clusters)
    topo = Topology(paper)
    assert cluster_problem(topo, topo.mask("BG"), "merge") is not None
    # adding D makes it feasible
    check_mapping(paper, [["B", "D", "G"], ["A"], ["C"], ["E"], ["F"]])


def test_contiguity_is_checked_on_a_connected_cluster():
    # a -> b -> c and a -> c: {a, c} is connected but the path a -> b -> c leaves it
    network = Network("tri", "abc", {x: 2 for x in "abc"}, [("a", "b"), ("b", "c"), ("a", "c")])
    with pytest.raises(MappingError, match=r"\['a', 'c'\].*contiguous"):
        check_mapping(network, [["a", "c"], ["b"]])
    check_mapping(network, [["a", "b"], ["c"]])


def test_not_connected_cluster(paper):
    clusters = [["F", "G"], ["A"], ["B"], ["C"], ["D"], ["E"]]
    with pytest.raises(MappingError, match=r"\['F', 'G'\].*not weakly connected"):
        check_mapping(paper, clusters)


def test_not_layer_connected_under_merge(paper):
    # F and G are both layer 0 and not joined within layer <= 0
    clusters = [["A", "F", "D", "G"], ["B"], ["C"], ["E"]]
    with pytest.raises(MappingError, match=r"\['A', 'D', 'F', 'G'\].*layer-connected"):
        check_mapping(paper, clusters, "merge")
    with pytest.raises(MappingError, match=r"\['A', 'D', 'F', 'G'\]"):
        check_mapping(paper, clusters, "single")


def test_feasible_under_merge_but_not_single(paper):
    topo = Topology(paper)
    merge = {as_partition(topo, m) for m in enumerate_mappings(paper, "merge")}
    single = {as_partition(topo, m) for m in enumerate_mappings(paper, "single")}
    only_merge = merge - single
    assert len(only_merge) == 8
    # every one of them holds {A, D, F} (A merges the clusters of D and F)
    assert all(any({"A", "D", "F"} <= c for c in p) for p in only_merge)
    for partition in only_merge:
        clusters = [sorted(c) for c in partition]
        check_mapping(paper, clusters, "merge")
        with pytest.raises(MappingError, match=r"scheme single"):
            check_mapping(paper, clusters, "single")
    # the smallest one explicitly
    assert frozenset(map(frozenset, ["ADF", "B", "C", "E", "G"])) in only_merge


# --------------------------------------------------------------------------- brute force cross-check


def reference_layers(graph: nx.DiGraph) -> dict[str, int]:
    layer: dict[str, int] = {}
    for x in reversed(list(nx.topological_sort(graph))):
        layer[x] = max((layer[c] + 1 for c in graph.successors(x)), default=0)
    return layer


def reference_feasible(graph: nx.DiGraph, layer: dict[str, int], cluster: frozenset, scheme: str) -> bool:
    """SPEC 2 taken literally, with networkx."""
    sub = graph.subgraph(cluster)
    if not nx.is_weakly_connected(sub):  # (a)
        return False
    for z in set(graph) - cluster:  # (b): a path member -> z -> member
        if nx.ancestors(graph, z) & cluster and nx.descendants(graph, z) & cluster:
            return False
    for j in sorted({layer[x] for x in cluster}):
        below = [x for x in cluster if layer[x] <= j]
        low = graph.subgraph(below)
        if scheme == "single":
            if not nx.is_weakly_connected(low):
                return False
        else:  # (c)
            at_j = {x for x in cluster if layer[x] == j}
            if not any(at_j <= comp for comp in nx.weakly_connected_components(low)):
                return False
    return True


def set_partitions(items: list):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in set_partitions(rest):
        yield [[first]] + partition
        for k in range(len(partition)):
            yield partition[:k] + [[first] + partition[k]] + partition[k + 1 :]


def brute_force(network: Network, scheme: str) -> set[frozenset[frozenset[str]]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(network.nodes)
    graph.add_edges_from(network.edges)
    layer = reference_layers(graph)
    cache: dict[frozenset, bool] = {}

    def ok(cluster: frozenset) -> bool:
        if cluster not in cache:
            cache[cluster] = reference_feasible(graph, layer, cluster, scheme)
        return cache[cluster]

    found = set()
    for partition in set_partitions(list(network.nodes)):
        clusters = frozenset(frozenset(c) for c in partition)
        if all(ok(c) for c in clusters):
            found.add(clusters)
    return found


def test_set_partitions_counts():
    # Bell numbers
    assert [sum(1 for _ in set_partitions(list(range(n)))) for n in range(1, 8)] == [
        1, 2, 5, 15, 52, 203, 877
    ]


def test_reference_checker_on_the_paper_example(paper):
    assert len(brute_force(paper, "merge")) == 56
    assert len(brute_force(paper, "single")) == 48


def test_enumeration_matches_brute_force_on_random_dags():
    sizes = []
    for g in range(40):
        network = random_network(20240521 + g, 4, 8)
        graph = nx.DiGraph(list(network.edges))
        graph.add_nodes_from(network.nodes)
        assert nx.is_weakly_connected(graph)
        assert layers(network) == reference_layers(graph)
        topo = Topology(network)
        for scheme in ("merge", "single"):
            listed = [as_partition(topo, m) for m in enumerate_mappings(network, scheme)]
            expected = brute_force(network, scheme)
            assert len(listed) == len(set(listed)), (network.edges, scheme)
            assert set(listed) == expected, (network.nodes, network.edges, scheme)
            sizes.append(len(expected))
    # the sample is not trivial
    assert max(sizes) > 100


def test_the_brute_force_guard_bounds_the_number_of_mappings_and_refuses_past_its_limit(paper):
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.search.baselines import BRUTE_FORCE_LIMIT, _bell, brute_force, mapping_bound
    from dcmap_dist.search.problem import Problem

    assert [_bell(n) for n in range(1, 12)] == [1, 2, 5, 15, 52, 203, 877, 4140, 21147, 115975, 678570]
    assert mapping_bound(paper, "merge")[0] == 64 and mapping_bound(paper, "single")[0] == 48  # 56 and 48
    for g in range(40):  # a sound upper bound, and every network of up to 11 nodes passes
        network = random_network(20240521 + g, 4, 11)
        for scheme in ("merge", "single"):
            bound, _ = mapping_bound(network, scheme)
            assert sum(1 for _ in enumerate_mappings(network, scheme)) <= bound <= BRUTE_FORCE_LIMIT
    child = load_network("child")
    with pytest.raises(ValueError, match=r"^brute force would enumerate up to 3\.355e\+7 mappings of 'child' "
                                         r"\(2\^25: each node joins a subset of its children's clusters\), more "
                                         r"than the 1,000,000 it is allowed: use --method dcmap"):
        brute_force(Problem(child, DcmapCost(), "merge"))
    small = Problem(paper, DcmapCost(), "merge")
    assert len(brute_force(small, most=None)) == 56
    with pytest.raises(ValueError, match=r"up to 64 mappings of 'paper-example' \(2\^6: .*more than the 63 it"):
        brute_force(small, most=63)


def test_added_adds_one_by_one_as_the_native_core_on_every_python():
    """The cost model and the bounds sum with added, not sum: from Python 3.12 on, sum adds
    floats with a compensation, and the Python engine's bounds then differed from the
    native core's in the last bit (their searches' bytes too)."""
    values = [0.1, 0.2, 0.3]
    assert added(values) == (0.1 + 0.2) + 0.3 == 0.6000000000000001
    assert added(iter(values)) == added(values) and added([]) == 0 and added([2, 3]) == 5
