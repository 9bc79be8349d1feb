"""Layers, the paper's same-cluster matrix ``S``, the search-space size ``eta``.

:class:`Topology` holds the index-based facts (bitmasks over node positions in
input order) that feasibility checks and the search read in their inner loops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .network import Network

if TYPE_CHECKING:  # numpy is imported by the one function that needs it, not by the search
    import numpy as np

__all__ = ["Memo", "RecentMemo", "Topology", "added", "bits", "eta", "layer_nodes", "layers", "long_arcs",
           "same_cluster_matrix", "scientific", "union_of"]


def layers(network: Network) -> dict[str, int]:
    """Layer of every node (paper Algorithm 1): arcs on the longest path down to a leaf."""
    cached = network.derived.get("layers")
    if cached is None:
        layer: dict[str, int] = {}
        for x in reversed(_topological_order(network)):
            kids = network.children[x]
            layer[x] = 1 + max(layer[c] for c in kids) if kids else 0
        cached = network.derived["layers"] = {x: layer[x] for x in network.nodes}
    return dict(cached)


def _topological_order(network: Network) -> list[str]:
    """Parents before children; ties by input order (Kahn's algorithm)."""
    indegree = {x: len(network.parents[x]) for x in network.nodes}
    ready = [x for x in network.nodes if indegree[x] == 0]
    order: list[str] = []
    while ready:
        x = ready.pop(0)
        order.append(x)
        for c in network.children[x]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    return order


def layer_nodes(network: Network) -> list[tuple[str, ...]]:
    """The nodes of each layer, ``0 .. l_max``, in input order."""
    layer = layers(network)
    result: list[list[str]] = [[] for _ in range(max(layer.values()) + 1)]
    for x in network.nodes:
        result[layer[x]].append(x)
    return [tuple(nodes) for nodes in result]


def long_arcs(network: Network) -> list[tuple[str, str]]:
    """Arcs whose parent is more than one layer above its child."""
    layer = layers(network)
    return [(u, v) for u, v in network.edges if layer[u] - layer[v] > 1]


def eta(network: Network) -> int:
    """The paper's search-space size: product over non-leaf nodes of (children + 1)."""
    return math.prod(len(network.children[x]) + 1 for x in network.nodes if network.children[x])


def scientific(number: int, digits: int = 4) -> str:
    """``number`` in scientific notation without going through float (eta can pass 1e308)."""
    if number < 10**digits:
        return str(number)
    return f"{Decimal(number):.{digits - 1}e}"


def same_cluster_matrix(network: Network) -> np.ndarray:
    """The paper's matrix ``S`` (Algorithm 2), rows and columns in input order.

    ``S[i, j] = 1`` when node ``j`` is a parent of ``i`` or a descendant of one of
    ``i``'s parents, and either the only directed path from ``j`` to ``i`` is the
    arc ``j -> i``, or ``j`` lies in the same layer as ``i``.
    """
    import numpy as np

    topo = Topology(network)
    n = topo.n
    matrix = np.zeros((n, n), dtype=np.int8)
    for i in range(n):
        reach = 0
        for p in bits(topo.parents[i]):
            reach |= (1 << p) | topo.desc[p]
        for j in bits(reach & ~(1 << i)):
            direct_only = (topo.parents[i] >> j) & 1 and not (topo.desc[j] & topo.anc[i])
            if direct_only or topo.layer[j] == topo.layer[i]:
                matrix[i, j] = 1
    return matrix


def bits(mask: int) -> list[int]:
    """Positions of the set bits of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def union_of(table: list[int], mask: int) -> int:
    """The union of ``table[i]`` over the nodes ``i`` of ``mask``."""
    got = 0
    for i in bits(mask):
        got |= table[i]
    return got


def added(values: Iterable[float]) -> float:
    """The sum of ``values`` added one by one, left to right, from 0, as the native engine's
    core adds them and as ``sum`` did before Python 3.12. Since 3.12, ``sum`` adds floats
    with a compensation (Neumaier's) that can change the last bit: the cost model and the
    bounds sum with this, so that both engines make the same floats on every Python."""
    total = 0
    for value in values:
        total += value
    return total


class Memo(dict):
    """A dict that fills a missing key with ``compute(key)``: a hit costs one lookup."""

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.compute(key)
        return value


class RecentMemo:
    """A memo of what was asked recently: ``lookup(key)`` returns the value remembered
    for ``key``, else ``compute(key)``, then remembered. It keeps two generations: a key
    found in the older is copied to the newer; when the newer holds ``kept`` keys it
    becomes the older, and what the older still held is forgotten (computed again if it
    is asked for again). Most repeats of a key come soon after it, so this keeps nearly
    every hit of a memo of every key, in a bounded room. ``compute`` never returns None."""

    __slots__ = ("compute", "kept", "newer", "older")

    def __init__(self, compute: Callable[[Any], Any], kept: int) -> None:
        self.compute = compute
        self.kept = kept
        self.newer: dict = {}
        self.older: dict = {}

    def lookup(self, key: Any) -> Any:
        """The value remembered for ``key``, or ``compute(key)`` (see the class)."""
        got = self.newer.get(key)
        if got is None:
            got = self.older.get(key)
            if got is None:
                got = self.compute(key)
            self.newer[key] = got
            if len(self.newer) >= self.kept:
                self.older = self.newer
                self.newer = {}
        return got

    def __len__(self) -> int:
        return len(self.newer) + len(self.older)


class Topology:
    """Index-based structure of a network: node ``i`` is ``network.nodes[i]``.

    Node sets are ints used as bitmasks.
    """

    def __init__(self, network: Network) -> None:
        self.network = network
        self._names: dict[int, frozenset[str]] = {}
        self.n = n = len(network.nodes)
        self.all_nodes = (1 << n) - 1  # mask of every node
        index = network.index
        layer_of = layers(network)
        self.layer: list[int] = [layer_of[x] for x in network.nodes]
        self.l_max = max(self.layer)
        self.parents = [sum(1 << index[p] for p in network.parents[x]) for x in network.nodes]
        self.children = [sum(1 << index[c] for c in network.children[x]) for x in network.nodes]
        self.neighbours = [self.parents[i] | self.children[i] for i in range(n)]
        self.layer_mask = [0] * (self.l_max + 1)
        for i, l in enumerate(self.layer):
            self.layer_mask[l] |= 1 << i
        # above[l]: nodes in layers > l; upto[l]: nodes in layers <= l
        self.above = [0] * (self.l_max + 1)
        self.upto = [0] * (self.l_max + 1)
        acc = 0
        for l in range(self.l_max + 1):
            acc |= self.layer_mask[l]
            self.upto[l] = acc
            self.above[l] = ((1 << n) - 1) & ~acc
        # descendants / ancestors, computed layer by layer
        self.desc = [0] * n
        for l in range(self.l_max + 1):
            for i in bits(self.layer_mask[l]):
                d = 0
                for c in bits(self.children[i]):
                    d |= (1 << c) | self.desc[c]
                self.desc[i] = d
        self.anc = [0] * n
        for l in range(self.l_max, -1, -1):
            for i in bits(self.layer_mask[l]):
                a = 0
                for p in bits(self.parents[i]):
                    a |= (1 << p) | self.anc[p]
                self.anc[i] = a

    def names(self, mask: int) -> frozenset[str]:
        """The node names of a mask (memoised: the search asks for the same sets often)."""
        got = self._names.get(mask)
        if got is None:
            nodes = self.network.nodes
            got = self._names[mask] = frozenset(nodes[i] for i in bits(mask))
        return got

    def mask(self, names) -> int:
        """The mask of an iterable of node names."""
        index = self.network.index
        return sum(1 << index[x] for x in set(names))

    def component(self, start: int, within: int) -> int:
        """The weakly connected component of node ``start`` inside node set ``within``."""
        comp = frontier = 1 << start
        while frontier:
            grow = 0
            for i in bits(frontier):
                grow |= self.neighbours[i]
            frontier = grow & within & ~comp
            comp |= frontier
        return comp

    def is_connected(self, mask: int) -> bool:
        """True when the nodes of ``mask`` are weakly connected through arcs among themselves."""
        if not mask:
            return True
        return self.component((mask & -mask).bit_length() - 1, mask) == mask

    def is_convex(self, mask: int) -> bool:
        """Contiguity (paper Definition 2): no directed path between members leaves the set."""
        down = up = 0
        for i in bits(mask):
            down |= self.desc[i]
            up |= self.anc[i]
        return not (down & up & ~mask)
