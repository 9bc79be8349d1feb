"""The admissible lower bound on the cost still to come (docs/cost-model.md, section 4).

A branch at ``layer`` has placed every node below that layer, and the nodes
``assigned`` of it (``assigned == -1``: all of it). The cost of the cluster-layers
still to be built is at least the sum of five parts, each from an optional hook of
the cost model (a model without a hook contributes nothing for it):

* ``node_lower_bounds(graph)``: every unplaced node's own terms;
* ``absorption_lower_bound(graph, absorber, children)`` (or, per child,
  ``message_lower_bound(graph, nodes, message)``): the absorptions of the placed
  cluster-layers' messages. Each placed cluster-layer with unplaced parents is given,
  for every layer that holds such parents, to the first of them (in input order): that
  node's cluster-layer absorbs its message. Each layer holds a different absorber, and
  two children given to one node are two absorptions by one cluster-layer;
* ``grouping_trade_offs(graph, nodes, message, parents, layer_nodes)``: for a placed
  cluster-layer with two or more unplaced parents in the next layer to build, what that
  layer pays for holding them apart (more absorptions, its own) or together (larger
  eliminations, which those of other placed cluster-layers may share), as pairs over the
  ways to group them, combined over the frontier by :func:`least_grouping`; or a model's
  ``grouping_lower_bound``, one value per placed cluster-layer: the largest over the frontier;
* ``layer_lower_bound(graph, children, layer_nodes)``: what the next layer's cluster-layers
  pay for the placed cluster-layers with unplaced parents there (their absorptions and
  the eliminations of those parents), split the cheapest way; where it is larger, it
  stands in for the two parts above in that layer (the absorptions given to its nodes
  and the groupings);
* ``absorber_lower_bounds(graph)``: for every unplaced node, once per layer that holds
  unplaced children of it (its cluster-layer absorbs a message from each such layer);
* ``absorbed_lower_bounds(graph)``: for every layer with unplaced nodes, the largest
  value among them (what absorbing the messages of that layer's new cluster-layers
  costs beyond the other parts); or, where it is larger, the sum of
  ``additive_absorbed_lower_bounds(graph)`` over a set of them whose parents (those the
  hook names) are spread enough: every subset ``S`` of the set has
  ``sum over S of |parents(y)| <= |union over S of parents(y)|``, ``|X|`` the product of
  the cards of ``X`` (taken greedily, largest values first: :meth:`LowerBound.additive_part`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

from ..model.network import Network
from ..model.topology import Memo, RecentMemo, Topology, added, bits

__all__ = ["LowerBound"]

# bounds remembered in each of the memo's two generations (LowerBound.known)
KNOWN_KEPT = 4096

# the additive absorbed part: at most this many nodes are added up per layer, each whose
# parents' size is below ADDITIVE_SIZES (so that any sum of sizes stays below 2^47, where
# the native core's saturating sizes, exact up to 2^63, compare as Python's ints do)
MOST_ADDED = 10
ADDITIVE_SIZES = 1 << 43


class LowerBound:
    """The bound of a branch from its ``layer``, ``assigned`` and frontier ``frontier``:
    ``lookup(layer, assigned, frontier)``. ``model`` None: the bound is 0 (no pruning).

    Its per-node and per-layer parts are public, for the native core (search/core.py's
    ModelTables): ``own`` and ``absorbed``, each node's parts; ``absorbing``, per layer
    ``(children there, charge)`` of each absorber with children there; ``above``, per
    layer the bound of every layer above it, all unplaced."""

    def __init__(self, topo: Topology, graph: Network, model: Any | None,
                 parents_of: Memo, message: Callable[[Hashable], Hashable]) -> None:
        self.topo = topo
        self.own = _per_node(model, "node_lower_bounds", graph, topo)
        self.absorbed = _per_node(model, "absorbed_lower_bounds", graph, topo)
        absorber = _per_node(model, "absorber_lower_bounds", graph, topo)
        # additive[i], spread[i]: node i's additive absorbed part and the parents (a mask)
        # the hook names for it; cards[i], node i's card (the sizes of those parents)
        self.additive, self.spread = _additive_parts(model, graph, topo)
        self.cards = [graph.card(x) for x in topo.network.nodes]
        # absorbing[l]: (its children in layer l, charge) of each node with children there
        self.absorbing: list[list[tuple[int, float]]] = [[] for _ in range(topo.l_max + 1)]
        for i in range(topo.n):
            if absorber[i]:
                for l in sorted({topo.layer[c] for c in bits(topo.children[i])}):
                    self.absorbing[l].append((topo.children[i] & topo.layer_mask[l], absorber[i]))
        self._unplaced = Memo(self._unplaced_part)  # unplaced nodes of one layer -> their part
        # the bound of every layer above l, all unplaced
        whole = [self._unplaced[mask] for mask in topo.layer_mask]
        self.above = [added(whole[l + 1:]) for l in range(topo.l_max + 1)]
        # (absorber, frontier cluster-layers given to it) -> what absorbing them costs, at least
        self._absorptions = _absorption_bounds(model, graph, topo, message)
        self._next_layers = Memo(lambda rest: _next_layer(topo, rest))  # unplaced -> the next layer's
        # unplaced nodes -> (a cluster-layer's members -> the absorbers of its message, and
        # its parents in the next layer to build if two or more); parents_of: all parents
        # of a node set (a memo)
        self._absorbers = Memo(lambda rest: Memo(
            lambda members: self._absorbers_of(parents_of[members] & rest, rest)))
        # (frontier cluster-layer, the unplaced nodes of the next layer to build) -> what
        # that layer's cluster-layers pay for holding its parents there apart or together
        self._groupings = _grouping_bounds(model, graph, topo, parents_of, message)
        # (frontier cluster-layers with parents in the next layer, that layer's unplaced
        # nodes) -> what its cluster-layers pay for them, split the cheapest way
        self._layers = _layer_bounds(model, graph, topo, message)
        self._parents_of = parents_of
        # (layer, assigned, frontier) -> (the bound, that frontier as first met): most
        # children repeat one, and share the first one's frontier (see known)
        self._known = RecentMemo(self._point, KNOWN_KEPT)

    def lookup(self, layer: int, assigned: int, frontier: tuple[tuple[int, Hashable], ...]) -> float:
        """The bound of a branch at ``layer`` with ``assigned`` and frontier ``frontier``
        (remembered)."""
        return self.known(layer, assigned, frontier)[0]

    def known(self, layer: int, assigned: int,
              frontier: tuple[tuple[int, Hashable], ...]) -> tuple[float, tuple[tuple[int, Hashable], ...]]:
        """``(bound, shared)``: the bound of :meth:`lookup`, and the first frontier equal to
        ``frontier`` met at that point. Branches hold the shared one: most open branches
        repeat a frontier another holds (docs/search.md, "The search's state in memory").

        The memo keeps two generations of :data:`KNOWN_KEPT` points (a
        :class:`~dcmap_dist.model.topology.RecentMemo`): a forgotten point is computed again
        if it comes back, its frontier then the first met since."""
        return self._known.lookup((layer, assigned, frontier))

    def _point(self, key: tuple) -> tuple[float, tuple[tuple[int, Hashable], ...]]:
        """The memo's value for a point ``(layer, assigned, frontier)``, computed."""
        return self.compute(key[0], key[1], key[2]), key[2]

    def compute(self, layer: int, assigned: int, frontier: tuple[tuple[int, Hashable], ...]) -> float:
        """The bound of :meth:`lookup`, computed (not remembered: the native core asks
        this of a frontier it has not met, and remembers the answer itself)."""
        topo = self.topo
        bound = self.above[layer]
        rest = topo.above[layer]
        if assigned != -1:
            unplaced = topo.layer_mask[layer] & ~assigned
            rest |= unplaced
            bound += self._unplaced[unplaced]
        absorptions = self._absorptions
        groupings = self._groupings
        if absorptions is not None or groupings is not None:
            absorbers = self._absorbers[rest]
            next_layer = self._next_layers[rest]
            given: dict[int, list] = {}
            fronts = []  # the grouping trade-offs of each frontier item with parents to group
            for item in frontier:
                found, shared = absorbers[item[0]]
                for x in found:
                    items = given.get(x)
                    if items is None:
                        given[x] = [item]
                    else:
                        items.append(item)
                if shared and groupings is not None:
                    fronts.append(groupings[(item, next_layer)])
            nearby = 0.0  # the next layer's part: its absorbers' absorptions and the groupings
            if absorptions is not None:
                for x, items in given.items():
                    if next_layer >> x & 1:
                        nearby += absorptions[(x, tuple(items))]
                    else:
                        bound += absorptions[(x, tuple(items))]
            if fronts:
                nearby += least_grouping(fronts)
            if self._layers is not None and next_layer:
                children = tuple(item for item in frontier if self._parents_of[item[0]] & next_layer)
                whole = self._layers.lookup((children, next_layer))
                if whole > nearby:
                    nearby = whole
            bound += nearby
        return bound

    def _absorbers_of(self, parents: int, rest: int) -> tuple[tuple[int, ...], int]:
        """The absorbers of a frontier cluster-layer with the unplaced parents ``parents``
        (the first of each layer, in input order) and, if two or more of them lie in the
        next layer to build (the lowest layer of the unplaced nodes ``rest``), those."""
        topo = self.topo
        first = []
        nodes = parents
        while nodes:
            i = (nodes & -nodes).bit_length() - 1
            first.append(i)
            nodes &= ~topo.layer_mask[topo.layer[i]]
        shared = parents & self._next_layers[rest]
        return tuple(first), shared if shared & (shared - 1) else 0

    def _unplaced_part(self, unplaced: int) -> float:
        """The part of the bound for the unplaced nodes ``unplaced`` of one layer."""
        if not unplaced:
            return 0.0
        members = bits(unplaced)
        layer = self.topo.layer[members[0]]
        return (added([self.own[i] for i in members])
                + added([charge for kids, charge in self.absorbing[layer] if kids & unplaced])
                + max(max(self.absorbed[i] for i in members), self.additive_part(members)))

    def additive_part(self, members: list[int]) -> float:
        """The sum of the additive absorbed parts of a set of the unplaced nodes ``members``
        (of one layer) whose parents are spread enough (the module docstring): taken
        greedily by part, largest first (ties by node index), each node kept if the set
        still holds, at most :data:`MOST_ADDED` nodes. Any such set bounds
        (docs/cost-model.md); this one is a good one."""
        additive, spread = self.additive, self.spread
        subsets = [(0, 0, 1)]  # each subset of the chosen nodes: (sum of sizes, union, its size)
        chosen: list[int] = []
        for y in sorted(members, key=lambda i: (-additive[i], i)):
            if additive[y] <= 0.0 or len(chosen) == MOST_ADDED:
                break
            size = self._size(spread[y])
            grown = [(total + size, union | spread[y], union_size * self._size(spread[y] & ~union))
                     for total, union, union_size in subsets]
            if all(total <= union_size for total, _, union_size in grown):
                chosen.append(y)
                subsets += grown
        return added([additive[i] for i in chosen])

    def _size(self, nodes: int) -> int:
        """``|nodes|``: the product of their cards, exact."""
        size = 1
        for i in bits(nodes):
            size *= self.cards[i]
        return size


def _additive_parts(model: Any | None, graph: Network, topo: Topology) -> tuple[list[float], list[int]]:
    """The model's ``additive_absorbed_lower_bounds`` by node index: each node's part and
    its parents as a mask (0 and 0 for a node without one, or whose parents' size is
    :data:`ADDITIVE_SIZES` or more)."""
    hook = getattr(model, "additive_absorbed_lower_bounds", None)
    parts = hook(graph) if hook is not None else {}
    index = topo.network.index
    additive, spread = [0.0] * topo.n, [0] * topo.n
    for x, (part, parents) in parts.items():
        if x in index and math.prod(graph.card(p) for p in parents) < ADDITIVE_SIZES:
            additive[index[x]] = float(part)
            spread[index[x]] = sum(1 << index[p] for p in parents)
    return additive, spread


def _absorption_bounds(model: Any | None, graph: Network, topo: Topology,
                       message: Callable[[Hashable], Hashable]) -> Memo | None:
    """The memo of ``(absorber, ((members, message), ...))`` -> the model's bound on
    absorbing those frontier cluster-layers: ``absorption_lower_bound`` if it has one,
    else the sum of ``message_lower_bound`` over them, else None (no such part).
    ``message`` gives the model's value of a message the search holds."""
    absorption = getattr(model, "absorption_lower_bound", None)
    if absorption is not None:
        nodes = topo.network.nodes
        return Memo(lambda key: absorption(graph, nodes[key[0]],
                                           tuple([(topo.names(members), message(held)) for members, held in key[1]])))
    message_bound = getattr(model, "message_lower_bound", None)
    if message_bound is None:
        return None
    per_child = Memo(lambda item: message_bound(graph, topo.names(item[0]), message(item[1])))
    return Memo(lambda key: added([per_child[item] for item in key[1]]))


def least_grouping(fronts: list[tuple[tuple[float, float], ...]]) -> float:
    """What the groupings of the next layer cost, at least, given each frontier item's
    trade-offs ``(excess, absorptions)`` (excess ascending, absorptions descending): the
    absorptions are the item's own, the excess is of eliminations other items' groupings may
    share, so the least over ``t`` of ``t`` plus, per item, its least absorptions with an
    excess of at most ``t`` (docs/cost-model.md). With one pair ``(value, 0.0)`` per item
    (a ``grouping_lower_bound``), the largest value."""
    best = math.inf
    for t in sorted({excess for front in fronts for excess, _ in front}):
        total = t
        for front in fronts:
            least = math.inf
            for excess, absorptions in front:
                if excess > t:
                    break
                least = absorptions
            total += least
        if total < best:
            best = total
    return best


def _layer_bounds(model: Any | None, graph: Network, topo: Topology,
                  message: Callable[[Hashable], Hashable]) -> RecentMemo | None:
    """The memo of ``(frontier items, next_layer)`` -> the model's ``layer_lower_bound`` for
    the placed cluster-layers with parents in ``next_layer``, the unplaced nodes of the
    next layer to build; or None (no such hook). It keeps what was asked recently, as the
    bound's own memo does (:data:`KNOWN_KEPT`): there are about as many keys as points."""
    hook = getattr(model, "layer_lower_bound", None)
    if hook is None:
        return None
    return RecentMemo(lambda key: float(hook(graph, tuple([(topo.names(members), message(held))
                                                          for members, held in key[0]]),
                                             tuple(topo.network.nodes[i] for i in bits(key[1])))), KNOWN_KEPT)


def _grouping_bounds(model: Any | None, graph: Network, topo: Topology, parents_of: Memo,
                     message: Callable[[Hashable], Hashable]) -> Memo | None:
    """The memo of ``((members, message), next_layer)`` -> the model's grouping trade-offs
    for a frontier cluster-layer with two or more parents among ``next_layer``, the
    unplaced nodes of the next layer to build (:func:`least_grouping`): its
    ``grouping_trade_offs``, or ``((grouping_lower_bound, 0.0),)``; or None (no such
    hook). ``message`` gives the model's value of a message the search holds."""
    trade_offs = getattr(model, "grouping_trade_offs", None)
    grouping = getattr(model, "grouping_lower_bound", None)
    if trade_offs is None and grouping is None:
        return None
    nodes = topo.network.nodes

    def pairs(key: tuple) -> tuple[tuple[float, float], ...]:
        (members, held), next_layer = key
        args = (graph, topo.names(members), message(held), tuple([nodes[i] for i in bits(parents_of[members] & next_layer)]),
                topo.names(next_layer))
        if trade_offs is not None:
            return tuple((float(excess), float(absorptions)) for excess, absorptions in trade_offs(*args))
        return ((float(grouping(*args)), 0.0),)

    return Memo(pairs)


def _next_layer(topo: Topology, rest: int) -> int:
    """The nodes of the lowest layer among the unplaced nodes ``rest``: the next layer to
    build, whose layer below is complete."""
    for mask in topo.layer_mask:
        if rest & mask:
            return rest & mask
    return 0


def _per_node(model: Any | None, hook: str, graph: Network, topo: Topology) -> list[float]:
    """The model's per-node ``hook`` as a list by node index (0 for a missing node or hook)."""
    method: Callable[[Network], dict[str, float]] | None = getattr(model, hook, None)
    values = method(graph) if method is not None else {}
    return [float(values.get(x, 0.0)) for x in topo.network.nodes]

