"""Cost models (SPEC section 4): the interface, the ``dcmap`` model, user models.

A cost model evaluates one cluster-layer at a time, from layer 0 up, given a
:class:`CostContext`, and returns the cluster-layer's cost and the message it
passes up. A model may also supply

* ``node_lower_bounds(graph) -> {node: b}``: an admissible bound used to prune
  the search. Contract: in every feasible mapping, for every set ``U`` of nodes
  made of whole cluster-layers and closed upwards within their layers (the nodes
  the search has not yet placed), the cluster-layers inside ``U`` cost at least
  ``sum(b[x] for x in U)``;
* ``message_lower_bound(graph, nodes, message) -> float``: a bound on what absorbing
  the message of cluster-layer ``nodes`` costs a parent cluster-layer, whichever it is
  and however it is mapped; the search adds it for every placed cluster-layer that
  still has an unplaced parent (each absorption is counted once and is not part of
  any node's bound);
* ``estimate(graph, nodes) -> float``: the paper's heuristic ``h``, an estimate
  of the cost of the nodes still to place, used only to order the queue.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from .network import Network
from .structure import layers


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


def checked_cost(value: Any, ctx: CostContext) -> float:
    """``value`` as a float if it is a finite positive number, else a CostError naming ``ctx``."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise CostError(
            f"cost of cluster-layer {sorted(ctx.nodes)} (layer {ctx.layer}) is {value!r}; "
            "a cost must be a finite positive number"
        )
    return float(value)


def child_order(ctx: CostContext) -> list[ChildClusterLayer]:
    """Child cluster-layers in order of first appearance: nodes of the cluster-layer in
    input order, each node's children in input order."""
    holder = {x: c for c in ctx.children for x in c.nodes}
    index = ctx.graph.index
    ordered: list[ChildClusterLayer] = []
    seen: set[int] = set()
    for x in sorted(ctx.nodes, key=index.__getitem__):
        for y in ctx.graph.children[x]:
            c = holder[y]
            if id(c) not in seen:
                seen.add(id(c))
                ordered.append(c)
    return ordered


ELIMINATION_ORDERS = ("cpt", "paper")


@dataclass(frozen=True)
class DcmapCost:
    """The computational cost of a backward propagation (SPEC 4.2, the paper's case study).

    One unit per table entry produced by a multiplication, ``addition`` (0.6) per
    addition. ``order`` is the elimination order: ``cpt`` (ascending CPT size, ties
    by input order) or ``paper`` (the published code's order).
    """

    order: str = "cpt"
    addition: float = 0.6
    name: str = "dcmap"

    def __post_init__(self) -> None:
        if self.order not in ELIMINATION_ORDERS:
            raise ValueError(f"unknown elimination order {self.order!r}: choose cpt or paper")
        ok = isinstance(self.addition, numbers.Real) and not isinstance(self.addition, bool)
        if not (ok and math.isfinite(self.addition) and self.addition >= 0):
            raise ValueError(f"addition weight must be a finite number >= 0, got {self.addition}")

    def params(self) -> dict[str, Any]:
        return {"order": self.order, "addition": self.addition}

    def evaluate(self, ctx: CostContext) -> tuple[float, frozenset[str]]:
        graph = ctx.graph
        card = graph.card
        add = self.addition
        jcpt = set(ctx.nodes)
        for x in ctx.nodes:
            jcpt.update(graph.parents[x])
        link = {x for c in ctx.children if not c.same_cluster for x in _parents_in(graph, c, ctx.nodes)}
        scope: set[str] = set()
        cost = 0.0
        for child in child_order(ctx):
            message = child.message
            kept = message & jcpt
            cost += add * (_size(graph, message) - _size(graph, kept))
            scope |= kept
            cost += _size(graph, scope)
        position = elimination_positions(graph, self.order)
        for x in sorted(ctx.nodes, key=position.__getitem__):
            scope.add(x)
            scope.update(graph.parents[x])
            size = _size(graph, scope)
            cost += size
            if x not in link:
                cost += add * size * (card(x) - 1) / card(x)
                scope.discard(x)
        return cost, frozenset(scope)

    def naive(self, graph: Network, nodes: Iterable[str] | None = None) -> float:
        """Every node (of ``nodes``, default all) in one cluster-layer, all internal,
        in order of layer then elimination order (the paper's initial ``G_min``)."""
        chosen = graph.nodes if nodes is None else nodes
        layer = layers(graph)
        position = elimination_positions(graph, self.order)
        scope: set[str] = set()
        cost = 0.0
        for x in sorted(chosen, key=lambda x: (layer[x], position[x])):
            scope.add(x)
            scope.update(graph.parents[x])
            size = _size(graph, scope)
            card = graph.card(x)
            cost += size + self.addition * size * (card - 1) / card
            scope.discard(x)
        return cost

    def estimate(self, graph: Network, nodes: Iterable[str]) -> float:
        """The paper's ``h``: the naive cost of the nodes still to place."""
        return self.naive(graph, nodes)

    def node_lower_bounds(self, graph: Network) -> dict[str, float]:
        """Admissible per-node bounds (proof in docs/cost-model.md).

        Every node pays for multiplying its CPT in: at least ``|x + Par(x)|``. A node
        with parents is also summed out: when it is internal, at its own elimination;
        when it is a link node, when a parent cluster-layer absorbs its message. Either
        costs at least ``addition * |x + Par(x)| * (card - 1) / card``.
        """
        bounds = {}
        for x in graph.nodes:
            cpt = _size(graph, {x, *graph.parents[x]})
            card = graph.card(x)
            summed = self.addition * cpt * (card - 1) / card if graph.parents[x] else 0.0
            bounds[x] = cpt + summed
        return bounds

    def message_lower_bound(self, graph: Network, nodes: frozenset[str], message: frozenset[str]) -> float:
        """What any parent cluster-layer pays to absorb this message (see docs/cost-model.md)."""
        return _message_bound(self, graph, nodes, message)


def _message_bound(model: DcmapCost, graph: Network, nodes: frozenset[str], message: frozenset[str]) -> float:
    """Absorbing message ``J`` costs ``a(|J| - |m|)`` to marginalise plus ``|R| >= |m|``
    to multiply in, where ``1 <= |m| <= |J| / |L|`` (no node of the child cluster-layer,
    ``L`` its link nodes, is in the absorber's ``Jcpt``). The least of
    ``a|J| + (1 - a)|m|`` over that range."""
    a = model.addition
    size = _size(graph, message)
    most = size / _size(graph, message & nodes)
    return min(a * size + (1 - a), a * size + (1 - a) * most)


def _parents_in(graph: Network, child: ChildClusterLayer, nodes: frozenset[str]) -> set[str]:
    """Nodes of ``nodes`` with a child in ``child``."""
    return {p for y in child.nodes for p in graph.parents[y] if p in nodes}


def _size(graph: Network, nodes: Iterable[str]) -> int:
    """``|S|``: the product of the nodes' cards (1 for the empty set)."""
    return math.prod(graph.card(x) for x in nodes)


def elimination_positions(graph: Network, order: str) -> dict[str, tuple[int, int]]:
    """Sort keys giving the elimination order of SPEC 4.2 within a cluster-layer."""
    key = f"elimination-{order}"
    cached = graph.derived.get(key)
    if cached is not None:
        return cached
    cpt = {x: graph.card(x) * _size(graph, graph.parents[x]) for x in graph.nodes}
    index = graph.index
    if order == "cpt":
        positions = {x: (cpt[x], index[x]) for x in graph.nodes}
    else:
        positions = {}
        layer = layers(graph)
        by_layer: dict[int, list[str]] = {}
        for x in graph.nodes:
            by_layer.setdefault(layer[x], []).append(x)
        for members in by_layer.values():
            argsort = sorted(range(len(members)), key=lambda j: cpt[members[j]])  # stable
            for j, x in enumerate(members):
                positions[x] = (argsort[j], index[x])
    graph.derived[key] = positions
    return positions


class FunctionCost:
    """A user cost: a callable taking a :class:`CostContext` and returning a cost or
    a pair (cost, message). Without a message, the cluster-layer passes its node set."""

    def __init__(self, function: Callable[[CostContext], Any], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", "user")

    def params(self) -> dict[str, Any]:
        return {}

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        value = self.function(ctx)
        if isinstance(value, tuple):
            if len(value) != 2:
                raise CostError(
                    f"cost function {self.name} returned a tuple of {len(value)} items for "
                    f"cluster-layer {sorted(ctx.nodes)}; expected (cost, message)"
                )
            return value
        return value, ctx.nodes


def model_params(model: CostModel) -> dict[str, Any]:
    """A model's parameters for the result file (``{}`` if it has no ``params``)."""
    params = getattr(model, "params", None)
    return dict(params()) if callable(params) else {}


def load_cost(spec: str | CostModel | Callable, order: str = "cpt", addition: float = 0.6) -> CostModel:
    """A cost model from ``dcmap``, ``package.module:name``, a model or a callable.

    ``name`` may be a function (see :class:`FunctionCost`), a model object with an
    ``evaluate`` method, or a class whose no-argument instance is such a model.
    """
    if not isinstance(spec, str):
        return spec if hasattr(spec, "evaluate") else FunctionCost(spec)
    if spec == "dcmap":
        return DcmapCost(order=order, addition=addition)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--cost must be 'dcmap' or 'package.module:name', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a user module may fail in any way while importing
        raise ValueError(f"cannot import cost module {module_name!r}: {exc}") from None
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no cost {attr!r}") from None
    if isinstance(target, type):
        target = target()
    if hasattr(target, "evaluate"):
        if not hasattr(target, "name"):
            target.name = spec
        return target
    if callable(target):
        return FunctionCost(target, spec)
    raise ValueError(f"{spec!r} is neither a cost function nor a cost model")


class ClusterLayerCost(NamedTuple):
    """One cluster-layer of an evaluated mapping."""

    nodes: frozenset[str]
    layer: int
    cost: float


def evaluate_mapping(
    network: Network, clusters: Iterable[Iterable[str]], model: CostModel
) -> list[ClusterLayerCost]:
    """Cost of every cluster-layer of a mapping, from layer 0 up (no feasibility check).

    Within a layer, cluster-layers go by their sorted node names.
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
