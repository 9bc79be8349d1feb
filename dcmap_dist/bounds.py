"""The admissible lower bound on the cost still to come (docs/cost-model.md, section 4).

A branch at ``layer`` has placed every node below that layer, and the nodes
``assigned`` of it (``assigned == -1``: all of it). The cost of the cluster-layers
still to be built is at least the sum of four parts, each from an optional hook of
the cost model (a model without a hook contributes nothing for it):

* ``node_lower_bounds(graph)``: every unplaced node's own terms;
* ``message_lower_bound(graph, nodes, message)``: for every placed cluster-layer, once
  per layer that holds an unplaced parent of it (each such layer holds a different
  cluster-layer that absorbs its message);
* ``absorber_lower_bounds(graph)``: for every unplaced node, once per layer that holds
  unplaced children of it (its cluster-layer absorbs a message from each such layer);
* ``absorbed_lower_bounds(graph)``: for every layer with unplaced nodes, the largest
  value among them (what absorbing the messages of that layer's new cluster-layers
  costs beyond the other parts).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .network import Network
from .structure import Memo, Topology, bits, union_of


class LowerBound:
    """The bound of a branch from its ``layer``, ``assigned`` and frontier ``cls``:
    ``bound(layer, assigned, cls)``. ``model`` None: the bound is 0 (no pruning)."""

    def __init__(self, topo: Topology, graph: Network, model: Any | None,
                 parents_of: Memo) -> None:
        self.topo = topo
        self.parents_of = parents_of  # all parents of a node set (a memo)
        self._own = _per_node(model, "node_lower_bounds", graph, topo)
        self._absorbed = _per_node(model, "absorbed_lower_bounds", graph, topo)
        absorber = _per_node(model, "absorber_lower_bounds", graph, topo)
        # absorbing[l]: (its children in layer l, charge) of each node with children there
        self._absorbing: list[list[tuple[int, float]]] = [[] for _ in range(topo.l_max + 1)]
        for i in range(topo.n):
            if absorber[i]:
                for l in sorted({topo.layer[c] for c in bits(topo.children[i])}):
                    self._absorbing[l].append((topo.children[i] & topo.layer_mask[l], absorber[i]))
        self._unplaced = Memo(self._unplaced_part)  # unplaced nodes of one layer -> their part
        # the bound of every layer above l, all unplaced
        whole = [self._unplaced[mask] for mask in topo.layer_mask]
        self._above = [sum(whole[l + 1:]) for l in range(topo.l_max + 1)]
        message_bound = getattr(model, "message_lower_bound", None)
        # absorbing a frontier cluster-layer (members, message), memoised
        self._message_bounds: Memo | None = None if message_bound is None else Memo(
            lambda item: message_bound(graph, topo.names(item[0]), item[1]))
        layer_bit = [1 << l for l in topo.layer]
        self._layers_of = Memo(lambda mask: union_of(layer_bit, mask))  # the layers of a node set

    def __call__(self, layer: int, assigned: int, cls: tuple[tuple[int, Hashable], ...]) -> float:
        """The bound of a branch at ``layer`` with ``assigned`` and frontier ``cls``."""
        topo = self.topo
        bound = self._above[layer]
        rest = topo.above[layer]
        if assigned != -1:
            unplaced = topo.layer_mask[layer] & ~assigned
            rest |= unplaced
            bound += self._unplaced[unplaced]
        message_bounds = self._message_bounds
        if message_bounds is not None:
            parents_of = self.parents_of
            layers_of = self._layers_of
            for item in cls:
                waiting = parents_of[item[0]] & rest
                if waiting:
                    bound += message_bounds[item] * layers_of[waiting].bit_count()
        return bound

    def _unplaced_part(self, unplaced: int) -> float:
        """The part of the bound for the unplaced nodes ``unplaced`` of one layer."""
        if not unplaced:
            return 0.0
        members = bits(unplaced)
        layer = self.topo.layer[members[0]]
        return (sum(self._own[i] for i in members)
                + sum(charge for kids, charge in self._absorbing[layer] if kids & unplaced)
                + max(self._absorbed[i] for i in members))


def _per_node(model: Any | None, hook: str, graph: Network, topo: Topology) -> list[float]:
    """The model's per-node ``hook`` as a list by node index (0 for a missing node or hook)."""
    method: Callable[[Network], dict[str, float]] | None = getattr(model, hook, None)
    values = method(graph) if method is not None else {}
    return [float(values.get(x, 0.0)) for x in topo.network.nodes]

