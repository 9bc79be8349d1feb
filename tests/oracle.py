"""An exact method that shares no code with the search: a layered dynamic programme.

It knows only SPEC sections 2 and 3 and the cost model's ``evaluate``. Topology comes
from networkx; nothing is imported from the engine (``engine``, ``combinations``,
``structure``, ``linking``, ``bounds``), so a flaw there cannot hide here.

The programme walks the layers from the leaves up. A *piece* is a connected part of a
cluster restricted to the layers done so far. A layer is built node by node (input
order): each node starts a piece of its own or joins pieces that hold a child of it
(merge: any non-empty set of them, the old pieces among them having no arc and no
layer in common, the union contiguous; single: one). Once the layer is complete, each
piece extended at it has one new cluster-layer, whose cost the model gives from its
children. States are merged by SPEC section 5's known-sound key (the full membership
of every piece holding a node with a parent above, and the cluster-layers holding such
a node, with their messages). Every path to the end with the least cost is a distinct
way to build an optimal mapping; several ways may build one partition, so the
partitions are collected as a set. Each is then checked against SPEC section 2
directly (:func:`infeasibility`).

Exact and cheap up to about 18 nodes; tests compare it with brute force below that.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import networkx as nx

from dcmap_dist.cost.base import ChildClusterLayer, CostContext
from dcmap_dist.model.network import Network

TOLERANCE = 1e-9


def _within(a: float, b: float) -> bool:
    return a <= b + TOLERANCE * abs(b)


class _Graph:
    """The facts the programme reads, as masks over the nodes' input positions."""

    def __init__(self, network: Network) -> None:
        graph = nx.DiGraph()
        graph.add_nodes_from(network.nodes)
        graph.add_edges_from(network.edges)
        self.names = list(network.nodes)
        pos = {x: i for i, x in enumerate(self.names)}
        self.n = len(self.names)
        self.layer = [0] * self.n
        for x in reversed(list(nx.topological_sort(graph))):
            self.layer[pos[x]] = max((self.layer[pos[c]] + 1 for c in graph.successors(x)), default=0)
        self.children = [sum(1 << pos[c] for c in graph.successors(x)) for x in self.names]
        self.parents = [sum(1 << pos[p] for p in graph.predecessors(x)) for x in self.names]
        self.below = [sum(1 << pos[d] for d in nx.descendants(graph, x)) for x in self.names]
        self.above = [sum(1 << pos[a] for a in nx.ancestors(graph, x)) for x in self.names]
        self.top = max(self.layer)
        self.at = [[i for i in range(self.n) if self.layer[i] == l] for l in range(self.top + 1)]
        self.higher = [sum(1 << i for i in range(self.n) if self.layer[i] > l) for l in range(self.top + 1)]

        self._facts: dict[int, tuple[int, int, int, int]] = {}
        self._apart: dict[tuple[int, int], bool] = {}
        self._contiguous: dict[int, bool] = {}
        self._parents: dict[int, int] = {}

    def nodes(self, mask: int) -> list[int]:
        out = []
        while mask:
            low = mask & -mask
            out.append(low.bit_length() - 1)
            mask ^= low
        return out

    def union(self, table: list[int], mask: int) -> int:
        out = 0
        for i in self.nodes(mask):
            out |= table[i]
        return out

    def parents_of(self, mask: int) -> int:
        got = self._parents.get(mask)
        if got is None:
            got = self._parents[mask] = self.union(self.parents, mask)
        return got

    def facts(self, mask: int) -> tuple[int, int, int, int]:
        """Layers used, children, descendants and ancestors of a node set (memoised)."""
        got = self._facts.get(mask)
        if got is None:
            layers = 0
            for i in self.nodes(mask):
                layers |= 1 << self.layer[i]
            got = self._facts[mask] = (layers, self.union(self.children, mask), self.union(self.below, mask),
                                       self.union(self.above, mask))
        return got

    def contiguous(self, mask: int) -> bool:
        """No node outside ``mask`` lies on a directed path between two members."""
        got = self._contiguous.get(mask)
        if got is None:
            _, _, down, up = self.facts(mask)
            got = self._contiguous[mask] = not (down & up & ~mask)
        return got

    def apart(self, a: int, b: int) -> bool:
        """Two pieces that may be merged: no layer in common, no arc between them."""
        got = self._apart.get((a, b))
        if got is None:
            layers_a, kids_a, _, _ = self.facts(a)
            layers_b, kids_b, _, _ = self.facts(b)
            got = self._apart[(a, b)] = not (layers_a & layers_b or kids_a & b or kids_b & a)
        return got

    def names_of(self, mask: int) -> frozenset[str]:
        return frozenset(self.names[i] for i in self.nodes(mask))


def infeasibility(network: Network, clusters: list[frozenset[str]], scheme: str) -> str | None:
    """Why a partition breaks SPEC section 2, or None. Read straight from the definitions."""
    seen = [x for c in clusters for x in c]
    if sorted(seen) != sorted(network.nodes):
        return "not a partition of the nodes"
    for cluster in clusters:
        if problem := cluster_infeasibility(network, frozenset(cluster), scheme):
            return problem
    return None


@functools.lru_cache(maxsize=1 << 16)
def cluster_infeasibility(network: Network, cluster: frozenset[str], scheme: str) -> str | None:
    """Why one cluster breaks SPEC section 2 (a, b, c; under ``single``, connected in
    every prefix of layers), or None."""
    graph = network.digraph()
    layer = _Graph(network).layer
    pos = {x: i for i, x in enumerate(network.nodes)}
    if not nx.is_weakly_connected(graph.subgraph(cluster)):
        return f"{sorted(cluster)} is not weakly connected"
    for z in set(graph) - cluster:
        if nx.ancestors(graph, z) & cluster and nx.descendants(graph, z) & cluster:
            return f"{sorted(cluster)} is not contiguous (through {z})"
    for j in sorted({layer[pos[x]] for x in cluster}):
        low = graph.subgraph([x for x in cluster if layer[pos[x]] <= j])
        at_j = {x for x in cluster if layer[pos[x]] == j}
        parts = list(nx.weakly_connected_components(low))
        if scheme == "single" and len(parts) > 1:
            return f"{sorted(cluster)}: its members in layers <= {j} are not connected"
        if not any(at_j <= part for part in parts):
            return f"{sorted(cluster)} is not layer-connected at layer {j}"
    return None


def optimal_mappings(network: Network, model: Any, scheme: str = "merge",
                     ceiling: float = math.inf) -> tuple[float, set[frozenset]]:
    """The least cost over the feasible mappings of ``network`` (connected or not) under
    ``scheme``, and every partition that reaches it (frozensets of frozensets of names).

    With a ``ceiling``, partial mappings that already cost more are dropped (costs are
    positive): the answer is the same whenever some mapping costs at most the ceiling,
    and ``(inf, set())`` otherwise. A test may pass the search's own optimum: a search
    that missed a cheaper mapping is still caught, and one that claims an impossible
    cost finds nothing here."""
    g = _Graph(network)
    evaluate: Callable[[CostContext], tuple[float, Any]] = model.evaluate
    costs: dict[tuple, tuple[float, Any]] = {}

    def cluster_layer(nodes: int, kids: tuple) -> tuple[float, Any]:
        got = costs.get((nodes, kids))
        if got is None:
            children = sorted((ChildClusterLayer(g.names_of(m), g.layer[g.nodes(m)[0]], same, msg)
                               for m, same, msg in kids), key=lambda c: (c.layer, sorted(c.nodes)))
            ctx = CostContext(g.names_of(nodes), g.layer[g.nodes(nodes)[0]], network, tuple(children))
            value, message = evaluate(ctx)
            got = costs[(nodes, kids)] = (float(value), message)
        return got

    def close(pieces, cls, l):
        """What layer ``l`` complete passes on: pieces and cluster-layers still read."""
        up = g.higher[l]
        return (l, frozenset(p for p in pieces if g.parents_of(p) & up),
                frozenset(c for c in cls if g.parents_of(c[0]) & up))

    # layer 0: every leaf is its own piece and cluster-layer
    pieces, cls, cost = set(), set(), 0.0
    for i in g.at[0]:
        c, msg = cluster_layer(1 << i, ())
        pieces.add(1 << i)
        cls.add((1 << i, msg))
        cost += c
    start = close(pieces, cls, 0)
    # boundary state (layer, pieces, cluster-layers) -> [best cost, [(previous state, unions formed)]]
    table: dict[tuple, list] = {start: [cost, []]}
    frontier = [start]
    for l in range(1, g.top + 1):
        following: dict[tuple, list] = {}
        joinable = g.union(g.children, sum(1 << i for i in g.at[l]))
        placements: dict[frozenset, list] = {}  # the pieces a layer node can join -> ways to place the layer
        for state in frontier:
            best = table[state][0]
            near = frozenset(p for p in state[1] if p & joinable)
            if near not in placements:
                placements[near] = _layer_results(g, near, g.at[l], scheme)
            for blocks, untouched in placements[near]:
                delta, new_cls, new_pieces, unions = 0.0, set(state[2]), set(untouched | (state[1] - near)), []
                for joined, olds in blocks:
                    union = joined
                    for p in olds:
                        union |= p
                    kids = g.facts(joined)[1]
                    c, msg = cluster_layer(joined, tuple(sorted((m, bool(m & union), msg)
                                                                for m, msg in state[2] if m & kids)))
                    delta += c
                    new_cls.add((joined, msg))
                    new_pieces.add(union)
                    unions.append(union)
                nxt = close(new_pieces, new_cls, l)
                total = best + delta
                if not _within(total, ceiling):
                    continue
                entry = following.get(nxt)
                if entry is None:
                    following[nxt] = [total, [(state, tuple(unions))]]
                elif not _within(entry[0], total):  # cheaper
                    following[nxt] = [total, [(state, tuple(unions))]]
                elif _within(total, entry[0]):
                    entry[1].append((state, tuple(unions)))
        table.update(following)
        frontier = list(following)
    best = min((table[s][0] for s in frontier), default=math.inf)
    found: set[frozenset] = set()
    for end in frontier:
        if _within(table[end][0], best):
            for unions in _paths(table, end):
                found.add(_partition(g, unions))
    return best, found


def _layer_results(g: _Graph, pieces: frozenset, layer_nodes: list[int], scheme: str):
    """Every distinct way to place one layer: (blocks, untouched pieces), a block being
    (its new nodes, the old pieces it merges)."""
    partials = {(frozenset(pieces), frozenset())}
    for v in layer_nodes:
        kids = g.children[v]
        grown = set()
        for untouched, blocks in partials:
            grown.add((untouched, blocks | {(1 << v, frozenset())}))  # a piece of its own
            # what v can join: an old piece holding a child, or a block of this layer
            # whose old pieces hold one (as (new nodes, old pieces))
            items = [(0, frozenset([p])) for p in untouched if p & kids]
            items += [b for b in blocks if any(p & kids for p in b[1])]
            if scheme == "single":
                choices = [[item] for item in items if len(item[1]) == 1]
            else:
                choices = _apart_sets(g, items)
            for chosen in choices:
                joined, merged = 1 << v, frozenset()
                for new, olds in chosen:
                    joined |= new
                    merged |= olds
                union = joined
                for p in merged:
                    union |= p
                if not g.contiguous(union):
                    continue
                taken = {p for new, olds in chosen if not new for p in olds}
                grown.add((untouched - taken, (blocks - set(chosen)) | {(joined, merged)}))
        partials = grown
    return [(blocks, untouched) for untouched, blocks in partials]


def _apart_sets(g: _Graph, items: list) -> list[list]:
    """Every non-empty subset of ``items`` ((new nodes, old pieces) pairs) whose old
    pieces are pairwise apart (:meth:`_Graph.apart`)."""
    found: list[list] = []

    def grow(start: int, chosen: list, olds: list[int]) -> None:
        for k in range(start, len(items)):
            extra = list(items[k][1])
            if all(g.apart(a, b) for a in olds for b in extra):
                chosen.append(items[k])
                found.append(list(chosen))
                grow(k + 1, chosen, olds + extra)
                chosen.pop()

    grow(0, [], [])
    return found


def _paths(table: dict, state: tuple):
    """Every list of unions along a least-cost path from the start to ``state``."""
    stack = [(state, ())]
    while stack:
        here, unions = stack.pop()
        previous = table[here][1]
        if not previous:
            yield unions
        for before, formed in previous:
            stack.append((before, formed + unions))


def _partition(g: _Graph, unions: tuple) -> frozenset:
    owner = list(range(g.n))

    def find(i: int) -> int:
        while owner[i] != i:
            owner[i] = owner[owner[i]]
            i = owner[i]
        return i

    for union in unions:
        members = g.nodes(union)
        for j in members[1:]:
            owner[find(j)] = find(members[0])
    groups: dict[int, set[str]] = {}
    for i in range(g.n):
        groups.setdefault(find(i), set()).add(g.names[i])
    return frozenset(frozenset(c) for c in groups.values())
