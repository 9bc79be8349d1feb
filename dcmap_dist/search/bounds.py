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
* ``grouping_lower_bound(graph, nodes, message, parents, layer_nodes)``: for a placed
  cluster-layer with two or more unplaced parents in the next layer to build, what that
  layer pays for holding them apart (more absorptions) or together (a larger first
  elimination); the largest over the frontier, as two of them may charge one elimination;
* ``absorber_lower_bounds(graph)``: for every unplaced node, once per layer that holds
  unplaced children of it (its cluster-layer absorbs a message from each such layer);
* ``absorbed_lower_bounds(graph)``: for every layer with unplaced nodes, the largest
  value among them (what absorbing the messages of that layer's new cluster-layers
  costs beyond the other parts).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..model.network import Network
from ..model.topology import Memo, RecentMemo, Topology, added, bits

__all__ = ["LowerBound"]

# bounds remembered in each of the memo's two generations (LowerBound.known)
KNOWN_KEPT = 4096


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
            next_layers = self._next_layers
            given: dict[int, list] = {}
            grouping = 0.0  # the largest grouping part: those of two children may overlap
            for item in frontier:
                found, shared = absorbers[item[0]]
                for x in found:
                    items = given.get(x)
                    if items is None:
                        given[x] = [item]
                    else:
                        items.append(item)
                if shared and groupings is not None:
                    value = groupings[(item, next_layers[rest])]
                    if value > grouping:
                        grouping = value
            if absorptions is not None:
                for x, items in given.items():
                    bound += absorptions[(x, tuple(items))]
            bound += grouping
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
                + max(self.absorbed[i] for i in members))


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


def _grouping_bounds(model: Any | None, graph: Network, topo: Topology, parents_of: Memo,
                     message: Callable[[Hashable], Hashable]) -> Memo | None:
    """The memo of ``((members, message), next_layer)`` -> the model's
    ``grouping_lower_bound`` for a frontier cluster-layer with two or more parents among
    ``next_layer``, the unplaced nodes of the next layer to build; or None. ``message``
    gives the model's value of a message the search holds."""
    grouping = getattr(model, "grouping_lower_bound", None)
    if grouping is None:
        return None
    nodes = topo.network.nodes
    return Memo(lambda key: grouping(graph, topo.names(key[0][0]), message(key[0][1]),
                                     tuple([nodes[i] for i in bits(parents_of[key[0][0]] & key[1])]),
                                     topo.names(key[1])))


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

