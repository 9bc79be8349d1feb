"""Replicating a k-slice mapping over T slices (the paper's discussion: for a k-th
order dynamic model, clustering k slices and replicating the result should suffice).

Definition (block tiling). The input is a 2-slice template, a feasible mapping of the
template unrolled to ``k`` slices (node names ``<base>_<s>``, ``s < k``), and a number
of slices ``T``. The slices of the T-slice network are grouped in blocks of ``k``:
``[0, k)``, ``[k, 2k)``, ... Each block gets a copy of every cluster, shifted by the
block's first slice ``b`` (``<base>_<s>`` becomes ``<base>_<s + b>``):

* A cluster that spans a temporal arc inside the k slices is copied whole, within
  each block; no cluster spans two blocks, so the temporal arcs between blocks always
  join different clusters.
* In a last, truncated block (``T`` not a multiple of ``k``, or ``T < k``), a cluster
  keeps only its nodes in the kept slices (none: it is dropped); a cluster that lost
  nodes is *cut*, and is split into the weakly connected components of the arcs among
  its remaining members.
* Every cluster placed so far is weakly connected and contiguous in the T-slice
  network (a directed path between two members of one block never leaves the block's
  slices, where the arcs are those of the k slices), but its layers are not those of
  the k-slice network: later slices lift the layers of earlier ones, so a cluster may
  not be layer-connected there (SPEC section 2). Such a cluster is *repaired*: split
  into its weakly connected components (a whole copy is one component), and a
  component that is still infeasible into singletons, which are always feasible.

For ``T = k`` the replication is the mapping itself. The result always passes
:func:`dcmap_dist.model.mappings.check_mapping` on ``unroll(template, T)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cost.base import evaluate_mapping
from ..cost.user import load_cost
from ..io.dynamic import check_unrollable, unroll
from ..model.mappings import check_mapping, check_scheme, cluster_problem
from ..model.network import Network
from ..model.topology import Topology, bits

__all__ = ["Replication", "best_replication", "mapping_cost", "replicate"]


@dataclass(frozen=True)
class Replication:
    """A replicated mapping: its clusters (sorted lists of node names, sorted), and
    how many cluster copies were placed whole (``copied``), cut by a truncated last
    block (``cut``), and found infeasible and repaired (``repaired``, each counting
    one infeasible weakly connected piece split into singletons)."""

    clusters: list[list[str]]
    copied: int
    cut: int
    repaired: int


class _Tiling:
    """The k-slice and T-slice networks of a template, for replicating many mappings."""

    def __init__(self, template: Mapping[str, Any], k: int, slices: int, scheme: str) -> None:
        for value, what in ((k, "k (the slices of the mapping)"), (slices, "the number of slices T")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
        check_unrollable(template)
        self.k, self.slices, self.scheme = k, slices, check_scheme(scheme)
        self.small = unroll(template, k)
        self.network = unroll(template, slices)
        self.topo = Topology(self.network)
        width = len(self.small) // k  # unroll lists the nodes slice by slice, in template order
        bases = [x.removesuffix("_0") for x in self.small.nodes[:width]]
        self.place = {f"{b}_{s}": (b, s) for s in range(k) for b in bases}

    def replicate(self, mapping: Iterable[Iterable[str]]) -> Replication:
        """The replication of one mapping of the k-slice network (checked feasible first)."""
        clusters = [[self.place[x] for x in sorted(c)] for c in check_mapping(self.small, mapping, self.scheme)]
        topo = self.topo
        placed: list[list[str]] = []
        copied = cut = repaired = 0
        for first in range(0, self.slices, self.k):
            kept = min(self.k, self.slices - first)
            for cluster in clusters:
                members = [f"{b}_{s + first}" for b, s in cluster if s < kept]
                if not members:
                    continue
                if len(members) == len(cluster):
                    copied += 1
                else:
                    cut += 1
                remaining = topo.mask(members)
                while remaining:
                    piece = topo.component((remaining & -remaining).bit_length() - 1, remaining)
                    remaining &= ~piece
                    if cluster_problem(topo, piece, self.scheme) is None:
                        placed.append(sorted(topo.names(piece)))
                    else:
                        repaired += 1
                        placed += [[topo.network.nodes[i]] for i in bits(piece)]
        return Replication(sorted(placed), copied, cut, repaired)


def replicate(
    template: Mapping[str, Any],
    mapping: Iterable[Iterable[str]],
    k: int,
    slices: int,
    scheme: str = "merge",
) -> Replication:
    """Replicate ``mapping``, a feasible mapping of ``template`` unrolled to ``k``
    slices, over ``slices`` slices by block tiling (see the module's docstring).

    Raises a ValueError for a bad ``k`` or ``slices`` or an unknown scheme, and a
    :class:`~dcmap_dist.model.mappings.MappingError` when ``mapping`` is not a feasible
    mapping of the k-slice network.
    """
    return _Tiling(template, k, slices, scheme).replicate(mapping)


def mapping_cost(
    network: Network,
    clusters: Iterable[Iterable[str]],
    cost: str = "dcmap",
    order: str = "cpt",
    addition: float = 0.6,
) -> float:
    """A mapping's total cost under the cost model a solve with the same options uses:
    the sum of :func:`dcmap_dist.cost.base.evaluate_mapping`'s rows, as ``dcmap cost`` prints it."""
    model = load_cost(cost, order=order, addition=addition)
    return sum(row.cost for row in evaluate_mapping(network, clusters, model))


def best_replication(
    template: Mapping[str, Any],
    mappings: Sequence[Iterable[Iterable[str]]],
    k: int,
    slices: int,
    scheme: str = "merge",
    **cost_options: Any,
) -> tuple[float, Replication]:
    """The cheapest replication over ``slices`` slices of ``mappings`` (mappings of the
    k-slice network, such as every listed optimum of its solve), with its cost under
    ``cost_options`` (see :func:`mapping_cost`); the first of equal cost."""
    if not mappings:
        raise ValueError("best_replication needs at least one k-slice mapping")
    tiling = _Tiling(template, k, slices, scheme)
    replicated = (tiling.replicate(mapping) for mapping in mappings)
    scored = ((mapping_cost(tiling.network, r.clusters, **cost_options), r) for r in replicated)
    return min(scored, key=lambda item: item[0])
