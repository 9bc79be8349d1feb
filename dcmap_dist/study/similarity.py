"""How alike two cluster mappings are: the paper's same-cluster similarity (section 5).

A mapping of ``n`` nodes has the ``n x n`` same-cluster matrix ``Y``: ``Y[i, j] = 1``
when nodes ``i`` and ``j`` are in the same cluster, the diagonal included (a node is
in its own cluster). The similarity of ``Y`` to an optimal mapping ``Y*`` is
``sum(Y * Y*) / sum(Y*)``, the share of the optimum's same-cluster pairs that ``Y``
also puts together; the similarity to a set of optimal mappings is the largest of
these. It is 1 for an optimal mapping (and for any mapping that merges optimal
clusters), and ``n / sum(Y*)`` for the all-singletons mapping.

The sums are computed from cluster labels, without building the matrices: ``sum(Y *
Y*)`` is the number of ordered node pairs ``(i, j)`` that share a cluster in both, the
sum over pairs of clusters of ``|A & B| ** 2``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from ..model.mappings import MappingError

__all__ = ["cluster_labels", "mapping_matrix", "similarities", "similarity"]


def cluster_labels(clusters: Iterable[Iterable[Hashable]], nodes: Sequence[Hashable]) -> np.ndarray:
    """The cluster number of each of ``nodes`` (clusters numbered in the order given).

    Raises :class:`~dcmap_dist.model.mappings.MappingError` naming the problem when the
    clusters do not partition ``nodes``: an unknown node, a node twice, a node in
    no cluster, an empty cluster.
    """
    index = {x: i for i, x in enumerate(nodes)}
    labels = np.full(len(index), -1, dtype=np.int64)
    for k, cluster in enumerate(clusters):
        members = list(cluster)
        if not members:
            raise MappingError(f"cluster {k} is empty")
        for x in members:
            i = index.get(x)
            if i is None:
                raise MappingError(f"cluster {k} names unknown node {x!r}")
            if labels[i] >= 0:
                where = f"twice in cluster {k}" if labels[i] == k else f"in two clusters ({labels[i]} and {k})"
                raise MappingError(f"node {x!r} is {where}")
            labels[i] = k
    missing = np.flatnonzero(labels < 0)
    if missing.size:
        raise MappingError(f"node {nodes[missing[0]]!r} is in no cluster ({missing.size} nodes missing)")
    return labels


def mapping_matrix(clusters: Iterable[Iterable[Hashable]], nodes: Sequence[Hashable]) -> np.ndarray:
    """The paper's ``Y`` of a mapping: ``Y[i, j] = 1`` when ``nodes[i]`` and ``nodes[j]``
    share a cluster, the diagonal included; rows and columns in the order of ``nodes``.
    (Not :func:`dcmap_dist.model.topology.same_cluster_matrix`, the paper's ``S``: which
    nodes *may* share a cluster.)"""
    labels = cluster_labels(clusters, nodes)
    return (labels[:, None] == labels[None, :]).astype(np.int8)


def similarity(clusters: Iterable[Iterable[Hashable]], optimal_mappings: Iterable[Iterable[Iterable[Hashable]]],
               nodes: Sequence[Hashable]) -> float:
    """The paper's similarity of a mapping to a set of optimal mappings: the largest, over
    the optimal ``Y*``, of ``sum(Y * Y*) / sum(Y*)`` (see the module's docstring)."""
    return similarities([clusters], optimal_mappings, nodes)[0]


def similarities(mappings: Iterable[Iterable[Iterable[Hashable]]],
                 optimal_mappings: Iterable[Iterable[Iterable[Hashable]]],
                 nodes: Sequence[Hashable]) -> list[float]:
    """:func:`similarity` of each of ``mappings`` (a trace), the optimal set read once.

    Every mapping must partition ``nodes`` (:class:`~dcmap_dist.model.mappings.MappingError`
    otherwise) and there must be at least one optimal mapping (ValueError).
    """
    optimal = np.array([cluster_labels(m, nodes) for m in optimal_mappings], dtype=np.int64)
    if not len(optimal):
        raise ValueError("there are no optimal mappings to compare with")
    n = optimal.shape[1]
    together = _pairs(optimal)
    result = []
    for mapping in mappings:
        labels = cluster_labels(mapping, nodes)
        shared = _pairs(labels[None, :] * n + optimal)  # label pairs name the cells A & B
        result.append(float(np.max(shared / together)))
    return result


def _pairs(labels: np.ndarray) -> np.ndarray:
    """For each row of labels, the ordered pairs ``(i, j)`` with equal labels (``i = j``
    included): the sum of the squared sizes of its label groups."""
    ordered = np.sort(labels, axis=1)
    position = np.arange(ordered.shape[1])
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group_start = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    # a group of size s adds 1 + 3 + ... + (2s - 1) = s ** 2
    return (2 * (position - group_start) + 1).sum(axis=1)
