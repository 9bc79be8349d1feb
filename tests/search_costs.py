"""Helpers for the search's tests (test_solve.py, test_problem.py, ...) and
tests/test_cli.py: seeded random networks and deterministic user cost models (loadable as ``search_costs:<name>``).

Every hash here is stable across processes (zlib.crc32 over a canonical repr),
never Python's salted ``hash()``.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from collections.abc import Hashable, Iterable

import networkx as nx

from dcmap_dist.cost.base import CostContext
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.model.network import Network
from dcmap_dist.model.topology import long_arcs


# --------------------------------------------------------------------------- random networks


def random_network(seed: int, n_min: int = 5, n_max: int = 10) -> Network:
    """A connected random DAG with ``n_min..n_max`` nodes, seeded.

    Nodes are listed in an input order shuffled against the topological order (the
    cost model reads the input order), have 1 to 4 states, and some are observed.
    Arcs are drawn between any two nodes of the hidden topological order, so many
    of them skip layers; every third graph also gets an explicit long arc
    (a chain ``a -> b -> c`` plus ``a -> c``).
    """
    rng = random.Random(seed)
    n = rng.randint(n_min, n_max)
    topo_order = [f"X{i}" for i in range(n)]  # parents before children
    edges: set[tuple[str, str]] = set()
    # connected: every node after the first attaches to an earlier one
    for i in range(1, n):
        j = rng.randrange(i)
        edges.add((topo_order[j], topo_order[i]))
    density = rng.choice([0.0, 0.1, 0.2, 0.35])
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < density:
                edges.add((topo_order[i], topo_order[j]))
    if seed % 3 == 0 and n >= 3:
        a, b, c = sorted(rng.sample(range(n), 3))
        edges |= {(topo_order[a], topo_order[b]), (topo_order[b], topo_order[c]),
                  (topo_order[a], topo_order[c])}
    # keep the arc count modest so brute force stays cheap
    states = {x: rng.randint(1, 4) for x in topo_order}
    observed = [x for x in topo_order if rng.random() < 0.12]
    input_order = topo_order[:]
    rng.shuffle(input_order)
    edge_list = sorted(edges)
    rng.shuffle(edge_list)
    return Network(f"random-{seed}", input_order, states, edge_list, observed)


def wide_network(seed: int, n_min: int = 12, n_max: int = 18) -> Network:
    """A connected random DAG of ``n_min..n_max`` nodes with wide layers, seeded: two to
    four hubs, most of them roots, each a parent of about half the nodes below it (so
    arcs skip layers, many nodes share parents, and roots sit in several layers), over
    sparse lower arcs. Names are shuffled letter-digit pairs, 1 to 4 states, some nodes
    observed: the shape of the graphs on which linking inside a layer once lost optimal
    mappings."""
    rng = random.Random(seed)
    n = rng.randint(n_min, n_max)
    names = rng.sample([f"{a}{d}" for a in "abcdeghkmpqrstuvxyz" for d in range(10)], n)
    hubs = rng.randint(2, 4)
    edges: set[tuple[str, str]] = set()
    for i in range(1, hubs):  # a hub is a root, or hangs below an earlier hub
        if rng.random() < 0.35:
            edges.add((names[rng.randrange(i)], names[i]))
    for i in range(hubs, n):  # every other node has a parent
        edges.add((names[rng.randrange(i)], names[i]))
    for i in range(hubs):
        for j in range(hubs, n):
            if rng.random() < 0.45:
                edges.add((names[i], names[j]))
    for i in range(hubs, n):
        for j in range(i + 1, n):
            if rng.random() < 0.06:
                edges.add((names[i], names[j]))
    graph = nx.Graph(list(edges))
    graph.add_nodes_from(names)
    parts = list(nx.connected_components(graph))
    for part in parts[1:]:  # join the pieces: an arc from the top of each into the first
        top = min(part, key=names.index)
        edges.add((top, rng.choice(sorted(parts[0] - set(names[:hubs])) or sorted(parts[0]))))
    states = {x: rng.randint(1, 4) for x in names}
    observed = [x for x in names if rng.random() < 0.1]
    input_order = names[:]
    rng.shuffle(input_order)
    edge_list = sorted(edges)
    rng.shuffle(edge_list)
    return Network(f"wide-{seed}", input_order, states, edge_list, observed)


def comb_network(teeth: int = 45) -> Network:
    """A root over ``teeth`` parents, each over a leaf of its own, plus a few arcs from the
    root to leaves: layer 1 holds more open components than a machine word has bits."""
    parents = [f"P{i}" for i in range(teeth)]
    leaves = [f"L{i}" for i in range(teeth)]
    edges = [("R", p) for p in parents] + list(zip(parents, leaves)) + [("R", leaves[i]) for i in range(0, teeth, 7)]
    states = {x: 2 + i % 2 for i, x in enumerate(["R", *parents, *leaves])}
    return Network(f"comb-{teeth}", ["R", *parents, *leaves], states, edges, [])


def has_long_arc(network: Network) -> bool:
    return bool(long_arcs(network))


# --------------------------------------------------------------------------- cost models


def _stable(data: object) -> int:
    return zlib.crc32(repr(data).encode())


def _message_repr(message: Hashable) -> object:
    """A canonical, process-independent form of a message."""
    if isinstance(message, (frozenset, set)):
        return ("set", tuple(sorted(repr(m) for m in message)))
    return ("val", repr(message))


def context_key(ctx: CostContext) -> tuple:
    """Everything SPEC section 3 lets a cost read, in a canonical form."""
    return (
        tuple(sorted(ctx.nodes)),
        ctx.layer,
        tuple(
            (tuple(sorted(c.nodes)), c.layer, bool(c.same_cluster), _message_repr(c.message))
            for c in sorted(ctx.children, key=lambda c: (c.layer, sorted(c.nodes)))
        ),
    )


def hash_cost(ctx: CostContext) -> tuple[float, tuple]:
    """An arbitrary positive cost in [1, 100] depending on the whole context; the
    message is a coarse hash (3 values), not the node set, so different histories
    often pass the same message (exercising the search's linking)."""
    h = _stable(("cost", context_key(ctx)))
    cost = 1.0 + (h % 99001) / 1000.0  # 1.000 .. 100.000
    return cost, ("m", _stable(("msg", context_key(ctx))) % 3)


def tie_cost(ctx: CostContext) -> tuple[int, int]:
    """Small integer costs 1..3 depending on the whole context, so many mappings tie;
    the message is one bit of a hash."""
    h = _stable(("tie", context_key(ctx)))
    return 1 + h % 3, _stable(("tiemsg", context_key(ctx))) % 2


def same_cluster_cost(ctx: CostContext) -> float:
    """A cost that rewards merging: 1 + 0.5 per node + 2 per child cluster-layer in
    another cluster (returns a bare cost, so the message is the node set)."""
    return 1.0 + 0.5 * len(ctx.nodes) + 2.0 * sum(1 for c in ctx.children if not c.same_cluster)


@dataclasses.dataclass(frozen=True)
class Summary:
    """A message of the user's own class: hashable, pickled (not marshalled) between
    workers and into checkpoints."""

    nodes: frozenset
    weight: float


def _message_weight(message: Hashable) -> float:
    """What :func:`varied_cost` reads back from a child's message, whatever its kind."""
    if isinstance(message, Summary):
        return message.weight + len(message.nodes)
    if isinstance(message, float):
        return message
    if isinstance(message, str):
        return len(message) / 4
    if isinstance(message, bytes):
        return message[0] / 64
    return _message_weight(message[1]) + len(message[2]) / 2  # ("t", inner, frozenset)


def _canonical(message: Hashable) -> object:
    """A form of a :func:`varied_cost` message that prints the same in every process (a
    frozenset's order, and so its repr, depends on the process's string hashes)."""
    if isinstance(message, Summary):
        return ("summary", _canonical(message.nodes), message.weight)
    if isinstance(message, frozenset):
        return ("set", sorted(message))
    if isinstance(message, tuple):
        return tuple(_canonical(item) for item in message)
    return message


def varied_cost(ctx: CostContext) -> tuple[float, Hashable]:
    """A cost read from the children's messages, which are of five kinds, none an int: a
    float, a string, bytes, a nested tuple holding a frozenset, and a :class:`Summary`
    (picked by a hash of the context). Costs are quarters, so mappings tie."""
    h = _stable(("varied", sorted(ctx.nodes), ctx.layer,
                 sorted((sorted(c.nodes), c.layer, c.same_cluster, repr(_canonical(c.message)))
                        for c in ctx.children)))
    cost = 1.0 + (h % 4) / 4 + sum(_message_weight(c.message) * (0.5 if c.same_cluster else 1.0)
                                   for c in ctx.children)
    weight = (h >> 4) % 3 / 4
    kind = (h >> 8) % 5
    if kind == 0:
        return cost, weight
    if kind == 1:
        return cost, "x" * int(4 * weight)
    if kind == 2:
        return cost, bytes([int(64 * weight), 7])
    if kind == 3:
        return cost, ("t", weight, frozenset(ctx.nodes))
    return cost, Summary(frozenset(ctx.nodes), weight)


COST_MODELS = {
    "dcmap-cpt": DcmapCost("cpt"),
    "dcmap-paper": DcmapCost("paper"),
    "hash": hash_cost,
    "tie": tie_cost,
    "varied": varied_cost,
}


def partition(clusters: Iterable[Iterable[str]]) -> frozenset[frozenset[str]]:
    return frozenset(frozenset(c) for c in clusters)


def trace_problem(network: Network, result, cost=DcmapCost(), scheme: str = "merge",
                  mappings_lost: bool = False) -> str | None:
    """What is wrong with a result's anytime record, or None: every traced improvement
    must carry a feasible mapping that costs what the trace says (checked with
    ``check_mapping`` and ``evaluate_mapping``, not the search's own code), the last
    at the best cost; every lower bound sample must be at most the best cost. With
    ``mappings_lost``, an improvement may come without its mapping (a distributed
    search lost its records with a worker)."""
    from dcmap_dist.cost.base import evaluate_mapping
    from dcmap_dist.cost.user import FunctionCost
    from dcmap_dist.model.mappings import check_mapping

    model = cost if hasattr(cost, "evaluate") else FunctionCost(cost)
    tolerance = 1e-9 * max(1.0, abs(result.optimal_cost))
    for point in result.trace:
        if "clusters" not in point:
            if mappings_lost:
                continue
            return f"trace point at iteration {point['iteration']} has no mapping"
        check_mapping(network, point["clusters"], scheme)
        total = sum(c.cost for c in evaluate_mapping(network, point["clusters"], model))
        if abs(total - point["cost"]) > tolerance * 10:
            return f"trace point at iteration {point['iteration']}: mapping costs {total}, trace says {point['cost']}"
    if not result.trace or abs(result.trace[-1]["cost"] - result.optimal_cost) > tolerance:
        return "the trace does not end at the best cost"
    for sample in result.bounds:
        if sample["lower_bound"] > result.optimal_cost + tolerance:
            return f"bound sample {sample} above the best cost {result.optimal_cost}"
    return None
