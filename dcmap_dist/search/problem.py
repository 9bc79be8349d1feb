"""The expansion machinery shared by DCMAP and breadth-first search.

A :class:`~dcmap_dist.search.branch.Branch` holds one partial mapping (its layer, the
nodes of it placed, the open components, the frontier cluster-layers, its cost and its
history since its last link record).

One expansion (one *iteration*) takes a proposal, "which nodes of ``layer``
join component ``c``", and makes one child branch per feasible combination
(:func:`dcmap_dist.search.combinations.combinations`), each fixing ``c``'s cluster-layer at
``layer``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable

from ..cost.base import ChildClusterLayer, CostContext, CostModel, checked_cost, sort_children
from ..limits import COST_CALL, SLOW_CALL, SearchInterrupted, Stopwatch
from ..model.network import Network
from ..model.topology import Memo, RecentMemo, Topology, bits, union_of
from ..settings import LINK_KEYS
from .bounds import LowerBound
from .branch import Branch
from .combinations import combinations
from .keys import LinkKeys
from .messages import MessageCodes, node_set_messages
from .tolerance import within

__all__ = ["Problem", "closures_of", "joins_to_clusters"]

MASKS_KEPT = 8192  # masks remembered in each of the two generations of Problem._masks


def _itself(mask: int) -> int:
    return mask


class Problem:
    """A connected network, a cost model and a scheme, precomputed for the search."""

    def __init__(self, network: Network, model: CostModel, scheme: str = "merge",
                 graph: Network | None = None, link_key: str = "lean", use_bound: bool = True) -> None:
        if link_key not in LINK_KEYS:
            raise ValueError(f"unknown link key {link_key!r}: choose one of {', '.join(LINK_KEYS)}")
        self.use_bound = use_bound
        self.network = network
        self.graph = graph or network  # what cost contexts see: the whole network
        self.model = model
        self.scheme = scheme
        self.topo = topo = Topology(network)
        self._costs = Memo(self._evaluate)  # (nodes, same, children...) -> (cost, item): see _evaluate
        self.watch: Stopwatch | None = None  # the limits of the expansion running (see _evaluate)
        # the answers of the model's slow calls, by context, for the audit (search/audit.py) to
        # take instead of asking again: (nodes, layer, children) -> (cost, message)
        self.slow_answers: dict[tuple, tuple[float, Hashable]] = {}
        self._items: dict[tuple, tuple] = {}  # frontier items (nodes, message), one object per value
        # a child's new masks (joined, placed, fixed, anchors), one object per recent value
        self._masks = RecentMemo(_itself, MASKS_KEPT)
        # the messages as the search holds them: codes, or one object per distinct value
        self.messages = MessageCodes(self.graph, node_set_messages(model))
        # node-set facts, memoised (a hit is one dict lookup: these are read tens to
        # hundreds of times per iteration)
        self.parents_of = Memo(lambda mask: union_of(topo.parents, mask))  # all parents of a set
        self.children_of = Memo(lambda mask: union_of(topo.children, mask))  # all its children
        self.closures = Memo(lambda members: closures_of(topo, members))
        self.keys = LinkKeys(topo, link_key, self.parents_of, self.closures)  # keys.of(branch): its link key
        self._estimates: dict[int, float] = {}
        self._estimator = getattr(model, "estimate", None)
        # bound.lookup(layer, assigned, frontier): the admissible bound on the cost still to come
        self.bound = LowerBound(topo, self.graph, model if use_bound else None, self.parents_of,
                                self.messages.value)

    # -- small cached facts -------------------------------------------------
    def remaining(self, branch: Branch) -> int:
        """Mask of the nodes not yet placed on ``branch``."""
        topo = self.topo
        if branch.layer_done:
            return topo.above[branch.layer]
        return topo.above[branch.layer] | (topo.layer_mask[branch.layer] & ~branch.assigned)

    def lower_bound(self, branch: Branch) -> float:
        """Admissible bound on the cost still to come (:mod:`dcmap_dist.search.bounds`)."""
        return self.bound.lookup(branch.layer, branch.assigned, branch.frontier)

    def estimate(self, branch: Branch) -> float:
        """The paper's ``h``: the model's estimate of the rest, else the lower bound."""
        if self._estimator is None:
            return self.lower_bound(branch)
        return self.rest_estimate(self.remaining(branch))

    @property
    def has_estimator(self) -> bool:
        """Whether the model gives the paper's ``h`` (``estimate``); else the bound is ``h``."""
        return self._estimator is not None

    def frontier_bound(self, layer: int, assigned: int, frontier: tuple[tuple[int, Hashable], ...]) -> float:
        """The bound on the cost still to come from ``layer`` with ``assigned`` placed (-1:
        all of it) and ``frontier``, computed afresh (search/core.py's Reference: the native
        core remembers its answers itself)."""
        return self.bound.compute(layer, assigned, frontier)

    def rest_estimate(self, rest: int) -> float:
        """The model's estimate of the cost of the nodes ``rest`` (a mask), memoised."""
        got = self._estimates.get(rest)
        if got is None:
            got = self._estimator(self.graph, self.topo.names(rest)) if rest else 0.0
            self._estimates[rest] = got
        return got

    def score(self, branch: Branch) -> Branch:
        """Fill in ``estimate`` (g_hat) and ``bound`` (cost + lower bound)."""
        branch.bound = branch.cost + self.lower_bound(branch)
        branch.estimate = branch.cost + self.estimate(branch)
        return branch

    def cluster_layer_cost(self, nodes: int, cluster: int,
                           children: tuple[tuple[int, Hashable], ...]) -> tuple[float, tuple[int, Hashable]]:
        """Cost and frontier item ``(nodes, message)`` of cluster-layer ``nodes`` in the
        cluster ``cluster`` (a mask) given its children ``(members, message)``, memoised;
        the item is one object per value, shared by every branch that holds it."""
        key = [nodes, 0]
        same = 0
        for item in children:
            key.append(item[0])
            key.append(item[1])
            same |= item[0] & cluster
        key[1] = same
        return self._costs[tuple(key)]

    def cluster_layer(self, key: tuple, watch: Stopwatch | None = None) -> tuple[float, Hashable]:
        """The cost and message of the cluster-layer a key of the cost memo names (see
        :meth:`_evaluate`), memoised; with a ``watch``, its limits are checked after a slow
        call of the model (search/core.py's Reference: the native core asks this)."""
        self.watch = watch
        try:
            value, item = self._costs[key]
        finally:
            self.watch = None
        return value, item[1]

    def _evaluate(self, key: tuple) -> tuple[float, tuple[int, Hashable]]:
        """The cost and frontier item for a key of the cost memo (a miss): ``(nodes, same,
        members, message, members, message, ...)``, the cluster-layer ``nodes`` and its
        children, ``same`` the union of those in its cluster (flat: a cluster-layer of a wide
        network has up to a hundred children)."""
        nodes, same = key[0], key[1]
        topo = self.topo
        decoded = self.messages.value
        kids = [
            ChildClusterLayer(topo.names(m), topo.layer[(m & -m).bit_length() - 1], m & same != 0, decoded(msg))
            for m, msg in zip(key[2::2], key[3::2])
        ]
        layer = topo.layer[(nodes & -nodes).bit_length() - 1]
        ctx = CostContext(topo.names(nodes), layer, self.graph, sort_children(kids))
        started = COST_CALL.started = time.perf_counter()
        try:
            value, message = self.model.evaluate(ctx)
        finally:
            COST_CALL.started = None
        item = (self._masks.lookup(nodes), self.messages.held(message))
        got = checked_cost(value, ctx), self._items.setdefault(item, item)
        if time.perf_counter() - started < SLOW_CALL:
            return got
        self.slow_answers[ctx.nodes, ctx.layer, ctx.children] = (got[0], message)
        if self.watch is not None:
            # a slow cost model: the limits are checked after each of its calls, not only
            # every Stopwatch.every steps (the value is kept: a call is never made twice)
            self._costs[key] = got
            reason = self.watch.resources_exceeded()
            if reason:
                raise SearchInterrupted(reason)
        return got

    # -- the search tree ----------------------------------------------------
    def root(self) -> Branch:
        """Layer 0 placed: every leaf is its own cluster-layer."""
        cost = 0.0
        comps = []
        frontier = []
        for i in bits(self.topo.layer_mask[0]):
            c, item = self.cluster_layer_cost(1 << i, 1 << i, ())
            cost += c
            comps.append(1 << i)
            frontier.append(item)
        return self.score(self.finish_layer(Branch(0, -1, tuple(comps), tuple(frontier), cost)))

    def next_proposal(self, branch: Branch) -> int:
        """Index of the component to expand next: among the unfixed ones with an
        unplaced candidate node, the one with the most members, then the fewest
        candidates (ties by position). Any choice is exact; this one needs the fewest
        iterations on most networks measured (docs/search.md, "Which component is
        proposed next")."""
        free = self.topo.layer_mask[branch.layer] & ~branch.assigned
        best = -1
        best_size = 0
        best_count = 0
        fixed = branch.fixed
        for idx, members in enumerate(branch.comps):
            if fixed >> idx & 1:
                continue
            count = (self.parents_of[members] & free).bit_count()
            if count == 0:
                continue
            size = members.bit_count()
            if size > best_size or (size == best_size and count < best_count):
                best, best_size, best_count = idx, size, count
        return best

    def expand(self, branch: Branch, proposal: int, g_min: float = math.inf,
               watch: Stopwatch | None = None, most: int | None = None) -> list[Branch]:
        """Children of ``branch`` for ``proposal`` (a component index), one per feasible
        combination, scored; those whose bound exceeds ``g_min`` are dropped. With a
        ``watch``, a limit reached mid-expansion raises SearchInterrupted. ``most``
        caps the combinations tried (for heuristics only: the search needs them all)."""
        topo = self.topo
        layer = branch.layer
        free = topo.layer_mask[layer] & ~branch.assigned
        below = tuple([c for c in branch.frontier if topo.layer[(c[0] & -c[0]).bit_length() - 1] < layer])
        parents_of = self.parents_of
        # (bit, parents) of each unfixed component, by index
        fixed = branch.fixed
        unfixed = [(1 << j, parents_of[members]) for j, members in enumerate(branch.comps) if not fixed >> j & 1]
        children = []
        # node -> its own cluster-layer's cost and frontier item (members, message)
        single_costs: dict[int, tuple[float, tuple[int, Hashable]]] = {}
        reach: dict[int, int] = {}  # merged -> the parents of the unfixed components outside it
        self.watch = watch
        try:
            for joined, merged in combinations(branch.comps, fixed, proposal, free, self.scheme, topo, parents_of,
                                               self.closures, watch, most):
                child = self._apply(branch, proposal, joined, merged, free, below, unfixed, single_costs, reach,
                                    g_min)
                if child is not None:
                    children.append(child)
        finally:
            self.watch = None
        return children

    def _new_cluster_layer(self, nodes: int, cluster: int,
                           frontier: tuple[tuple[int, Hashable], ...]) -> tuple[float, tuple[int, Hashable]]:
        """Cost and frontier item of a new cluster-layer ``nodes`` whose component (after merging) is
        ``cluster``; its children are among the frontier cluster-layers ``frontier``."""
        kids = self.children_of[nodes]
        return self.cluster_layer_cost(nodes, cluster, tuple([item for item in frontier if item[0] & kids]))

    def _apply(self, branch: Branch, proposal: int, joined: int, merged: int, free: int,
               below: tuple[tuple[int, Hashable], ...], unfixed: list[tuple[int, int]],
               single_costs: dict[int, tuple[float, tuple[int, Hashable]]], reach: dict[int, int],
               g_min: float = math.inf) -> Branch | None:
        """The child branch of one combination, scored; None if its bound exceeds
        ``g_min`` (found from its cost and frontier before the rest of it is built).
        Layer nodes left with no unfixed component to join become their own
        cluster-layers in the same step; ``single_costs`` remembers their cost and
        frontier item for the expansion (every combination of it sees the same ``below``).
        ``unfixed``: the bit and the parents of each unfixed component; ``reach``
        remembers, for the expansion, the parents of those outside each ``merged``."""
        comps = branch.comps
        cost = branch.cost
        frontier = list(branch.frontier)
        if joined:
            union = joined
            for j in bits(merged):
                union |= comps[j]
            c, item = self._new_cluster_layer(joined, union, below)
            cost += c
            frontier.append(item)
        reachable = reach.get(merged)  # parents of the components still unfixed
        if reachable is None:
            reachable = 0
            for bit, parents in unfixed:  # merged holds the proposal
                if not merged & bit:
                    reachable |= parents
            reach[merged] = reachable
        singles = free & ~joined & ~reachable
        for i in bits(singles):
            single = single_costs.get(i)
            if single is None:
                single = single_costs[i] = self._new_cluster_layer(1 << i, 1 << i, below)
            cost += single[0]
            frontier.append(single[1])
        layer = branch.layer
        assigned = branch.assigned | joined | singles
        done = assigned == self.topo.layer_mask[layer]
        if done:  # the layer is complete: keep what the future reads (as finish_layer)
            assigned = -1
            frontier = self._read_later(frontier, layer)
        known = self.bound.known(layer, assigned, tuple(frontier))
        bound = cost + known[0]
        if not within(bound, g_min):
            return None
        joins = branch.joins
        masks = self._masks
        if joined:
            fixed = 0
            new_comps = []
            for j, members in enumerate(comps):
                if not (merged >> j) & 1:
                    if branch.fixed >> j & 1:
                        fixed |= 1 << len(new_comps)
                    new_comps.append(members)
            fixed |= 1 << len(new_comps)
            new_comps.append(masks.lookup(union))
            # anchor on a child of a joiner in each merged component: a frontier node,
            # the same on every branch linked to this one, so tied histories rebuild
            anchors = joined
            kids = self.children_of[joined]
            for j in bits(merged):
                touched = comps[j] & kids
                anchors |= touched & -touched
            if anchors & (anchors - 1):
                joins = joins + (masks.lookup(anchors),)
        else:
            fixed = branch.fixed | (1 << proposal)
            new_comps = comps  # shared with the parent unless singles are added
        if singles:
            new_comps = list(new_comps)
            for i in bits(singles):
                fixed |= 1 << len(new_comps)
                new_comps.append(single_costs[i][1][0])  # the item's own mask (see _evaluate)
        if done:
            new_comps = self._comps_read_later(new_comps, layer)
            fixed = 0
        else:
            assigned = masks.lookup(assigned)
            fixed = masks.lookup(fixed)
        child = Branch(layer, assigned, tuple(new_comps), known[1], cost, joins, branch.link, fixed=fixed)
        child.bound = bound
        child.estimate = bound if self._estimator is None else cost + self.estimate(child)
        return child

    def finish_layer(self, branch: Branch) -> Branch:
        """Close a completed layer: drop components and cluster-layers the future cannot
        read; the branch then stands at the start of the next layer (``assigned = -1``
        marks "layer done, not yet linked")."""
        comps = self._comps_read_later(branch.comps, branch.layer)
        frontier = tuple(self._read_later(branch.frontier, branch.layer))
        return Branch(branch.layer, -1, comps, frontier, branch.cost, branch.joins, branch.link)

    def _comps_read_later(self, comps: list | tuple, layer: int) -> tuple[int, ...]:
        """The components a completed layer keeps, sorted (all unfixed again for the next
        layer)."""
        above = self.topo.above[layer]
        parents_of = self.parents_of
        return tuple(sorted([members for members in comps if parents_of[members] & above]))

    def _read_later(self, items: list | tuple, layer: int) -> list:
        """The ``(mask, ...)`` items with a parent above ``layer``, sorted: the components
        and cluster-layers a completed layer keeps."""
        above = self.topo.above[layer]
        return sorted([item for item in items if self.parents_of[item[0]] & above])

    def link_key(self, branch: Branch) -> tuple:
        """The dominance key of a branch (:meth:`keys.LinkKeys.of`)."""
        return self.keys.of(branch)

    def is_complete(self, branch: Branch) -> bool:
        return branch.layer_done and branch.layer == self.topo.l_max


def closures_of(topo: Topology, members: int) -> tuple[int, int, int, int]:
    """Ancestors, descendants (outside ``members``), neighbours and layers of a node
    set (read through the memo :attr:`Problem.closures`)."""
    ancestors = descendants = touch = layers_used = 0
    for i in bits(members):
        ancestors |= topo.anc[i]
        descendants |= topo.desc[i]
        touch |= topo.neighbours[i]
        layers_used |= 1 << topo.layer[i]
    return ancestors & ~members, descendants & ~members, touch & ~members, layers_used


def joins_to_clusters(topo: Topology, joins: tuple[int, ...]) -> tuple[int, ...]:
    """Union the join masks into a partition of all nodes (cluster masks, sorted)."""
    parent = list(range(topo.n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for join in joins:
        members = bits(join)
        root = find(members[0])
        for j in members[1:]:
            parent[find(j)] = root
    clusters: dict[int, int] = {}
    for i in range(topo.n):
        clusters[find(i)] = clusters.get(find(i), 0) | (1 << i)
    return tuple(sorted(clusters.values()))
