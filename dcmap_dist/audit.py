"""Every mapping a solve reports is checked from scratch first.

The search rebuilds its mappings from join masks and tied histories, and prices them
by sums carried along its branches. Before a mapping is reported (a solution, or an
improvement in the anytime trace), :class:`Audit` checks it without that machinery:
each cluster against SPEC section 2 (:func:`mappings.cluster_problem`), and the whole
mapping's cost with the cost model, cluster-layer by cluster-layer
(:func:`cost.evaluate_mapping`). A mapping that fails is a flaw of the search, never of
the input: :class:`AuditError` names the mapping and what is wrong, and nothing wrong
is reported.
"""

from __future__ import annotations

from collections.abc import Hashable

from .cost import CostContext, CostModel, evaluate_mapping
from .mappings import cluster_problem, mapping_names
from .network import Network
from .structure import Topology

__all__ = ["Audit", "AuditError"]

TOLERANCE = 1e-9  # SPEC section 3's relative tolerance (a sum in another order differs in the last bits)


class AuditError(RuntimeError):
    """The search reported a mapping that is infeasible, or that does not cost what it
    said: a bug of the search."""


class Audit:
    """Checks the mappings of one connected component ``network`` of ``graph`` (what
    cost contexts see) under ``scheme`` and ``model``. Cluster checks and cluster-layer
    costs are remembered, so checking thousands of tied mappings costs little more than
    checking their distinct clusters."""

    def __init__(self, network: Network, graph: Network, model: CostModel, scheme: str,
                 topo: Topology | None = None) -> None:
        self.network = network
        self.graph = graph
        self.scheme = scheme
        self.topo = topo or Topology(network)
        self._model = model
        self._clusters: dict[int, str | None] = {}
        self._costs: dict[CostContext, tuple[float, Hashable]] = {}

    def check(self, clusters: tuple[int, ...] | list[int], cost: float) -> None:
        """Raise :class:`AuditError` unless ``clusters`` (node masks) is a feasible
        mapping of the component that costs ``cost`` within the tolerance."""
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
        names = [topo.names(c) for c in clusters]
        total = sum(part.cost for part in evaluate_mapping(self.network, names, self, graph=self.graph))
        if abs(total - cost) > TOLERANCE * max(abs(total), abs(cost)):
            raise AuditError(self._named(clusters, f"costs {total!r} by the cost model, not the {cost!r} "
                                                   f"the search gave it"))

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        """The model's answer for one cluster-layer, remembered (:func:`evaluate_mapping`
        calls this)."""
        got = self._costs.get(ctx)
        if got is None:
            got = self._costs[ctx] = self._model.evaluate(ctx)
        return got

    def _named(self, clusters, problem: str) -> str:
        shown = " ".join("{" + ", ".join(c) + "}" for c in mapping_names(self.topo, clusters) if len(c) > 1)
        return (f"the search reported a mapping that {problem}: {shown or 'every node alone'} "
                f"(the other nodes alone)")
