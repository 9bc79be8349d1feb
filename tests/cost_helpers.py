"""Helpers shared by the cost models' tests (test_cost_base.py, test_cost_dcmap.py,
test_cost_user.py): the paper example's optimal mappings and a mapping's total cost."""

from __future__ import annotations

from dcmap_dist.cost.base import evaluate_mapping

OPTIMAL = [
    [["A"], ["F"], ["D", "G"], ["E"], ["B"], ["C"]],
    [["A", "F"], ["D", "G"], ["E"], ["B"], ["C"]],
    [["A", "D", "G"], ["F"], ["E"], ["B"], ["C"]],
]


def total(network, clusters, model) -> float:
    return sum(c.cost for c in evaluate_mapping(network, clusters, model))
