"""Every mapping a solve reports is checked from scratch first.

The search rebuilds its mappings from join masks and tied histories, and prices them
by sums carried along its branches. Before a mapping is reported (a solution, or an
improvement in the anytime trace), :class:`Audit` checks it without that machinery:
each cluster against SPEC section 2 (:func:`mappings.cluster_problem`), and the whole
mapping's cost with the cost model, cluster-layer by cluster-layer as
:func:`cost.evaluate_mapping` prices it. A mapping that fails is a flaw of the search, never of
the input: :class:`AuditError` names the mapping and what is wrong, and nothing wrong
is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

from ..cost.base import ChildClusterLayer, CostContext, CostModel, checked_cost, sort_children
from ..model.mappings import cluster_problem, mapping_names
from ..model.network import Network
from ..model.topology import Topology, bits

__all__ = ["Audit", "AuditError"]

TOLERANCE = 1e-9  # SPEC section 3's relative tolerance (a sum in another order differs in the last bits)


class AuditError(RuntimeError):
    """The search reported a mapping that is infeasible, or that does not cost what it
    said: a bug of the search."""


class Audit:
    """Checks the mappings of one connected component ``network`` of ``graph`` (what
    cost contexts see) under ``scheme`` and ``model``. Cluster checks and cluster-layer
    costs are remembered, so checking thousands of tied mappings costs little more than
    checking their distinct clusters. ``answers`` holds the model's answers to slow
    calls the search made (:attr:`Problem.slow_answers`, by context): taken instead of
    asking again, so that a model of seconds a call is not made to wait twice (the
    mapping's contexts and their sum are still the audit's own)."""

    def __init__(self, network: Network, graph: Network, model: CostModel, scheme: str,
                 topo: Topology | None = None, answers: Mapping[tuple, tuple[float, Hashable]] | None = None
                 ) -> None:
        self.network = network
        self._given = answers if answers is not None else {}
        self.graph = graph
        self.scheme = scheme
        self.topo = topo or Topology(network)
        self._model = model
        self._clusters: dict[int, str | None] = {}
        # a cluster-layer and its children's message ids -> its cost and message id
        self._layers: dict[tuple, tuple[float, int]] = {}
        self._splits: dict[int, list[tuple[int, int, list[int], list[int]]]] = {}  # see _split
        self._message_ids: dict[Hashable, int] = {}  # a message the model gave -> its id
        self._messages: list[Hashable] = []  # by id

    def check(self, clusters: tuple[int, ...] | list[int], cost: float,
              stop: Callable[[], None] | None = None) -> None:
        """Raise :class:`AuditError` unless ``clusters`` (node masks) is a feasible
        mapping of the component that costs ``cost`` within the tolerance. ``stop`` is
        called before each question to the cost model (it raises to stop the check: the
        limits of a listing)."""
        topo = self.topo
        covered = 0
        for cluster in clusters:
            if cluster & covered or not cluster:
                raise AuditError(self._named(clusters, "is not a partition of the nodes"))
            covered |= cluster
            problem = self._clusters.get(cluster)
            if cluster not in self._clusters:
                problem = self._clusters[cluster] = cluster_problem(topo, cluster, self.scheme)
            if problem:
                raise AuditError(self._named(clusters, f"has cluster {sorted(topo.names(cluster))}, which is "
                                                       f"infeasible under scheme {self.scheme}: {problem}"))
        if covered != topo.all_nodes:
            raise AuditError(self._named(clusters, "leaves nodes out"))
        total = self.cost(clusters, stop)
        if abs(total - cost) > TOLERANCE * max(abs(total), abs(cost)):
            raise AuditError(self._named(clusters, f"costs {total!r} by the cost model, not the {cost!r} "
                                                   "the search gave it (unless the cost model answers the same "
                                                   "context differently from call to call)"))

    def cost(self, clusters: tuple[int, ...] | list[int], stop: Callable[[], None] | None = None) -> float:
        """The cost of a mapping by the cost model, cluster-layer by cluster-layer from
        layer 0 up, as :func:`cost.evaluate_mapping` computes it (a test holds the two
        equal). A cluster-layer's answer depends on its nodes and its children's messages:
        each distinct context is asked of the model once, however many tied mappings share
        it (keyed by the messages' values, not by the cluster-layers below them: on a
        300-node chain, mappings that differ near the leaves would otherwise make every
        cluster-layer above the difference a new question)."""
        topo = self.topo
        parts = sorted((layer, k, members, nodes, children) for k, cluster in enumerate(clusters)
                       for layer, members, nodes, children in self._split(cluster))
        owner: dict[int, tuple[int, int, int]] = {}  # node -> its cluster-layer's mask, message id, cluster
        total = 0.0
        for layer, k, members, nodes, children in parts:
            kids: dict[int, tuple[int, bool]] = {}
            for j in children:
                mask, ident, cluster = owner[j]
                kids[mask] = (ident, cluster == k)
            key = (members, tuple(sorted(kids.items())))  # each child's mask, message id and sameness
            got = self._layers.get(key)
            if got is None:
                got = self._layers[key] = self._ask(members, layer, kids, stop)
            total += got[0]
            held = (members, got[1], k)
            for i in nodes:
                owner[i] = held
        return total

    def _split(self, cluster: int) -> list[tuple[int, int, list[int], list[int]]]:
        """A cluster's cluster-layers, from layer 0 up: each one's layer, mask, nodes and
        its nodes' children (remembered: tied mappings share most of their clusters)."""
        got = self._splits.get(cluster)
        if got is None:
            topo = self.topo
            layers: dict[int, int] = {}
            for i in bits(cluster):
                layers[topo.layer[i]] = layers.get(topo.layer[i], 0) | 1 << i
            got = []
            for layer, members in sorted(layers.items()):
                children = 0
                for i in bits(members):
                    children |= topo.children[i]
                got.append((layer, members, bits(members), bits(children)))
            self._splits[cluster] = got
        return got

    def _ask(self, members: int, layer: int, kids: dict[int, tuple[int, bool]],
             stop: Callable[[], None] | None) -> tuple[float, int]:
        """The model's cost of a cluster-layer whose children's cluster-layers are ``kids``
        (mask -> message id, whether in the same cluster), and its message's id."""
        topo = self.topo
        messages = self._messages
        children = sort_children(ChildClusterLayer(topo.names(mask), topo.layer[(mask & -mask).bit_length() - 1],
                                                   same, messages[ident])
                                 for mask, (ident, same) in kids.items())
        ctx = CostContext(topo.names(members), layer, self.graph, children)
        given = self._given.get((ctx.nodes, ctx.layer, ctx.children))
        if given is None and stop is not None:
            stop()
        value, message = given if given is not None else self._model.evaluate(ctx)
        ident = self._message_ids.setdefault(message, len(messages))
        if ident == len(messages):
            messages.append(message)
        return checked_cost(value, ctx), ident

    def _named(self, clusters, problem: str) -> str:
        shown = " ".join("{" + ", ".join(c) + "}" for c in mapping_names(self.topo, clusters) if len(c) > 1)
        return (f"the search reported a mapping that {problem}: {shown or 'every node alone'} "
                f"(the other nodes alone)")
