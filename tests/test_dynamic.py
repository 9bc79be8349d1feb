"""Tests for dcmap_dist.io.dynamic: unrolling 2-slice templates and recovering them."""

from __future__ import annotations

import pytest
from shared_networks import shared

from dcmap_dist.io.dynamic import is_template, recover_template, unroll
from dcmap_dist.io.load import load_network
from dcmap_dist.io.files import read_json
from dcmap_dist.model.network import Network, NetworkError, TooLarge

TINY = {
    "name": "tiny",
    "nodes": [{"id": "a", "states": 2}, {"id": "b", "states": 3}, {"id": "c", "states": 2}],
    "edges": [["a", "b"], ["b", "c"]],
    "temporal_edges": [["a", "a"], ["c", "b"]],
    "observed": ["c"],
}



def read_shared_bif(name: str) -> Network:
    bif = pytest.importorskip("dcmap_dist.io.bif")
    return bif.read_bif(shared(name))


@pytest.fixture(scope="module")
def seagrass() -> dict:
    return read_json(shared("seagrass-2tbn.json"))


def same_template(recovered: dict, template: dict) -> None:
    assert recovered["nodes"] == template["nodes"]
    assert recovered["edges"] == template["edges"]
    assert recovered["temporal_edges"] == template["temporal_edges"]


def test_is_template(seagrass: dict) -> None:
    assert is_template(seagrass)
    assert is_template(TINY)
    assert not is_template({"nodes": [], "edges": []})


def test_seagrass_one_slice(seagrass: dict) -> None:
    net = unroll(seagrass, 1)
    template = [n["id"] for n in seagrass["nodes"]]
    assert net.name == f"{seagrass['name']}x1"
    assert (len(net.nodes), len(net.edges)) == (25, 48)
    assert list(net.nodes) == [f"{x}_0" for x in template]
    assert net.observed == {f"{x}_0" for x in seagrass["observed"]}


def test_seagrass_two_slices(seagrass: dict) -> None:
    net = unroll(seagrass, 2)
    template = [n["id"] for n in seagrass["nodes"]]
    assert (len(net.nodes), len(net.edges)) == (50, 2 * 48 + 10)
    assert list(net.nodes) == [f"{x}_0" for x in template] + [f"{x}_1" for x in template]
    assert len(seagrass["observed"]) == 3
    assert net.observed == {f"{x}_{t}" for x in seagrass["observed"] for t in (0, 1)}
    into_slice0 = [(u, v) for u, v in net.edges if v.endswith("_0")]
    assert all(u.endswith("_0") for u, _ in into_slice0)
    assert len(into_slice0) == 48
    temporal = [(u, v) for u, v in net.edges if u.endswith("_0") and v.endswith("_1")]
    assert temporal == [(f"{u}_0", f"{v}_1") for u, v in seagrass["temporal_edges"]]
    assert ("Seed_Density_0", "Seed_Density_1") in temporal


def test_tiny_three_slices() -> None:
    net = unroll(TINY, 3)
    assert net.name == "tinyx3"
    assert list(net.nodes) == ["a_0", "b_0", "c_0", "a_1", "b_1", "c_1", "a_2", "b_2", "c_2"]
    assert list(net.edges) == [
        ("a_0", "b_0"), ("b_0", "c_0"),
        ("a_1", "b_1"), ("b_1", "c_1"), ("a_0", "a_1"), ("c_0", "b_1"),
        ("a_2", "b_2"), ("b_2", "c_2"), ("a_1", "a_2"), ("c_1", "b_2"),
    ]  # fmt: skip
    assert net.states["b_2"] == 3
    assert net.observed == {"c_0", "c_1", "c_2"}


@pytest.mark.parametrize("slices", [2, 3])
def test_round_trip_tiny(slices: int) -> None:
    recovered = recover_template(unroll(TINY, slices))
    same_template(recovered, TINY)
    assert recovered["observed"] == ["c"]
    assert recovered["slices"] == slices
    assert recovered["slice_tags"] == [str(t) for t in range(slices)]
    assert recovered["static_nodes"] == [] and recovered["static_edges"] == []
    assert recovered["partial_slice"] is None


@pytest.mark.parametrize("slices", [2, 3])
def test_round_trip_seagrass(seagrass: dict, slices: int) -> None:
    recovered = recover_template(unroll(seagrass, slices))
    same_template(recovered, seagrass)
    assert recovered["observed"] == seagrass["observed"]


def test_water() -> None:
    water = read_shared_bif("water.bif.gz")
    recovered = recover_template(water)
    assert len(recovered["nodes"]) == 8
    assert recovered["slices"] == 4
    assert recovered["slice_tags"] == ["12_00", "12_15", "12_30", "12_45"]
    assert recovered["static_nodes"] == [] and recovered["static_edges"] == []
    # water has no arcs inside a slice: all 22 arcs per slice pair are temporal
    assert recovered["edges"] == []
    assert len(recovered["temporal_edges"]) == 22
    net = unroll(recovered, 4)
    assert (len(net.nodes), len(net.edges)) == (len(water.nodes), len(water.edges)) == (32, 66)
    tag = {str(t): s for t, s in enumerate(recovered["slice_tags"])}

    def rename(x: str) -> str:
        b, t = x.rsplit("_", 1)
        return f"{b}_{tag[t]}"

    assert [rename(x) for x in net.nodes] == list(water.nodes)
    assert {(rename(u), rename(v)) for u, v in net.edges} == set(water.edges)


def test_diabetes_partial_last_slice() -> None:
    diabetes = read_shared_bif("diabetes.bif.gz")
    assert (len(diabetes.nodes), len(diabetes.edges)) == (413, 602)
    recovered = recover_template(diabetes)
    assert len(recovered["nodes"]) == 17
    assert recovered["slices"] == 24
    assert recovered["slice_tags"] == [str(t) for t in range(24)]
    assert recovered["static_nodes"] == ["cho_init", "ins_sens"]
    assert recovered["temporal_edges"] == [["cho_bal", "cho"], ["bg", "bg"], ["tot_bal", "bg"]]
    partial = recovered["partial_slice"]
    assert partial["tag"] == "24"
    assert partial["nodes"] == ["meal_24", "cho_24", "bg_24"]
    assert len(partial["edges"]) == 4
    assert sorted(partial["edges"]) == [
        ["bg_23", "bg_24"],
        ["cho_bal_23", "cho_24"],
        ["meal_24", "cho_24"],
        ["tot_bal_23", "bg_24"],
    ]
    # nothing is lost: template x 24 slices + static + partial slice = the network
    net = unroll(recovered, 24)
    n_static = len(recovered["static_nodes"]) + len(recovered["static_edges"])
    n_partial = len(partial["nodes"]) + len(partial["edges"])
    assert len(net.nodes) + len(net.edges) + n_static + n_partial == 413 + 602
    # same result as recovering the network without the partial slice
    without = recover_template(
        diabetes.subnetwork(x for x in diabetes.nodes if x not in set(partial["nodes"]))
    )
    assert without["partial_slice"] is None
    assert {k: v for k, v in recovered.items() if k != "partial_slice"} == {
        k: v for k, v in without.items() if k != "partial_slice"
    }


def test_diabetes_missing_node_in_a_middle_slice() -> None:
    diabetes = read_shared_bif("diabetes.bif.gz")
    net = diabetes.subnetwork(x for x in diabetes.nodes if x != "activ_ins_10")
    with pytest.raises(NetworkError, match="slice '10' has no node activ_ins_10"):
        recover_template(net)


def test_diabetes_without_the_partial_slice() -> None:
    diabetes = read_shared_bif("diabetes.bif.gz")
    partial = {"meal_24", "cho_24", "bg_24"}
    recovered = recover_template(diabetes.subnetwork(x for x in diabetes.nodes if x not in partial))
    assert len(recovered["nodes"]) == 17
    assert recovered["slices"] == 24
    assert recovered["static_nodes"] == ["cho_init", "ins_sens"]
    assert recovered["static_edges"][0] == ["cho_init", "cho_0"]
    assert recovered["static_edges"][1:] == [["ins_sens", f"activ_ins_{t}"] for t in range(24)]
    assert recovered["partial_slice"] is None
    assert recovered["temporal_edges"] == [["cho_bal", "cho"], ["bg", "bg"], ["tot_bal", "bg"]]
    net = unroll(recovered, 24)
    assert (len(net.nodes), len(net.edges)) == (24 * 17, 24 * 21 + 23 * 3)


def test_zero_slices() -> None:
    with pytest.raises(NetworkError, match="integer >= 1, got 0"):
        unroll(TINY, 0)


def test_an_impossible_number_of_slices_is_refused_with_its_size_before_unrolling() -> None:
    with pytest.raises(TooLarge, match=r"^unrolling 'tiny' to 1000000000 slices gives 3,000,000,000 nodes and "
                                       r"3,999,999,998 arcs, more than the 1,000,000 nodes allowed$"):
        unroll(TINY, 10**9)  # at once: nothing is built
    with pytest.raises(TooLarge, match=r"gives 30 nodes and 38 arcs, more than the 29 nodes allowed"):
        load_network(TINY, slices=10, max_nodes=29)
    assert len(load_network(TINY, slices=10, max_nodes=30)) == 30
    assert len(unroll(TINY, 10, max_nodes=None)) == 30
    plain = {key: value for key, value in TINY.items() if key != "temporal_edges"}
    with pytest.raises(TooLarge, match=r"^'tiny' has 3 nodes, more than the 2 allowed$"):
        load_network(plain, max_nodes=2)


def test_temporal_edge_to_unknown_node() -> None:
    bad = {**TINY, "temporal_edges": [["a", "zz"]]}
    with pytest.raises(NetworkError, match="unknown node 'zz'"):
        unroll(bad, 2)


def test_no_slice_suffix() -> None:
    net = Network("plain", ["x", "y"], {"x": 2, "y": 2}, [("x", "y")])
    with pytest.raises(NetworkError, match="no slice suffix was found"):
        recover_template(net)


def test_slice_missing_a_node() -> None:
    full = unroll(TINY, 3)
    net = full.subnetwork(x for x in full.nodes if x != "b_1")
    with pytest.raises(NetworkError, match="slice '1' has no node b_1"):
        recover_template(net)


def test_first_slice_missing_a_node() -> None:
    full = unroll(TINY, 3)
    net = full.subnetwork(x for x in full.nodes if x != "a_0")
    with pytest.raises(NetworkError, match="slice '0' has no node a_0"):
        recover_template(net)


def test_partial_last_slice() -> None:
    full = unroll(TINY, 4)
    net = full.subnetwork(x for x in full.nodes if x != "a_3")
    recovered = recover_template(net)
    same_template(recovered, TINY)
    assert recovered["observed"] == ["c"]
    assert recovered["slices"] == 3
    assert recovered["slice_tags"] == ["0", "1", "2"]
    assert recovered["partial_slice"] == {
        "tag": "3",
        "nodes": ["b_3", "c_3"],
        "edges": [["b_3", "c_3"], ["c_2", "b_3"]],
    }


def test_partial_last_slice_with_static_edge() -> None:
    full = unroll(TINY, 3)
    nodes = [x for x in full.nodes if x != "a_2"] + ["s"]
    edges = [(u, v) for u, v in full.edges if "a_2" not in (u, v)] + [("s", "a_0"), ("s", "b_2")]
    net = Network("static", nodes, {**full.states, "s": 2}, edges)
    recovered = recover_template(net)
    assert recovered["static_nodes"] == ["s"]
    assert recovered["static_edges"] == [["s", "a_0"]]
    assert ["s", "b_2"] in recovered["partial_slice"]["edges"]


def test_last_slice_with_an_extra_base() -> None:
    full = unroll(TINY, 3)
    net = Network("extra", [*full.nodes, "d_2"], {**full.states, "d_2": 2}, full.edges)
    with pytest.raises(NetworkError, match="slice '0' has no node d_0"):
        recover_template(net)


def test_partial_slice_needs_two_full_slices() -> None:
    full = unroll(TINY, 2)
    net = full.subnetwork(x for x in full.nodes if x != "a_1")
    with pytest.raises(NetworkError, match="need at least 2 full slices"):
        recover_template(net)


def test_partial_slice_with_wrong_states() -> None:
    full = unroll(TINY, 3)
    nodes = [x for x in full.nodes if x != "a_2"]
    states = {**full.states, "b_2": 5}
    edges = [(u, v) for u, v in full.edges if "a_2" not in (u, v)]
    with pytest.raises(NetworkError, match="node b_2 has 5 states but b_0 has 3"):
        recover_template(Network("odd", nodes, states, edges))


def test_partial_slice_with_an_extra_intra_slice_edge() -> None:
    full = unroll(TINY, 3)
    nodes = [x for x in full.nodes if x != "b_2"]
    edges = [(u, v) for u, v in full.edges if "b_2" not in (u, v)] + [("a_2", "c_2")]
    with pytest.raises(NetworkError, match="partial slice '2' has intra-slice edge a_2 -> c_2"):
        recover_template(Network("odd", nodes, full.states, edges))


def test_partial_slice_with_an_extra_temporal_edge() -> None:
    full = unroll(TINY, 3)
    nodes = [x for x in full.nodes if x != "b_2"]
    edges = [(u, v) for u, v in full.edges if "b_2" not in (u, v)] + [("b_1", "c_2")]
    with pytest.raises(NetworkError, match="partial slice '2' has temporal edge b_1 -> c_2"):
        recover_template(Network("odd", nodes, full.states, edges))


def test_slices_with_different_intra_slice_edges() -> None:
    full = unroll(TINY, 3)
    net = Network("odd", full.nodes, full.states, [*full.edges, ("a_2", "c_2")])
    with pytest.raises(NetworkError, match="slice '2' has intra-slice edge a_2 -> c_2"):
        recover_template(net)


def test_edge_jumping_two_slices() -> None:
    full = unroll(TINY, 3)
    net = Network("jump", full.nodes, full.states, [*full.edges, ("a_0", "c_2")])
    with pytest.raises(NetworkError, match="edge a_0 -> c_2 goes from slice '0' to slice '2'"):
        recover_template(net)
