"""Cost models (SPEC section 4): the interface, the ``dcmap`` model, user models.

A cost model evaluates one cluster-layer at a time, from layer 0 up, given a
:class:`CostContext`, and returns the cluster-layer's cost and the message it
passes up. A model may also supply

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
  see :mod:`dcmap_dist.bounds` and docs/cost-model.md for the contract;
* ``estimate(graph, nodes) -> float``: the paper's heuristic ``h``, an estimate
  of the cost of the nodes still to place, used only to order the queue.

:func:`load_cost` puts every model but the built-in one behind :class:`UserCost`,
which turns a failure or a malformed answer of the user's code into a
:class:`CostError` naming the model and the cluster-layer.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import numbers
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from .limits import INTERRUPT
from .network import Network
from .structure import layer_nodes, layers, scientific


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
    if not ok or math.isnan(value) or value <= 0 or (model is not None and math.isinf(value)):
        source = "" if model is None else f"cost model {model}: "
        kind = "positive" if model is None else "finite positive"
        raise CostError(
            f"{source}cost of cluster-layer {sorted(ctx.nodes)} (layer {ctx.layer}) is {value!r}; "
            f"a cost must be a {kind} number"
        )
    if model is not None and value > user_cost_limit(ctx.graph):
        raise CostError(
            f"cost model {model}: cost of cluster-layer {sorted(ctx.nodes)} (layer {ctx.layer}) is {value!r}, "
            f"more than {user_cost_limit(ctx.graph):.3g}: a mapping of the {len(ctx.graph)} nodes of "
            f"{ctx.graph.name!r} adds up to {len(ctx.graph)} costs, and their total must stay within the "
            "floating-point range (about 1.8e308); scale the costs down"
        )
    return float(value)


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


ELIMINATION_ORDERS = ("cpt", "paper", "canonical")
MOST_GROUPED_PARENTS = 8  # absorbed_lower_bounds tries every grouping of at most this many (Bell(8) = 4140)
MOST_ORDERED_ABSORPTIONS = 10  # absorption_lower_bound tries every order of at most this many (2^10 subsets)


@dataclass(frozen=True)
class DcmapCost:
    """The computational cost of a backward propagation (SPEC 4.2, the paper's case study).

    One unit per table entry produced by a multiplication, ``addition`` (0.6) per
    addition. ``order`` is the elimination order: ``cpt`` (ascending CPT size, ties
    by input order), ``paper`` (the published code's order) or ``canonical`` (``cpt`` with
    node names in place of the input order, also when absorbing children, so that costs do
    not depend on the order in which the network lists its nodes).

    A table too large for a float counts ``inf``: such a cluster-layer is in no optimal
    mapping. A network in which the all-singletons mapping could pass the float range is
    a CostError.
    """

    order: str = "cpt"
    addition: float = 0.6
    name: str = "dcmap"

    def __post_init__(self) -> None:
        if self.order not in ELIMINATION_ORDERS:
            raise ValueError(
                f"unknown elimination order {self.order!r}: choose one of {', '.join(ELIMINATION_ORDERS)}"
            )
        ok = isinstance(self.addition, numbers.Real) and not isinstance(self.addition, bool)
        if not (ok and math.isfinite(self.addition) and self.addition >= 0):
            raise ValueError(f"addition weight must be a finite number >= 0, got {self.addition}")

    def params(self) -> dict[str, Any]:
        return {"order": self.order, "addition": self.addition}

    def evaluate(self, ctx: CostContext) -> tuple[float, frozenset[str]]:
        graph = ctx.graph
        _check_range(graph, self.addition)
        card = graph.card
        add = self.addition
        jcpt = set(ctx.nodes)
        for x in ctx.nodes:
            jcpt.update(graph.parents[x])
        link = {x for c in ctx.children if not c.same_cluster for x in _parents_in(graph, c, ctx.nodes)}
        scope: set[str] = set()
        cost = 0.0
        for child in child_order(ctx, by_name=self.order == "canonical"):
            message = child.message
            kept = message & jcpt
            cost += _weighted(add, _size(graph, message) - _size(graph, kept))
            scope |= kept
            cost += _as_float(_size(graph, scope))
        position = elimination_positions(graph, self.order)
        for x in sorted(ctx.nodes, key=position.__getitem__):
            scope.add(x)
            scope.update(graph.parents[x])
            size = _size(graph, scope)
            cost += _as_float(size)
            if x not in link:
                cost += _weighted(_sum_out_weight(add, card(x)), size)
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
            cost += _as_float(size) + _weighted(_sum_out_weight(self.addition, card), size)
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
        _check_range(graph, self.addition)
        bounds = {}
        for x in graph.nodes:
            cpt = _size(graph, {x, *graph.parents[x]})
            card = graph.card(x)
            summed = _weighted(_sum_out_weight(self.addition, card), cpt) if graph.parents[x] else 0.0
            bounds[x] = _as_float(cpt) + summed
        return bounds

    def absorber_lower_bounds(self, graph: Network) -> dict[str, float]:
        """What a node's cluster-layer pays, at least, to multiply in the message of a
        child cluster-layer: ``card(x)``, for nodes of two states or more (the message
        holds ``x``; proof in docs/cost-model.md)."""
        return {x: _as_float(graph.card(x)) for x in graph.nodes if graph.card(x) >= 2}

    def absorbed_lower_bounds(self, graph: Network) -> dict[str, float]:
        """What absorbing the message of the cluster-layer that holds ``y`` costs, at least,
        beyond the other bounds (proof in docs/cost-model.md). Each absorber ``P`` leaves
        ``min(a, 1) (prod - sum)``, over the cards of two or more states of ``y``'s
        parents (the product) and of its parents in ``P`` (the sum); there is one absorber
        in every layer of ``y``'s parents, and the parents in the layer just above are
        either in separate absorbers or together, and then the first elimination of their
        cluster-layer multiplies the others in (``_grouping_excess``): the least over
        the ways to group them."""
        _check_range(graph, self.addition)
        layer = layers(graph)
        weight = min(self.addition, 1.0)
        by_layer = layer_nodes(graph)
        cpt = {x: _size(graph, {x, *graph.parents[x]}) for x in graph.nodes}
        bounds = {}
        for y in graph.nodes:
            product = math.prod(c for p in graph.parents[y] if (c := graph.card(p)) >= 2)
            if product == 1:  # no parent of two states or more: nothing to charge
                continue

            def left(group: list[str]) -> float:
                return _weighted(weight, product - sum(c for p in group if (c := graph.card(p)) >= 2))

            parents_by_layer: dict[int, list[str]] = {}
            for p in graph.parents[y]:
                parents_by_layer.setdefault(layer[p], []).append(p)
            total = 0.0
            for l, parents in parents_by_layer.items():
                if l == layer[y] + 1 and len(parents) <= MOST_GROUPED_PARENTS:
                    total += min(sum(left(g) + _grouping_excess(graph, g, by_layer[l], cpt) for g in groups)
                                 for groups in _set_partitions(parents))
                else:  # at least one absorber, holding some of them
                    total += left(parents)
            if total > 0:
                bounds[y] = total
        return bounds

    def absorption_lower_bound(self, graph: Network, absorber: str,
                               children: tuple[tuple[frozenset[str], frozenset[str]], ...]) -> float:
        """What the cluster-layer holding ``absorber`` pays, at least, to absorb the messages
        of the placed cluster-layers ``children`` ((nodes, message) pairs, each holding a
        child of ``absorber``), whatever else it holds (proof in docs/cost-model.md).

        Absorbing message ``J`` costs ``a(|J| - |m|)`` to marginalise and then ``|R|``,
        the running scope, to multiply in. ``m`` holds what ``J`` shares with the
        absorber and its parents, and none of the child's nodes; ``R`` holds this ``m``
        and every ``m`` absorbed before it. The least total over the orders of absorption.
        """
        add = self.addition
        # the nodes an absorbed message can share with the scope, as bits
        near = {x: 1 << i for i, x in enumerate((absorber, *graph.parents[absorber]))}
        cards = [graph.card(x) for x in near]
        sizes: dict[int, int] = {}  # a set of near nodes (bits) -> its size, exact

        def scope(shared: int) -> int:
            got = sizes.get(shared)
            if got is None:
                got = sizes[shared] = math.prod(cards[i] for i in range(len(cards)) if shared >> i & 1)
            return got

        absorptions = []  # (least cost alone, marginalising at most, the least m as bits)
        union = 0
        for nodes, message in children:
            size = _size(graph, message)
            shared = sum(near[x] for x in message if x in near)
            most = _size(graph, message - nodes)
            absorptions.append((_least_absorption(add, size, scope(shared), most), _weighted(add, size - most), shared))
            union |= shared
        if (len(absorptions) > MOST_ORDERED_ABSORPTIONS
                or all(marginalise + _as_float(scope(union)) <= alone for alone, marginalise, _ in absorptions)):
            return sum(alone for alone, _, _ in absorptions)  # no order raises one above its least alone
        # least[T]: the least cost of absorbing the set T first (a bit mask over
        # absorptions); the last of T finds the scope holding every other m of T
        count = len(absorptions)
        least = [0.0] * (1 << count)
        held = [0] * (1 << count)
        for subset in range(1, 1 << count):
            low = subset & -subset
            held[subset] = held[subset ^ low] | absorptions[low.bit_length() - 1][2]
            best = math.inf
            for i, (alone, marginalise, shared) in enumerate(absorptions):
                if subset >> i & 1:
                    before = subset ^ (1 << i)
                    cost = max(alone, marginalise + _as_float(scope(held[before] | shared)))
                    best = min(best, least[before] + cost)
            least[subset] = best
        return least[-1]

    def grouping_lower_bound(self, graph: Network, nodes: frozenset[str], message: frozenset[str],
                             parents: tuple[str, ...], layer_nodes: frozenset[str]) -> float:
        """What the cluster-layers of the next layer to build pay, beyond the other parts
        of the bound, for holding ``parents``: two or more unplaced parents of the placed
        cluster-layer ``nodes`` (message ``message``), all in that layer, whose unplaced
        nodes are ``layer_nodes``. Parents apart: each cluster-layer that holds some of
        them, but not the first (``parents[0]``, whose absorption ``absorption_lower_bound``
        charges), absorbs the message again. Parents together: the cluster-layer's first elimination
        finds them all in its scope (``_grouping_excess``). The least over the ways to
        group them (proof in docs/cost-model.md)."""
        if len(parents) > MOST_GROUPED_PARENTS:
            return 0.0
        add = self.addition
        size = _size(graph, message)
        most = _size(graph, message - nodes)
        first = parents[0]
        cpt = {x: _size(graph, {x, *graph.parents[x]}) for x in layer_nodes}

        def part(group: list[str]) -> float:
            """A further absorption of the message by the cluster-layer holding ``group``,
            unless it holds ``first``, and the excess of its first elimination."""
            excess = _grouping_excess(graph, group, layer_nodes, cpt)
            if first in group:
                return excess
            near = set(group).union(*(graph.parents[x] for x in group))
            return excess + _least_absorption(add, size, _size(graph, message & near), most)

        parts = {}  # each group's part, computed once (a group is in many groupings)
        for count in range(1, len(parents) + 1):
            for group in itertools.combinations(parents, count):
                parts[group] = part(list(group))
        return min(sum(parts[tuple(group)] for group in groups) for groups in _set_partitions(list(parents)))


def leaves_no_cycles(model: Any) -> bool:
    """Whether evaluating ``model`` (and its bound hooks) leaves no reference cycles for
    Python's garbage collector to find: true of the built-in model, which builds only
    sets, tuples and numbers; a user model is not assumed to be so."""
    return type(model) is DcmapCost


def _least_absorption(add: float, size: int, kept_least: int, kept_most: int) -> float:
    """The least of ``a(|J| - |m|) + |m|`` (marginalising message ``J`` and multiplying
    in what is kept, ``m``, at least) over ``kept_least <= |m| <= kept_most``: it is linear
    in ``|m|``, so the least is at an end."""
    return min(_weighted(add, size - m) + _as_float(m) for m in (kept_least, kept_most))


def _grouping_excess(graph: Network, group: list[str], others: Iterable[str], cpt: dict[str, int]) -> float:
    """What the first elimination of a cluster-layer holding the nodes ``group`` (of one
    layer, all parents of one child cluster-layer, so all in its running scope) costs
    beyond that node's CPT: ``cpt(x) (|group - x| - 1)`` if it eliminates ``x`` of the
    group first, ``cpt(x) (|group| - 1)`` if another node ``x`` of the layer."""
    if len(group) < 2:
        return 0.0
    inside = [cpt[x] * (_size(graph, [z for z in group if z != x]) - 1) for x in group]
    whole = _size(graph, group)
    outside = [cpt[x] * (whole - 1) for x in others if x not in group]
    return _as_float(min(inside + outside))


def _set_partitions(items: list[str]) -> Iterator[list[list[str]]]:
    """Every partition of ``items`` into non-empty groups (Bell(n) of them)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _set_partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1:]]


def _parents_in(graph: Network, child: ChildClusterLayer, nodes: frozenset[str]) -> set[str]:
    """Nodes of ``nodes`` with a child in ``child``."""
    return {p for y in child.nodes for p in graph.parents[y] if p in nodes}


def _size(graph: Network, nodes: Iterable[str]) -> int:
    """``|S|``: the product of the nodes' cards (1 for the empty set), exact."""
    return math.prod(graph.card(x) for x in nodes)


def _as_float(count: int) -> float:
    """A table size as a float: ``inf`` past the float range."""
    try:
        return float(count)
    except OverflowError:
        return math.inf


def _weighted(weight: float, count: int) -> float:
    """``weight * count`` for ``weight >= 0`` and ``count >= 0``; 0 when the weight is 0,
    also for a count past the float range."""
    return weight * _as_float(count) if weight else 0.0


def _sum_out_weight(addition: float, card: int) -> float:
    """``addition * (card - 1) / card``, what summing out a node costs per table entry,
    also for a ``card`` past the float range (where it is ``addition``)."""
    try:
        return addition * (card - 1) / card
    except OverflowError:
        return addition * ((card - 1) / card)  # int / int is exact; same value when card is small


def _check_range(graph: Network, addition: float) -> None:
    """Raise a CostError when the all-singletons mapping of ``graph`` could cost more
    than a float holds (then every mapping might count ``inf``); checked once per graph.

    A singleton cluster-layer ``{x}`` costs at most ``(1 + a) cpt(x)`` for itself plus
    ``a cpt(y) + cpt(x)`` per child ``y`` (its message lies in ``y``'s CPT scope).
    """
    key = ("dcmap-range", addition)
    if key in graph.derived:
        return
    a = math.ceil(addition)
    cpt = {x: _size(graph, {x, *graph.parents[x]}) for x in graph.nodes}
    total = sum((1 + a) * cpt[x] + sum(a * cpt[y] + cpt[x] for y in graph.children[x]) for x in graph.nodes)
    if total > sys.float_info.max:
        worst = max(graph.nodes, key=cpt.__getitem__)
        raise CostError(
            f"the dcmap cost of {graph.name!r} passes the floating-point range (about 1.8e308): "
            f"node {worst!r} alone has a table of {scientific(cpt[worst])} entries"
        )
    graph.derived[key] = True


def elimination_positions(graph: Network, order: str) -> dict[str, tuple[int, int | str]]:
    """Sort keys giving the elimination order of SPEC 4.2 within a cluster-layer."""
    key = f"elimination-{order}"
    cached = graph.derived.get(key)
    if cached is not None:
        return cached
    cpt = {x: graph.card(x) * _size(graph, graph.parents[x]) for x in graph.nodes}
    index = graph.index
    positions: dict[str, tuple[int, int | str]]
    if order == "cpt":
        positions = {x: (cpt[x], index[x]) for x in graph.nodes}
    elif order == "canonical":
        positions = {x: (cpt[x], x) for x in graph.nodes}
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
    """A user cost function as a model: ``function(ctx)`` returns a cost or a pair
    (cost, message). Without a message, the cluster-layer passes its node set."""

    def __init__(self, function: Callable[[CostContext], Any], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", "user")

    def params(self) -> dict[str, Any]:
        return {}

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        value = self.function(ctx)
        return value if isinstance(value, tuple) else (value, ctx.nodes)


HOOKS = ("node_lower_bounds", "absorber_lower_bounds", "absorbed_lower_bounds", "absorption_lower_bound",
         "grouping_lower_bound", "message_lower_bound", "estimate")


class UserCost:
    """A user's cost model behind the checks the search relies on.

    Whatever the user's code raises, and any answer that is not what the interface asks
    for (a pair of a finite positive cost and a hashable message; finite numbers from
    the hooks; a dict of JSON values from ``params``), becomes a :class:`CostError` that
    names the model and the cluster-layer, with the original exception as its cause.
    The model's optional hooks (:data:`HOOKS`) are offered, checked, exactly when the
    model has them, because the search looks them up with ``getattr``.
    """

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name
        self._params = self._checked_params()

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        value = self._call("evaluate", ctx, ctx)
        if not (isinstance(value, tuple) and len(value) == 2):
            raise CostError(
                f"cost model {self.name}: evaluate returned {_short(value)}{_where(ctx)}; expected (cost, message)"
            )
        cost, message = value
        try:
            hash(message)
        except TypeError:
            raise CostError(
                f"cost model {self.name}: the message{_where(ctx)} is a {type(message).__name__}, "
                "which is not hashable (use a frozenset or a tuple)"
            ) from None
        return checked_cost(cost, ctx, self.name), message

    def __getattr__(self, attr: str) -> Any:
        model = self.__dict__.get("model")
        if attr in HOOKS and callable(getattr(model, attr, None)):
            return getattr(self, f"_checked_{attr}")
        raise AttributeError(attr)

    def _checked_node_lower_bounds(self, graph: Network) -> dict[str, float]:
        return self._checked_per_node("node_lower_bounds", graph)

    def _checked_absorber_lower_bounds(self, graph: Network) -> dict[str, float]:
        return self._checked_per_node("absorber_lower_bounds", graph)

    def _checked_absorbed_lower_bounds(self, graph: Network) -> dict[str, float]:
        return self._checked_per_node("absorbed_lower_bounds", graph)

    def _checked_per_node(self, method: str, graph: Network) -> dict[str, float]:
        """A per-node hook's answer: a dict from nodes to finite numbers."""
        bounds = self._call(method, None, graph)
        if not isinstance(bounds, Mapping):
            raise CostError(f"cost model {self.name}: {method} returned {_short(bounds)}; expected a dict")
        for x, bound in bounds.items():
            if not isinstance(x, str) or x not in graph.index:
                raise CostError(f"cost model {self.name}: {method} names {x!r}, which is not a node")
            self._number(method, x, bound)
        return dict(bounds)

    def _checked_message_lower_bound(self, graph: Network, nodes: frozenset[str], message: Hashable) -> float:
        return self._number("message_lower_bound", nodes, self._call("message_lower_bound", nodes, graph, nodes, message))

    def _checked_absorption_lower_bound(self, graph: Network, absorber: str, children: tuple) -> float:
        return self._number("absorption_lower_bound", absorber,
                            self._call("absorption_lower_bound", absorber, graph, absorber, children))

    def _checked_grouping_lower_bound(self, graph: Network, nodes: frozenset[str], message: Hashable,
                                      parents: tuple[str, ...], layer_nodes: frozenset[str]) -> float:
        return self._number("grouping_lower_bound", nodes,
                            self._call("grouping_lower_bound", nodes, graph, nodes, message, parents, layer_nodes))

    def _checked_estimate(self, graph: Network, nodes: frozenset[str]) -> float:
        return self._number("estimate", None, self._call("estimate", None, graph, nodes))

    def _call(self, method: str, at: Any, *args: Any) -> Any:
        """The model's ``method`` called with ``args``; ``at`` is what errors name (see :func:`_where`)."""
        try:
            return getattr(self.model, method)(*args)
        except Exception as exc:  # the user's code may fail in any way
            raise CostError(f"cost model {self.name}: {method} failed{_where(at)}: {type(exc).__name__}: {exc}") from exc
        except (SystemExit, KeyboardInterrupt) as exc:
            if isinstance(exc, KeyboardInterrupt) and INTERRUPT.is_set():
                raise  # the user's second Ctrl-C, which the command line turns into this
            # the user's code called sys.exit() or raised it: an error of that code, not an
            # end of the solve (which would leave no result and exit 0)
            raise CostError(f"cost model {self.name}: {method}{_where(at)} raised {type(exc).__name__}"
                            f"{f'({exc})' if str(exc) else ''}: a cost model must return, not exit") from exc

    def _number(self, method: str, at: Any, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise CostError(
                f"cost model {self.name}: {method} returned {_short(value)}{_where(at)}; expected a finite number"
            )
        return float(value)

    def _checked_params(self) -> dict[str, Any]:
        if not hasattr(self.model, "params"):
            return {}
        params = self._call("params", None)
        try:
            if not isinstance(params, Mapping):
                raise TypeError(f"it returned {_short(params)}")
            json.dumps(dict(params), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise CostError(
                f"cost model {self.name}: params() must return a dict of JSON values "
                f"(they go into the result file): {exc}"
            ) from None
        return dict(params)


def _where(at: CostContext | frozenset[str] | str | None) -> str:
    """Where an error happened, for its message: a cluster-layer (a context, or the
    nodes of a message's cluster-layer), a node, or nowhere in particular (None).
    Formatted only when an error is raised, not on every call."""
    if isinstance(at, CostContext):
        return f" on cluster-layer {sorted(at.nodes)} (layer {at.layer})"
    if isinstance(at, frozenset):
        return f" for cluster-layer {sorted(at)}"
    return "" if at is None else f" for node {at!r}"


def _short(value: Any) -> str:
    """``repr(value)``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def model_params(model: CostModel) -> dict[str, Any]:
    """A model's parameters for the result file (``{}`` if it has no ``params``)."""
    params = getattr(model, "params", None)
    return dict(params()) if callable(params) else {}


def load_cost(spec: str | CostModel | Callable, order: str = "cpt", addition: float = 0.6) -> CostModel:
    """A cost model from ``dcmap``, ``package.module:name``, a model or a callable.

    ``name`` may be a function (see :class:`FunctionCost`), a model object with an
    ``evaluate`` method, or a class whose no-argument instance is such a model. Every
    model but :class:`DcmapCost` comes back behind :class:`UserCost`.
    """
    if isinstance(spec, (DcmapCost, UserCost)):
        return spec
    if not isinstance(spec, str):
        return _user_model(spec, None)
    if spec == "dcmap":
        return DcmapCost(order=order, addition=addition)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--cost must be 'dcmap' or 'package.module:name', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a user module may fail in any way while importing
        raise CostError(f"cannot import cost module {module_name!r}: {type(exc).__name__}: {exc}") from exc
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no cost {attr!r}") from None
    if isinstance(target, type):
        try:
            target = target()
        except Exception as exc:  # the user's constructor
            raise CostError(f"cannot create cost model {spec}: {type(exc).__name__}: {exc}") from exc
    return _user_model(target, spec)


def _user_model(target: Any, spec: str | None) -> UserCost:
    """``target`` (a model object or a cost function) behind :class:`UserCost`, named by its
    own ``name``, else by ``spec``, else by its type."""
    if not hasattr(target, "evaluate"):
        if not callable(target):
            raise ValueError(f"{spec or _short(target)} is neither a cost function nor a cost model")
        target = FunctionCost(target, spec)
    name = getattr(target, "name", None) or spec or type(target).__name__
    return UserCost(target, str(name))


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
