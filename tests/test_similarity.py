"""The paper's same-cluster similarity, on cases worked by hand."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dcmap_dist.model.mappings import MappingError
from dcmap_dist.study.similarity import cluster_labels, mapping_matrix, similarities, similarity

NODES = ["A", "B", "C", "D"]
AB_CD = [["A", "B"], ["C", "D"]]  # sum(Y*) = 4 diagonal + 4 (AB, BA, CD, DC) = 8
ABC_D = [["A", "B", "C"], ["D"]]  # sum(Y*) = 4 diagonal + 6 (AB, AC, BC both ways) = 10


def test_mapping_matrix_includes_the_diagonal():
    assert mapping_matrix([["A", "C"], ["B"], ["D"]], NODES).tolist() == [
        [1, 0, 1, 0],
        [0, 1, 0, 0],
        [1, 0, 1, 0],
        [0, 0, 0, 1],
    ]


def test_an_optimal_mapping_is_fully_similar_whatever_the_order():
    assert similarity([["D", "C"], ["B", "A"]], [AB_CD], NODES) == 1.0
    assert similarity(AB_CD, [AB_CD], ["D", "B", "C", "A"]) == 1.0


def test_four_nodes_by_hand():
    # shared with AB_CD: the diagonal (4) and AB, BA (2): 6 of 8
    assert similarity(ABC_D, [AB_CD], NODES) == 0.75
    # all singletons share only the diagonal: 4 of 8
    assert similarity([["A"], ["B"], ["C"], ["D"]], [AB_CD], NODES) == 0.5
    # one whole cluster: the diagonal and all 12 pairs hold every pair of Y*
    assert similarity([NODES], [AB_CD], NODES) == 1.0


def test_the_best_of_several_optimal_mappings_counts():
    assert similarity(ABC_D, [AB_CD, ABC_D], NODES) == 1.0
    # {A}{B, C}{D}: 4 of 8 against AB_CD, 6 (diagonal, BC, CB) of 10 against ABC_D
    assert similarity([["A"], ["B", "C"], ["D"]], [AB_CD, ABC_D], NODES) == 0.6
    assert similarities([ABC_D, [["A"], ["B", "C"], ["D"]]], [AB_CD], NODES) == [0.75, 0.5]


def test_it_equals_the_matrix_formula_on_random_partitions():
    rng = random.Random(7)
    nodes = [f"x{i}" for i in range(30)]

    def partition() -> list[list[str]]:
        groups: dict[int, list[str]] = {}
        k = rng.randint(1, 30)
        for x in nodes:
            groups.setdefault(rng.randrange(k), []).append(x)
        return list(groups.values())

    for _ in range(40):
        mapping, optimal = partition(), [partition() for _ in range(4)]
        y = mapping_matrix(mapping, nodes)
        expected = max(np.sum(y * mapping_matrix(o, nodes)) / np.sum(mapping_matrix(o, nodes))
                       for o in optimal)
        assert similarity(mapping, optimal, nodes) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("clusters, message", [
    ([["A", "B"], ["C"]], "node 'D' is in no cluster"),
    ([["A", "B"], ["C", "D", "E"]], "unknown node 'E'"),
    ([["A", "B"], ["B", "C", "D"]], "node 'B' is in two clusters (0 and 1)"),
    ([["A", "A", "B"], ["C", "D"]], "node 'A' is twice in cluster 0"),
    ([["A", "B", "C", "D"], []], "cluster 1 is empty"),
])
def test_a_non_partition_is_refused(clusters, message):
    with pytest.raises(MappingError) as error:
        similarity(clusters, [AB_CD], NODES)
    assert message in str(error.value)
    with pytest.raises(MappingError):  # an optimal mapping is checked alike
        similarity(AB_CD, [clusters], NODES)


def test_no_optimal_mapping_is_refused():
    with pytest.raises(ValueError, match="no optimal mappings"):
        similarity(AB_CD, [], NODES)


def test_cluster_labels_number_clusters_in_the_order_given():
    assert cluster_labels([["C"], ["A", "D"], ["B"]], NODES).tolist() == [1, 2, 0, 1]
