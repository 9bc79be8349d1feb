"""Helpers shared by the search's tests: float comparison, a mapping's cost, and a walk
of the whole expansion tree (no pruning) as the search builds it."""

from __future__ import annotations

import math

from dcmap_dist.cost.base import evaluate_mapping
from dcmap_dist.search.histories import trail_joins
from dcmap_dist.search.problem import Problem, joins_to_clusters

REL = 1e-9

SCHEMES = ("merge", "single")


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=0.0)


def total_cost(network, clusters, model) -> float:
    if not hasattr(model, "evaluate"):
        from dcmap_dist.cost.user import FunctionCost
        model = FunctionCost(model)
    return sum(c.cost for c in evaluate_mapping(network, clusters, model))


def walk_tree(problem: Problem):
    """The whole expansion tree (no pruning), as the search builds it.

    Returns (records, leaves): ``records`` holds (branch, lower bound, min complete
    descendant cost) for every branch, ``leaves`` every complete branch.
    """
    records = []
    leaves = []

    def rec(branch) -> float:
        if problem.is_complete(branch):
            leaves.append(branch)
            records.append((branch, problem.lower_bound(branch), branch.cost))
            return branch.cost
        best = math.inf
        if branch.layer_done:
            advanced = branch.advanced()
            best = rec(advanced)
        else:
            proposal = problem.next_proposal(branch)
            assert proposal >= 0, "an incomplete branch has no proposal"
            children = problem.expand(branch, proposal)
            assert children, "an incomplete branch has no children"
            for child in children:
                best = min(best, rec(child))
        records.append((branch, problem.lower_bound(branch), best))
        return best

    rec(problem.root())
    return records, leaves


def leaf_clusters(problem: Problem, leaf) -> tuple[int, ...]:
    histories = list(trail_joins(leaf.trail, {}))
    assert len(histories) == 1
    return joins_to_clusters(problem.topo, histories[0][0])
