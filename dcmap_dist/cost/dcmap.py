"""The built-in ``dcmap`` cost model (SPEC section 4): junction-tree-like counting of
the work each cluster-layer does, with the admissible bounds the search prunes with
(docs/cost-model.md)."""

from __future__ import annotations

import itertools
import math
import numbers
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..model.network import Network
from ..model.topology import added, layers, scientific
from .base import ChildClusterLayer, CostContext, CostError, child_order

__all__ = ["ELIMINATION_ORDERS", "DcmapCost"]

ELIMINATION_ORDERS = ("cpt", "paper", "canonical")


MOST_GROUPED_PARENTS = 8  # absorbed_lower_bounds tries every grouping of at most this many (Bell(8) = 4140)


MOST_ORDERED_ABSORPTIONS = 10  # absorption_lower_bound tries every order of at most this many (2^10 subsets)


MOST_PARTITIONED = 8  # layer_lower_bound tries every split of a linked group of at most this many parents (3^8 steps)


@dataclass(frozen=True)
class DcmapCost:
    """The computational cost of a backward propagation (SPEC 4.2, the paper's case study).

    One unit per table entry produced by a multiplication, ``addition`` (0.6) per
    addition. A table too large for a float counts ``inf``: such a cluster-layer is in
    no optimal mapping. A network in which the all-singletons mapping could pass the
    float range is a CostError.

    Parameters
    ----------
    order : {"cpt", "paper", "canonical"}
        The elimination order: ``cpt`` (ascending CPT size, ties by input order),
        ``paper`` (the published code's order) or ``canonical`` (``cpt`` with node names
        in place of the input order, also when absorbing children, so that costs do not
        depend on the order in which the network lists its nodes).
    addition : float
        The cost of one addition, against 1 for a multiplication.

    Examples
    --------
    >>> from dcmap_dist import DcmapCost, solve
    >>> round(solve("paper-example", cost=DcmapCost(order="paper")).optimal_cost, 6)
    54.0
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
        jcpt = _jcpt(graph, ctx.nodes)
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

    def ranks(self, graph: Network) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Each node's rank (by node index) in the three orders this model sorts by: by
        name (the canonical order's children), by elimination position
        (:meth:`evaluate`'s eliminations) and by layer then elimination position
        (:meth:`naive`): the native core sorts by these ranks."""
        nodes = graph.nodes
        position = elimination_positions(graph, self.order)
        layer = layers(graph)

        def rank(key: Callable[[str], Any]) -> tuple[int, ...]:
            ranked = {x: k for k, x in enumerate(sorted(nodes, key=key))}
            return tuple(ranked[x] for x in nodes)

        return rank(lambda x: x), rank(position.__getitem__), rank(lambda x: (layer[x], position[x]))

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
        either in separate absorbers or together, and then each of their eliminations
        multiplies the later ones in (``_grouping_excess``): the least over the ways to
        group them."""
        _check_range(graph, self.addition)
        layer = layers(graph)
        weight = min(self.addition, 1.0)
        cpt = {x: _size(graph, {x, *graph.parents[x]}) for x in graph.nodes}
        position = elimination_positions(graph, self.order)
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
                    total += min(added(left(g) + _grouping_excess(graph, g, position, cpt) for g in groups)
                                 for groups in _set_partitions(parents))
                else:  # at least one absorber, holding some of them
                    total += left(parents)
            if total > 0:
                bounds[y] = total
        return bounds

    def additive_absorbed_lower_bounds(self, graph: Network) -> dict[str, tuple[float, tuple[str, ...]]]:
        """For each node ``y`` with a parent of two states or more: what absorbing the message
        of the cluster-layer that holds ``y`` costs, at least, beyond the other bounds, in a
        form that adds up over nodes, and the parents that make it add up (the parents of
        two states or more). For a set ``A`` of nodes of one layer in which every node has
        such a parent that is no parent of another node of ``A``, the absorptions of the
        cluster-layers holding ``A`` leave at least the sum over ``A`` (proof in
        docs/cost-model.md): ``w (prod - sum)`` for every layer that holds parents of ``y``,
        the product over ``y``'s parents and the sum over its parents there, as in
        :meth:`absorbed_lower_bounds` without the groupings."""
        _check_range(graph, self.addition)
        layer = layers(graph)
        weight = min(self.addition, 1.0)
        bounds = {}
        for y in graph.nodes:
            parents = tuple(p for p in graph.parents[y] if graph.card(p) >= 2)
            if not parents:
                continue
            product = math.prod(graph.card(p) for p in parents)
            by_layer: dict[int, int] = {}  # every layer of y's parents holds an absorber
            for p in graph.parents[y]:
                by_layer[layer[p]] = by_layer.get(layer[p], 0) + (c if (c := graph.card(p)) >= 2 else 0)
            bounds[y] = (added(_weighted(weight, product - total) for total in by_layer.values()), parents)
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
            return added(alone for alone, _, _ in absorptions)  # no order raises one above its least alone
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

    def grouping_trade_offs(self, graph: Network, nodes: frozenset[str], message: frozenset[str],
                            parents: tuple[str, ...], layer_nodes: frozenset[str]) -> tuple[tuple[float, float], ...]:
        """What the cluster-layers of the next layer to build pay, beyond the other parts
        of the bound, for holding ``parents``: two or more unplaced parents of the placed
        cluster-layer ``nodes`` (message ``message``), all in that layer, whose unplaced
        nodes are ``layer_nodes``, as ``(excess, absorptions)`` pairs over the ways to group
        them. Parents apart: each cluster-layer that holds some of them, but not the first
        (``parents[0]``, whose absorption ``absorption_lower_bound`` charges), absorbs the
        message again (``absorptions``). Parents together: each of their eliminations finds
        the later ones in its scope (``_grouping_excess``: ``excess``, which the groupings
        of other placed cluster-layers may share). The pairs no other grouping beats in
        both, by excess (the first is 0: all apart). Proof in docs/cost-model.md."""
        if len(parents) > MOST_GROUPED_PARENTS:
            return ((0.0, 0.0),)
        add = self.addition
        size = _size(graph, message)
        most = _size(graph, message - nodes)
        first = parents[0]
        cpt = {x: _size(graph, {x, *graph.parents[x]}) for x in parents}
        position = elimination_positions(graph, self.order)

        def part(group: list[str]) -> tuple[float, float]:
            """The excess of the eliminations of ``group`` in the cluster-layer holding it,
            and its further absorption of the message unless it holds ``first``."""
            excess = _grouping_excess(graph, group, position, cpt)
            if first in group:
                return excess, 0.0
            return excess, _least_absorption(add, size, _size(graph, message & _jcpt(graph, group)), most)

        parts = {}  # each group's part, computed once (a group is in many groupings)
        for count in range(1, len(parents) + 1):
            for group in itertools.combinations(parents, count):
                parts[group] = part(list(group))
        pairs = sorted((added(parts[tuple(g)][0] for g in groups), added(parts[tuple(g)][1] for g in groups))
                       for groups in _set_partitions(list(parents)))
        front = [pairs[0]]
        for excess, absorptions in pairs:
            if absorptions < front[-1][1]:
                front.append((excess, absorptions))
        return tuple(front)

    def layer_lower_bound(self, graph: Network, children: tuple[tuple[frozenset[str], frozenset[str]], ...],
                          layer_nodes: tuple[str, ...]) -> float:
        """What the cluster-layers of the next layer to build, whose unplaced nodes are
        ``layer_nodes`` (in input order), pay at least, beyond the node bounds, to absorb
        the messages of the placed cluster-layers ``children`` ((nodes, message) pairs,
        each with a parent among ``layer_nodes``) and to eliminate those parents, which are
        in their running scope from the start: the least over the ways to split the
        parents into cluster-layers (which may also hold placed nodes of the layer), each paying ``a(|J| - |m|) + |m|`` at the
        cheaper end for every child it holds a parent of (``m`` holds at least what ``J``
        shares with its nodes and their parents) and the excess of their eliminations
        (``_grouping_excess``). Parents of no common child split apart at no loss, so the
        least is taken per group of parents linked by children, of at most
        :data:`MOST_PARTITIONED` nodes (a larger group counts 0). Proof in docs/cost-model.md."""
        add = self.addition
        position = elimination_positions(graph, self.order)
        kids = []  # per child: its parents in the layer, |J|, J, |J - K|
        for nodes, message in children:
            parents = {p for y in nodes for p in graph.parents[y]}
            kids.append(([x for x in layer_nodes if x in parents], _size(graph, message), message,
                         _size(graph, message - nodes)))
        total = 0.0
        for group in _linked_groups(layer_nodes, [parents for parents, _, _, _ in kids]):
            if len(group) > MOST_PARTITIONED:
                continue
            bit = {x: 1 << k for k, x in enumerate(group)}
            held = [sum(bit[x] for x in parents if x in bit) for parents, _, _, _ in kids]
            cpt = {x: _size(graph, {x, *graph.parents[x]}) for x in group}
            part = [0.0] * (1 << len(group))  # a subset of the group as one cluster-layer: its part
            for subset in range(1, 1 << len(group)):
                members = [x for x in group if subset & bit[x]]
                near = _jcpt(graph, members)
                value = added(_least_absorption(add, size, _size(graph, message & near), most)
                              for (_, size, message, most), mask in zip(kids, held) if mask & subset)
                part[subset] = value + _grouping_excess(graph, members, position, cpt)
            least = [0.0] * (1 << len(group))  # a subset split into cluster-layers: the least
            for subset in range(1, 1 << len(group)):
                low = subset & -subset
                others = subset ^ low
                best = math.inf
                sub = others
                while True:  # the cluster-layer holding the lowest node, and the rest
                    value = part[sub | low] + least[others ^ sub]
                    if value < best:
                        best = value
                    if not sub:
                        break
                    sub = (sub - 1) & others
                least[subset] = best
            total += least[-1]
        return total


def _jcpt(graph: Network, nodes: Iterable[str]) -> set[str]:
    """``Jcpt``: the ``nodes`` and their parents, every node their CPTs mention (what a
    cluster-layer of them keeps of an absorbed message)."""
    return set(nodes).union(*(graph.parents[x] for x in nodes))


def _least_absorption(add: float, size: int, kept_least: int, kept_most: int) -> float:
    """The least of ``a(|J| - |m|) + |m|`` (marginalising message ``J`` and multiplying
    in what is kept, ``m``, at least) over ``kept_least <= |m| <= kept_most``: it is linear
    in ``|m|``, so the least is at an end."""
    return min(_weighted(add, size - m) + _as_float(m) for m in (kept_least, kept_most))


def _grouping_excess(graph: Network, group: list[str], position: dict[str, tuple[int, int | str]],
                     cpt: dict[str, int]) -> float:
    """What eliminating the nodes ``group`` (of one layer, all parents of one child
    cluster-layer, so all in the running scope of the cluster-layer that holds them from
    its start) costs beyond their CPTs: each node, eliminated in the order ``position``
    gives, still finds the group's later nodes in the scope, ``cpt(z) (|later| - 1)``."""
    ordered = sorted(group, key=position.__getitem__)
    return _as_float(sum(cpt[z] * (_size(graph, ordered[j + 1:]) - 1) for j, z in enumerate(ordered)))


def _linked_groups(nodes: tuple[str, ...], parent_lists: list[list[str]]) -> list[list[str]]:
    """The ``nodes`` that are in some list of ``parent_lists``, in groups linked by sharing
    a list; the groups in the order of their first node, each in the order of ``nodes``."""
    group_of: dict[str, int] = {}
    groups: list[set[str]] = []
    for parents in parent_lists:
        joined = {group_of[x] for x in parents if x in group_of}
        merged = set(parents).union(*(groups[g] for g in joined))
        groups.append(merged)
        for x in merged:
            group_of[x] = len(groups) - 1
    live = {group_of[x] for x in group_of}
    order = {x: k for k, x in enumerate(nodes)}
    found = [sorted(groups[g], key=order.__getitem__) for g in live]
    return sorted(found, key=lambda group: order[group[0]])


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
    base = sum(cpt[x] * (1 + len(graph.children[x])) for x in graph.nodes)  # the multiplications
    weighed = sum(cpt[x] + sum(cpt[y] for y in graph.children[x]) for x in graph.nodes)  # per unit of addition
    if base + a * weighed > sys.float_info.max:
        if base <= sys.float_info.max / 2:  # the tables fit: the weight is what passes the range
            raise CostError(
                f"addition {addition:g} is too large: the dcmap cost of {graph.name!r} would pass the "
                f"floating-point range (about 1.8e308); give an addition weight of at most "
                f"{scientific(int(sys.float_info.max / 2 // weighed))}")
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


def leaves_no_cycles(model: Any) -> bool:
    """Whether evaluating ``model`` (and its bound hooks) leaves no reference cycles for
    Python's garbage collector to find: true of the built-in model, which builds only
    sets, tuples and numbers; a user model is not assumed to be so."""
    return type(model) is DcmapCost
