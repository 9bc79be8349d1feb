"""The lean dominance key is exact, and each of its parts is needed.

Weakening the key (dropping the pairwise merge blocks, or the reachable outside
ancestors) must make the search disagree with brute force on some seeded random graph;
the real key must agree on all of them. This shows the exactness tests can fail.
"""

from __future__ import annotations

import random
import zlib

import networkx as nx
import pytest

from dcmap_dist.cost import DcmapCost, FunctionCost
from dcmap_dist.engine import Problem
from dcmap_dist.network import Network
from dcmap_dist.solve import solve


def random_network(rng: random.Random, n: int) -> Network:
    """A connected random DAG over ``n`` nodes with 1-4 states (names shuffled)."""
    density = rng.choice([0.25, 0.35, 0.5])
    while True:
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
        graph = nx.DiGraph(edges)
        graph.add_nodes_from(range(n))
        if nx.is_weakly_connected(graph):
            break
    names = [f"n{i}" for i in range(n)]
    rng.shuffle(names)
    return Network("random", names, {x: rng.randint(1, 4) for x in names},
                   [(names[i], names[j]) for i, j in edges])


def small_int_cost(ctx):
    """Costs 1..3 from a stable hash of the context: many mappings tie."""
    text = repr((sorted(ctx.nodes), [(sorted(c.nodes), c.same_cluster) for c in ctx.children]))
    return 1 + zlib.crc32(text.encode()) % 3


MODELS = [DcmapCost("cpt"), FunctionCost(small_int_cost)]


def optimal_sets(network: Network, model, scheme: str, method: str) -> tuple[float, set]:
    result = solve(network, model, scheme, method)
    return round(result.optimal_cost, 6), {frozenset(map(frozenset, s.clusters)) for s in result.solutions}


def count_disagreements(graphs: int, seed: int) -> int:
    rng = random.Random(seed)
    wrong = 0
    for _ in range(graphs):
        network = random_network(rng, rng.randint(5, 10))
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
