"""The interface of a cost model (SPEC section 4): what it is handed
(:class:`CostContext`, :class:`ChildClusterLayer`), what it returns and how that is
checked (:func:`checked_cost`, :class:`CostError`), and :func:`evaluate_mapping`, which
prices a whole mapping with any model.

A cost model evaluates one cluster-layer at a time, from layer 0 up, and returns the
cluster-layer's cost and the message it passes up. A model may also supply

* ``node_lower_bounds(graph) -> {node: b}``: an admissible bound used to prune
  the search. Contract: in every feasible mapping, for every set ``U`` of nodes
  made of whole cluster-layers and closed upwards within their layers (the nodes
  the search has not yet placed), the cluster-layers inside ``U`` cost at least
  ``sum(b[x] for x in U)``;
* ``absorption_lower_bound(graph, absorber, children) -> float``: a bound on what the
  cluster-layer holding node ``absorber`` pays to absorb the messages of the placed
  cluster-layers ``children`` ((nodes, message) pairs, each holding a child of
  ``absorber``), however the rest is mapped. The search gives every placed
  cluster-layer that still has unplaced parents, once per layer holding them, to the
  first of them in input order (each layer holds a different absorber; no absorption
  is counted twice or in a node's bound). A model may instead supply
  ``message_lower_bound(graph, nodes, message) -> float``, a bound on one absorption of
  the message of cluster-layer ``nodes`` by any parent cluster-layer: the search then
  adds it once per child given to an absorber;
* ``grouping_lower_bound(graph, nodes, message, parents, layer_nodes) -> float``: for a
  placed cluster-layer with two or more unplaced parents ``parents`` (input order) in the
  next layer to build (unplaced nodes ``layer_nodes``), what that layer's cluster-layers
  pay beyond the other parts for holding them apart or together; the search adds the
  largest over the frontier;
* ``absorber_lower_bounds(graph) -> {node: b}`` and ``absorbed_lower_bounds(graph) ->
  {node: b}``: what absorbing the messages of cluster-layers not yet placed costs,
  charged per parent and layer of its children, and per layer (its largest value);
  see :mod:`dcmap_dist.search.bounds` and docs/cost-model.md for the contract;
* ``estimate(graph, nodes) -> float``: the paper's heuristic ``h``, an estimate
  of the cost of the nodes still to place, used only to order the queue.

:mod:`.dcmap` is the built-in model, :mod:`.user` puts a user's behind checks.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Hashable, Iterable
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..model.network import Network
from ..model.topology import layers

__all__ = [
    "ChildClusterLayer", "ClusterLayerCost", "CostContext", "CostError", "CostModel", "evaluate_mapping",
]


class ChildClusterLayer(NamedTuple):
    """A child cluster-layer as a cost model sees it."""

    nodes: frozenset[str]
    layer: int
    same_cluster: bool
    message: Hashable


class CostContext(NamedTuple):
    """Everything a cluster-layer's cost may depend on (SPEC section 3).

    ``children`` is sorted by (layer, sorted node names).
    """

    nodes: frozenset[str]
    layer: int
    graph: Network
    children: tuple[ChildClusterLayer, ...]


class CostError(ValueError):
    """A cost model returned something that is not a finite positive cost."""


@runtime_checkable
class CostModel(Protocol):
    """What the search needs from a cost model."""

    name: str

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        """Cost of the cluster-layer and the message it passes up."""

    def params(self) -> dict[str, Any]:
        """The model's parameters, for the result file."""


def checked_cost(value: Any, ctx: CostContext, model: str | None = None) -> float:
    """``value`` as a float if it is a positive number, else a CostError naming ``ctx``.

    ``inf`` passes, unless ``model`` (the name of a user's model) is given: it is how
    the ``dcmap`` model counts a cluster-layer whose tables pass the float range, a
    cluster-layer that no optimal mapping holds. A user's costs must be finite, and at
    most :func:`user_cost_limit`, so that no mapping's total passes the float range.
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    source = "" if model is None else f"cost model {model}: "
    if ok:
        try:
            number = float(value)
        except OverflowError:  # an int, Fraction or Decimal past the float range
            number = math.inf if value > 0 else -math.inf
        if number == math.inf and not isinstance(value, float):
            raise CostError(
                f"{source}cost of cluster-layer {sorted(ctx.nodes)} (layer {ctx.layer}) is {_shown(value)}, too "
                "large for a floating-point number (about 1.8e308); scale the costs down"
            ) from None
    if not ok or math.isnan(number) or number <= 0 or (model is not None and math.isinf(number)):
        kind = "positive" if model is None else "finite positive"
        raise CostError(
            f"{source}cost of cluster-layer {sorted(ctx.nodes)} (layer {ctx.layer}) is {_shown(value)}; "
            f"a cost must be a {kind} number"
        )
    if model is not None and number > user_cost_limit(ctx.graph):
        raise CostError(
            f"cost model {model}: cost of cluster-layer {sorted(ctx.nodes)} (layer {ctx.layer}) is {_shown(value)}, "
            f"more than {user_cost_limit(ctx.graph):.3g}: a mapping of the {len(ctx.graph)} nodes of "
            f"{ctx.graph.name!r} adds up to {len(ctx.graph)} costs, and their total must stay within the "
            "floating-point range (about 1.8e308); scale the costs down"
        )
    return number


def _shown(value: Any, most: int = 40) -> str:
    """``repr(value)``, shortened past ``most`` characters (a huge int has hundreds of digits)."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most - 12]}... ({len(text)} characters)"


def user_cost_limit(graph: Network) -> float:
    """The largest cost a user's model may give a cluster-layer of ``graph``: the float
    range shared by the at most ``n`` cluster-layers of a mapping of ``n`` nodes (with
    one to spare for rounding), so that every total is finite."""
    return sys.float_info.max / (len(graph) + 1)


def child_order(ctx: CostContext, by_name: bool = False) -> list[ChildClusterLayer]:
    """Child cluster-layers in order of first appearance: nodes of the cluster-layer in
    input order, each node's children in input order (both in name order if ``by_name``)."""
    holder = {x: c for c in ctx.children for x in c.nodes}
    graph = ctx.graph
    ordered: list[ChildClusterLayer] = []
    seen: set[int] = set()
    for x in sorted(ctx.nodes) if by_name else sorted(ctx.nodes, key=graph.index.__getitem__):
        for y in sorted(graph.children[x]) if by_name else graph.children[x]:
            c = holder[y]
            if id(c) not in seen:
                seen.add(id(c))
                ordered.append(c)
    return ordered


class ClusterLayerCost(NamedTuple):
    """One cluster-layer of an evaluated mapping."""

    nodes: frozenset[str]
    layer: int
    cost: float


def evaluate_mapping(
    network: Network, clusters: Iterable[Iterable[str]], model: CostModel
) -> list[ClusterLayerCost]:
    """The cost of every cluster-layer of a mapping, from layer 0 up (no feasibility check).

    Parameters
    ----------
    network : Network
    clusters : iterable of iterables of node names
        The mapping's clusters (each cluster is cut into cluster-layers, SPEC 2).
    model : CostModel
        For example :class:`~dcmap_dist.cost.dcmap.DcmapCost`, or one from
        :func:`~dcmap_dist.cost.user.load_cost`.

    Returns
    -------
    list of ClusterLayerCost
        Within a layer, cluster-layers go by their sorted node names. Their costs add
        up to the mapping's.

    Examples
    --------
    >>> from dcmap_dist import DcmapCost, evaluate_mapping, load_network
    >>> network = load_network("paper-example")
    >>> costs = evaluate_mapping(network, [["A"], ["B"], ["C"], ["D", "G"], ["E"], ["F"]], DcmapCost())
    >>> costs[2]
    ClusterLayerCost(nodes=frozenset({'D'}), layer=1, cost=13.6)
    >>> round(sum(c.cost for c in costs), 6)
    54.0
    """
    layer = layers(network)
    cluster_of: dict[str, int] = {}
    for k, cluster in enumerate(clusters):
        for x in cluster:
            cluster_of[x] = k
    missing = [x for x in network.nodes if x not in cluster_of]
    if missing:
        raise ValueError(f"node {missing[0]!r} is in no cluster of the mapping")
    groups: dict[tuple[int, int], set[str]] = {}
    for x in network.nodes:
        groups.setdefault((layer[x], cluster_of[x]), set()).add(x)
    ordered = sorted(groups.items(), key=lambda item: (item[0][0], sorted(item[1])))
    done: dict[str, tuple[frozenset[str], int, Hashable]] = {}
    result: list[ClusterLayerCost] = []
    for (l, k), members in ordered:
        nodes = frozenset(members)
        children: dict[frozenset[str], ChildClusterLayer] = {}
        for x in nodes:
            for y in network.children[x]:
                c_nodes, c_layer, message = done[y]
                if c_nodes not in children:
                    same = cluster_of[y] == k
                    children[c_nodes] = ChildClusterLayer(c_nodes, c_layer, same, message)
        ctx = CostContext(nodes, l, network, sort_children(children.values()))
        value, message = model.evaluate(ctx)
        result.append(ClusterLayerCost(nodes, l, checked_cost(value, ctx)))
        for x in nodes:
            done[x] = (nodes, l, message)
    return result


def sort_children(children: Iterable[ChildClusterLayer]) -> tuple[ChildClusterLayer, ...]:
    """Children in the canonical order of :class:`CostContext`: (layer, sorted node names)."""
    return tuple(sorted(children, key=lambda c: (c.layer, sorted(c.nodes))))
