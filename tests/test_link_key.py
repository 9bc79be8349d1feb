"""The lean dominance key is exact, and each of its parts is needed.

Weakening the key (dropping the pairwise merge blocks, or the reachable outside
ancestors) must make the search disagree with brute force on some seeded random graph;
the real key must agree on all of them. This shows the exactness tests can fail.
"""

from __future__ import annotations

import zlib

import pytest

from dcmap_dist.cost import DcmapCost, FunctionCost
from dcmap_dist.engine import Problem
from dcmap_dist.network import Network
from dcmap_dist.solve import solve
from search_costs import random_network


def small_int_cost(ctx):
    """Costs 1..3 from a stable hash of the context: many mappings tie."""
    text = repr((sorted(ctx.nodes), [(sorted(c.nodes), c.same_cluster) for c in ctx.children]))
    return 1 + zlib.crc32(text.encode()) % 3


MODELS = [DcmapCost("cpt"), FunctionCost(small_int_cost)]


def optimal_sets(network: Network, model, scheme: str, method: str) -> tuple[float, set]:
    result = solve(network, model, scheme, method)
    return round(result.optimal_cost, 6), {frozenset(map(frozenset, s.clusters)) for s in result.solutions}


def count_disagreements(graphs: int, seed: int) -> int:
    wrong = 0
    for k in range(graphs):
        network = random_network(seed + k)
        for model in MODELS:
            for scheme in ("merge", "single"):
                if optimal_sets(network, model, scheme, "dcmap") != optimal_sets(network, model, scheme, "brute"):
                    wrong += 1
    return wrong


def test_lean_key_agrees_with_brute_force():
    assert count_disagreements(40, seed=2024) == 0


@pytest.mark.parametrize("weakening", ["no merge blocks", "no outside ancestors"])
def test_weakened_lean_key_is_caught(monkeypatch, weakening):
    real = Problem.link_key

    def weakened(self, branch):
        layer, parts, blocked = real(self, branch)
        if weakening == "no merge blocks":
            return layer, parts, ()
        return layer, tuple((frontier, 0) for frontier, _ in parts), blocked

    monkeypatch.setattr(Problem, "link_key", weakened)
    assert count_disagreements(40, seed=2024) > 0
