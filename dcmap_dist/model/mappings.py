"""Feasible cluster mappings (SPEC section 2): checks and exact enumeration.

A mapping is a partition of the nodes into clusters. Scheme ``merge`` (default)
requires every cluster to be (a) weakly connected, (b) contiguous and (c)
layer-connected; scheme ``single`` (a node joins at most one child's cluster)
requires, instead of (c), that the members in layers ``<= j`` be connected for
every ``j``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence

from .network import Network, NetworkError
from .topology import Topology, bits

__all__ = ["MappingError", "SCHEMES", "check_mapping", "check_scheme", "cluster_problem", "enumerate_mappings",
           "feasible_clusters", "given_nodes", "mapping_names"]

SCHEMES = ("merge", "single")


class MappingError(NetworkError):
    """A mapping that is not a partition of the nodes, or has an infeasible cluster."""


def check_scheme(scheme: str) -> str:
    """Return ``scheme`` if it is known, else raise a ValueError naming the choices."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}: choose one of {', '.join(SCHEMES)}")
    return scheme


def cluster_problem(topo: Topology, cluster: int, scheme: str = "merge") -> str | None:
    """Why the cluster (a node mask) is infeasible under ``scheme``, or None if it is feasible."""
    if not topo.is_connected(cluster):
        return "it is not weakly connected through arcs between its own members"
    if not topo.is_convex(cluster):
        return "it is not contiguous: a directed path between two members leaves the cluster"
    for l in range(topo.l_max + 1):
        at_layer = cluster & topo.layer_mask[l]
        if not at_layer:
            continue
        below = cluster & topo.upto[l]
        component = topo.component((at_layer & -at_layer).bit_length() - 1, below)
        if scheme == "single":
            if component != below:
                return f"its members in layers <= {l} are not connected (scheme single)"
        elif at_layer & ~component:
            return (
                f"it is not layer-connected: its members in layer {l} are not joined "
                f"through its members in layers <= {l}"
            )
    return None


def check_mapping(
    network: Network, clusters: Iterable[Iterable[str]], scheme: str = "merge"
) -> list[frozenset[str]]:
    """Validate a mapping given as clusters of node names; return it as frozensets.

    Raises :class:`MappingError` naming the problem: an unknown node, a node in two
    clusters, a node in none, an empty cluster, or an infeasible cluster.
    """
    check_scheme(scheme)
    topo = Topology(network)
    seen: dict[str, int] = {}
    result: list[frozenset[str]] = []
    if isinstance(clusters, (str, bytes)) or not isinstance(clusters, Iterable):
        raise MappingError(f"the clusters must be a list of lists of node names, got {clusters!r}")
    for k, cluster in enumerate(clusters):
        if isinstance(cluster, (str, bytes)) or not isinstance(cluster, Iterable):
            raise MappingError(f"cluster {k} must be a list of node names, got {cluster!r}")
        members = list(cluster)
        if not members:
            raise MappingError(f"cluster {k} is empty")
        for x in members:
            if not isinstance(x, str):
                raise MappingError(f"cluster {k} holds {x!r}, which is not a node name")
            if x not in network.index:
                raise MappingError(f"cluster {k} names unknown node {x!r}")
            if x in seen:
                where = f"twice in cluster {k}" if seen[x] == k else f"in two clusters ({seen[x]} and {k})"
                raise MappingError(f"node {x!r} is {where}")
            seen[x] = k
        result.append(frozenset(members))
    missing = [x for x in network.nodes if x not in seen]
    if missing:
        raise MappingError(f"node {missing[0]!r} is in no cluster ({len(missing)} nodes missing)")
    for k, cluster in enumerate(result):
        problem = cluster_problem(topo, topo.mask(cluster), scheme)
        if problem:
            raise MappingError(f"cluster {k} {sorted(cluster)} is infeasible: {problem}")
    return result


def feasible_clusters(topo: Topology, scheme: str = "merge") -> list[int]:
    """Every feasible cluster (node mask), by brute force over connected node sets."""
    found: set[int] = set()
    for start in range(topo.n):
        # grow connected sets whose lowest member is ``start``
        allowed = topo.all_nodes & ~((1 << start) - 1)
        stack = [1 << start]
        seen = {1 << start}
        while stack:
            cluster = stack.pop()
            if cluster_problem(topo, cluster, scheme) is None:
                found.add(cluster)
            border = 0
            for i in bits(cluster):
                border |= topo.neighbours[i]
            for j in bits(border & allowed & ~cluster):
                bigger = cluster | (1 << j)
                if bigger not in seen:
                    seen.add(bigger)
                    stack.append(bigger)
    return sorted(found)


def enumerate_mappings(network: Network, scheme: str = "merge") -> Iterator[tuple[int, ...]]:
    """Every feasible mapping of a (small) network, each once, as a tuple of cluster masks.

    Independent of the search: set partitions into feasible clusters, found by
    exact cover over :func:`feasible_clusters`.
    """
    check_scheme(scheme)
    topo = Topology(network)
    by_lowest: dict[int, list[int]] = {}
    for cluster in feasible_clusters(topo, scheme):
        by_lowest.setdefault((cluster & -cluster).bit_length() - 1, []).append(cluster)

    def cover(free: int, chosen: list[int]) -> Iterator[tuple[int, ...]]:
        if not free:
            yield tuple(chosen)
            return
        lowest = (free & -free).bit_length() - 1
        for cluster in by_lowest.get(lowest, ()):
            if cluster & ~free == 0:
                chosen.append(cluster)
                yield from cover(free & ~cluster, chosen)
                chosen.pop()

    yield from cover(topo.all_nodes, [])


def mapping_names(topo: Topology, clusters: Sequence[int]) -> list[list[str]]:
    """Clusters as sorted lists of names, the clusters sorted too (a canonical form)."""
    return sorted(sorted(topo.names(c)) for c in clusters)


def given_nodes(network: Network, clusters: list[list[str]]) -> list[list[Hashable]]:
    """Clusters of node names with each node as the caller gave it (``Network.label``),
    sorted by those when they compare (integers), else left in name order."""
    if not network.labels:
        return clusters
    given = [[network.label(x) for x in cluster] for cluster in clusters]
    try:
        return sorted(sorted(cluster) for cluster in given)
    except TypeError:  # nodes of different types (1 and "A"): keep the name order
        return given
