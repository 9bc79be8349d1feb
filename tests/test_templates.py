"""Tests for dcmap_dist.study.templates: seeded random 2-slice templates and the study's templates."""

from __future__ import annotations

import json
import math
from pathlib import Path

import networkx as nx
import pytest

from dcmap_dist.io.dynamic import unroll
from dcmap_dist.io.load import load_network
from dcmap_dist.study.templates import STUDY_TEMPLATES, random_template, study_template

NETWORKS = Path(__file__).resolve().parents[1].parent / "shared" / "networks"


def text(template: dict) -> str:
    return json.dumps(template)


def test_same_arguments_give_the_same_json() -> None:
    for seed in range(5):
        args = dict(slice_nodes=6, intra_density=0.35, temporal_density=0.2, max_states=4, seed=seed,
                     observed_fraction=0.3)
        assert text(random_template(**args)) == text(random_template(**args))


def test_different_seeds_give_different_templates() -> None:
    drawn = {text({k: v for k, v in random_template(6, 0.4, 0.2, seed=s).items() if k not in ("name", "description")})
             for s in range(20)}
    assert len(drawn) == 20


def test_name_encodes_the_arguments() -> None:
    assert random_template(6, 0.35, 0.2, 4, seed=7)["name"] == "rand-n6-d0.35-t0.2-s4-seed7"
    assert random_template(6, 0.35, 0.2, 3, seed=7, observed_fraction=0.5)["name"] == "rand-n6-d0.35-t0.2-s3-o0.5-seed7"


def test_the_slice_is_a_connected_dag_that_unrolls() -> None:
    for seed in range(40):
        n = 2 + seed % 7
        template = random_template(n, 0.3, 0.15, seed=seed)
        graph = nx.DiGraph(template["edges"])
        graph.add_nodes_from(x["id"] for x in template["nodes"])
        assert nx.is_directed_acyclic_graph(graph)
        assert nx.is_weakly_connected(graph)
        net = unroll(template, 3)
        assert len(net) == 3 * n
        assert len(net.edges) == 3 * len(template["edges"]) + 2 * len(template["temporal_edges"])


def test_states_are_uniform_in_range() -> None:
    seen = [x["states"] for s in range(30) for x in random_template(6, 0.3, 0.1, max_states=4, seed=s)["nodes"]]
    assert set(seen) == {1, 2, 3, 4}
    assert all(x["states"] == 1 for x in random_template(5, 0.3, 0.1, max_states=1)["nodes"])


def test_densities_are_respected_loosely() -> None:
    n, count = 8, 60
    intra = temporal = 0
    for seed in range(count):
        template = random_template(n, 0.3, 0.2, seed=seed)
        intra += len(template["edges"])
        temporal += len(template["temporal_edges"])
    pairs = n * (n - 1) / 2
    # drawn arcs have mean 0.3 per pair; the connecting arcs add a few
    assert 0.27 < intra / (count * pairs) < 0.42
    assert 0.16 < temporal / (count * n * n) < 0.24


def test_extreme_densities() -> None:
    full = random_template(5, 1.0, 1.0, seed=3)
    assert len(full["edges"]) == 10 and len(full["temporal_edges"]) == 25
    sparse = random_template(5, 0.0, 0.0, seed=3)
    assert len(sparse["edges"]) == 4 and sparse["temporal_edges"] == []  # a spanning tree, no temporal arc
    single = random_template(1, 0.5, 1.0, seed=1)
    assert single["edges"] == [] and single["temporal_edges"] == [["X0", "X0"]]


def test_a_higher_density_draws_a_superset_of_temporal_arcs() -> None:
    for seed in range(10):
        low = random_template(5, 0.3, 0.1, seed=seed)
        high = random_template(5, 0.3, 0.5, seed=seed)
        assert set(map(tuple, low["temporal_edges"])) <= set(map(tuple, high["temporal_edges"]))
        assert low["nodes"] == high["nodes"] and low["edges"] == high["edges"]


def test_observed_fraction() -> None:
    template = random_template(6, 0.3, 0.2, seed=2, observed_fraction=0.5)
    assert len(template["observed"]) == 3
    net = unroll(template, 2)
    assert net.observed == {f"{x}_{t}" for x in template["observed"] for t in range(2)}
    assert random_template(6, 0.3, 0.2, seed=2)["observed"] == []


@pytest.mark.parametrize("args, message", [
    (dict(slice_nodes=0), "slice_nodes must be an integer >= 1"),
    (dict(slice_nodes=2.5), "slice_nodes must be an integer >= 1"),
    (dict(slice_nodes=True), "slice_nodes must be an integer >= 1"),
    (dict(intra_density=-0.1), "intra_density must be a number from 0 to 1"),
    (dict(intra_density=math.nan), "intra_density must be a number from 0 to 1"),
    (dict(temporal_density=1.5), "temporal_density must be a number from 0 to 1"),
    (dict(temporal_density="0.2"), "temporal_density must be a number from 0 to 1"),
    (dict(max_states=0), "max_states must be an integer >= 1"),
    (dict(seed="a"), "seed must be an integer"),
    (dict(observed_fraction=2), "observed_fraction must be a number from 0 to 1"),
])
def test_bad_arguments_are_refused(args: dict, message: str) -> None:
    full = dict(slice_nodes=4, intra_density=0.3, temporal_density=0.2) | args
    with pytest.raises(ValueError, match=message):
        random_template(**full)


@pytest.fixture()
def networks() -> Path:
    if not NETWORKS.is_dir():
        pytest.skip(f"{NETWORKS} is missing")
    return NETWORKS


def test_seagrass_study_template(networks: Path) -> None:
    template, options = study_template("seagrass", networks)
    assert options == {"order": "paper"}
    assert template["observed"] == ["Time_of_Year", "Genera_Presence", "Location_Type"]
    net = load_network(template, slices=2)
    assert (len(net), len(net.edges)) == (50, 2 * 48 + 10)


def test_water_study_template(networks: Path) -> None:
    template, options = study_template("water", networks)
    assert options == {}
    assert (len(template["nodes"]), len(template["temporal_edges"])) == (8, 22)
    assert "dropped: nothing" in template["description"]
    assert len(load_network(template, slices=4)) == len(load_network(networks / "water.bif.gz"))


def test_diabetes_drops_static_nodes_and_partial_slice(networks: Path) -> None:
    template, options = study_template("diabetes", networks)
    assert options == {}
    assert not {"static_nodes", "static_edges", "partial_slice"} & set(template)
    assert "static nodes cho_init, ins_sens" in template["description"]
    assert "partial slice '24' (meal_24, cho_24, bg_24)" in template["description"]
    # 24 full slices of 17 nodes, plus the 2 static nodes and the 3 of the partial slice
    assert len(load_network(template, slices=24)) + 5 == len(load_network(networks / "diabetes.bif.gz"))


def test_unknown_study_template() -> None:
    with pytest.raises(ValueError, match="unknown study template 'alarm': choose one of seagrass, water, diabetes"):
        study_template("alarm", NETWORKS)
    assert STUDY_TEMPLATES == ("seagrass", "water", "diabetes")
