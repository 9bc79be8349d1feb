"""Tests for dcmap_dist.study.replication: replicating a k-slice mapping over T slices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcmap_dist import cli
from dcmap_dist.io.dynamic import unroll
from dcmap_dist.model.mappings import MappingError, check_mapping
from dcmap_dist.study.replication import Replication, best_replication, mapping_cost, replicate
from dcmap_dist.solve import solve
from dcmap_dist.study.templates import random_template

# A -> C -> E and A -> D inside a slice, D -> D over time. The cluster {A, C, D} is feasible
# in one slice (C in layer 1, D a leaf), but wherever D has a successor D is lifted to
# layer 1 beside C, and C, D are joined only through A above them: not layer-connected.
LIFTED = {
    "name": "lifted",
    "nodes": [{"id": x, "states": 2} for x in "ACDE"],
    "edges": [["A", "C"], ["A", "D"], ["C", "E"]],
    "temporal_edges": [["D", "D"]],
}

# P -> R and Q -> R over time, no arc inside a slice: {P_0, Q_0, R_1} is a cluster of
# two slices, joined only through R_1
SPANNING = {
    "name": "spanning",
    "nodes": [{"id": x, "states": 2} for x in "PQR"],
    "edges": [],
    "temporal_edges": [["P", "R"], ["Q", "R"]],
}


def canonical(clusters) -> list[list[str]]:
    return sorted(sorted(c) for c in clusters)


def cli_cost(tmp_path: Path, capsys: pytest.CaptureFixture, template: dict, slices: int, clusters) -> float:
    """The total that ``dcmap cost --json`` prints for the mapping of the unrolled template."""
    network, mapping = tmp_path / "template.json", tmp_path / "mapping.json"
    network.write_text(json.dumps(template))
    mapping.write_text(json.dumps({"clusters": clusters}))
    capsys.readouterr()
    assert cli.main(["cost", str(network), str(mapping), "--slices", str(slices), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["total"]


def test_replicated_optima_are_feasible_and_cost_what_dcmap_cost_says(tmp_path: Path, capsys) -> None:
    cut = 0
    for seed in range(30):
        template = random_template(3 + seed % 2, 0.5, 0.2, max_states=4, seed=seed)
        for k in (1, 2):
            optimum = solve(unroll(template, k))
            assert optimum.proven_optimal
            mapping = optimum.solutions[0].clusters
            for slices in range(1, 5):
                result = replicate(template, mapping, k, slices)
                network = unroll(template, slices)
                check_mapping(network, result.clusters)
                total = mapping_cost(network, result.clusters)
                assert total == pytest.approx(cli_cost(tmp_path, capsys, template, slices, result.clusters),
                                              rel=1e-9)
                if slices == k:
                    assert result == Replication(canonical(mapping), len(mapping), 0, 0)
                    assert total == pytest.approx(optimum.optimal_cost, rel=1e-9)
                cut += result.cut
    assert cut > 0  # the sample cuts clusters (a repair is rare here: see the hand-made case)


def test_a_replication_costs_no_less_than_the_optimum() -> None:
    for seed in range(8):
        template = random_template(3, 0.5, 0.3, seed=100 + seed)
        one = solve(unroll(template, 1)).solutions[0].clusters
        for slices in (2, 3):
            network = unroll(template, slices)
            optimum = solve(network).optimal_cost
            assert mapping_cost(network, replicate(template, one, 1, slices).clusters) >= optimum * (1 - 1e-9)


def test_a_copy_made_infeasible_by_the_lifted_layers_is_repaired() -> None:
    mapping = [["A_0", "C_0", "D_0"], ["E_0"]]
    check_mapping(unroll(LIFTED, 1), mapping)
    result = replicate(LIFTED, mapping, 1, 2)
    assert result == Replication([["A_0"], ["A_1", "C_1", "D_1"], ["C_0"], ["D_0"], ["E_0"], ["E_1"]], 4, 0, 1)
    network = unroll(LIFTED, 2)
    check_mapping(network, result.clusters)
    with pytest.raises(MappingError, match="not layer-connected"):  # the copy as it is
        check_mapping(network, [["A_0", "C_0", "D_0"], ["E_0"], ["A_1", "C_1", "D_1"], ["E_1"]])
    # three slices: D_0 is lifted to layer 2, above C_0, which makes slice 0's copy feasible
    # again; slice 1's is repaired, the last slice keeps its copy
    three = replicate(LIFTED, mapping, 1, 3)
    assert (three.copied, three.cut, three.repaired) == (6, 0, 1)
    assert ["A_0", "C_0", "D_0"] in three.clusters and ["A_2", "C_2", "D_2"] in three.clusters
    assert ["A_1"] in three.clusters


def test_a_truncated_block_cuts_a_spanning_cluster_into_components() -> None:
    mapping = [["P_0", "Q_0", "R_1"], ["R_0"], ["P_1"], ["Q_1"]]
    result = replicate(SPANNING, mapping, 2, 3)
    assert result == Replication(
        [["P_0", "Q_0", "R_1"], ["P_1"], ["P_2"], ["Q_1"], ["Q_2"], ["R_0"], ["R_2"]], 5, 1, 0)
    check_mapping(unroll(SPANNING, 3), result.clusters)
    four = replicate(SPANNING, mapping, 2, 4)  # two whole blocks: the cluster is copied, not cut
    assert ["P_2", "Q_2", "R_3"] in four.clusters and (four.copied, four.cut) == (8, 0)
    one = replicate(SPANNING, mapping, 2, 1)  # T < k: only the truncated block
    assert one == Replication([["P_0"], ["Q_0"], ["R_0"]], 1, 1, 0)


def test_best_replication_takes_the_cheapest() -> None:
    template = random_template(4, 0.5, 0.3, seed=3)
    network = unroll(template, 3)
    mappings = [[[f"X{i}_0"] for i in range(4)], [["X0_0", "X2_0"], ["X1_0", "X3_0"]]]  # the second is optimal
    costs = [mapping_cost(network, replicate(template, m, 1, 3).clusters) for m in mappings]
    assert costs[0] != costs[1]
    total, chosen = best_replication(template, mappings, 1, 3)
    assert total == min(costs)
    assert chosen == replicate(template, mappings[costs.index(min(costs))], 1, 3)
    order_total, _ = best_replication(template, mappings, 1, 3, order="paper", addition=0.5)
    assert order_total == min(mapping_cost(network, replicate(template, m, 1, 3).clusters, order="paper",
                                           addition=0.5) for m in mappings)


def test_bad_input_is_refused() -> None:
    mapping = [["A_0", "C_0", "D_0"], ["E_0"]]
    with pytest.raises(ValueError, match="k \\(the slices of the mapping\\) must be an integer >= 1, got 0"):
        replicate(LIFTED, mapping, 0, 2)
    with pytest.raises(ValueError, match="the number of slices T must be an integer >= 1, got 1.5"):
        replicate(LIFTED, mapping, 1, 1.5)
    with pytest.raises(ValueError, match="unknown scheme 'mix'"):
        replicate(LIFTED, mapping, 1, 2, scheme="mix")
    with pytest.raises(MappingError, match="node 'E_0' is in no cluster"):
        replicate(LIFTED, [["A_0", "C_0", "D_0"]], 1, 2)
    with pytest.raises(MappingError, match="unknown node 'A_1'"):  # a mapping of 2 slices given as k = 1
        replicate(LIFTED, [["A_0"], ["C_0"], ["D_0"], ["E_0"], ["A_1"]], 1, 2)
    with pytest.raises(MappingError, match="not weakly connected"):
        replicate(LIFTED, [["C_0", "D_0"], ["A_0"], ["E_0"]], 1, 2)
    with pytest.raises(ValueError, match="at least one k-slice mapping"):
        best_replication(LIFTED, [], 1, 2)
