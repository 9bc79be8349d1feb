"""Tests of dcmap_dist/cost/base.py: evaluate_mapping (costs invariant to the labels and
listing order of the clusters, for the dcmap model and for a user cost that reads its
children in the order given), and checked_cost with user_cost_limit (a user's costs
whose total would pass the float range are refused)."""

from __future__ import annotations

import math
import random

import pytest
from cost_helpers import OPTIMAL, total
from search_costs import random_network

from dcmap_dist.cost.base import CostContext, CostError, evaluate_mapping, user_cost_limit
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import FunctionCost, load_cost
from dcmap_dist.model.mappings import enumerate_mappings
from dcmap_dist.model.topology import Topology


# --------------------------------------------------------------------------- evaluate_mapping on random graphs


def random_partition(rng: random.Random, nodes) -> list[list[str]]:
    k = rng.randint(1, len(nodes))
    clusters: list[list[str]] = [[] for _ in range(k)]
    for x in nodes:
        clusters[rng.randrange(k)].append(x)
    return [c for c in clusters if c]


def order_sensitive(ctx: CostContext) -> float:
    """A user cost that reads the children in the order it is given them."""
    value = 1.0 + len(ctx.nodes) * (ctx.layer + 1)
    for i, child in enumerate(ctx.children):
        value += (i + 1) * (len(child.nodes) + 2 * child.same_cluster + 0.1 * child.layer)
    return value


def test_costs_are_invariant_to_cluster_labels():
    rng = random.Random(7)
    models = [DcmapCost(), DcmapCost(order="paper"), FunctionCost(order_sensitive)]
    checked = 0
    for g in range(25):
        network = random_network(7000 + g, 4, 8)
        topo = Topology(network)
        mappings = [[sorted(topo.names(c)) for c in m] for m in enumerate_mappings(network)]
        sample = rng.sample(mappings, min(8, len(mappings)))
        sample += [random_partition(rng, network.nodes) for _ in range(4)]
        for clusters in sample:
            for model in models:
                reference = evaluate_mapping(network, clusters, model)
                for _ in range(3):
                    shuffled = [rng.sample(c, len(c)) for c in clusters]
                    rng.shuffle(shuffled)
                    got = evaluate_mapping(network, shuffled, model)
                    assert got == reference
                    assert sum(c.cost for c in got) == sum(c.cost for c in reference)
                    checked += 1
    assert checked > 500


# --------------------------------------------------------------------------- checked_cost and user_cost_limit


def test_user_costs_whose_total_would_pass_the_float_range_are_refused(paper):
    # 7 cluster-layers of 1e308 each sum to inf: before, the solve said "cost inf" and
    # then failed to write its JSON; every method now stops at the first such cost
    from dcmap_dist.solve import solve

    limit = user_cost_limit(paper)
    assert limit == pytest.approx(1.7976931348623157e308 / 8) and 7 * limit < math.inf
    assert total(paper, OPTIMAL[0], load_cost(lambda ctx: limit)) == pytest.approx(7 * limit)
    for method in ("dcmap", "bfs", "brute"):
        with pytest.raises(CostError, match=r"^cost model huge: cost of cluster-layer \[.*\) is 1e\+308, more than "
                                            r"2\.25e\+307: a mapping of the 7 nodes of 'paper-example' adds up to 7 "
                                            r"costs, and their total must stay within the floating-point range"):
            solve(paper, FunctionCost(lambda ctx: 1e308, name="huge"), method=method)
