"""The network model: a DAG of named discrete nodes (read from files and other
libraries by :mod:`dcmap_dist.io`).

A :class:`Network` is immutable. Node order is the input order (the order in
which the file lists the nodes); several rules of the cost model depend on it.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # networkx is imported where a graph is made or read, not by the search
    import networkx as nx

__all__ = ["Network", "NetworkError", "TooLarge", "find_cycle", "weak_components"]


class NetworkError(ValueError):
    """Bad input: the message names the problem."""


class TooLarge(NetworkError):
    """A network refused for its number of nodes (the message names it)."""


class Network:
    """A Bayesian network structure: named nodes with a number of states, and arcs.

    ``observed`` nodes count with one state in the cost models (SPEC 4.2b).
    ``labels`` maps a node name to the object it was made from with ``str()`` (the
    integer node 7 of a networkx graph is named ``"7"``), so that results can give
    nodes back as the caller gave them (:meth:`label`). ``origin`` says where the
    network was loaded from (``source``, ``slices``), for the result file. Neither is
    part of the structure or of :meth:`content_hash`.
    """

    def __init__(
        self,
        name: str,
        nodes: Iterable[str],
        states: Mapping[str, int],
        edges: Iterable[tuple[str, str]],
        observed: Iterable[str] = (),
        labels: Mapping[str, Hashable] | None = None,
        origin: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = str(name)
        node_list: list[str] = []
        seen: set[str] = set()
        for node in nodes:
            if not isinstance(node, str) or not node:
                raise NetworkError(f"node names must be non-empty strings, got {node!r}")
            if node in seen:
                raise NetworkError(f"duplicate node {node!r}")
            seen.add(node)
            node_list.append(node)
        if not node_list:
            raise NetworkError(f"network {self.name!r} is empty: it has no nodes")
        self.nodes: tuple[str, ...] = tuple(node_list)
        self.index: dict[str, int] = {x: i for i, x in enumerate(self.nodes)}
        self.states: dict[str, int] = {}
        for x in self.nodes:
            if x not in states:
                raise NetworkError(f"node {x!r} has no number of states")
            s = states[x]
            if isinstance(s, bool) or not isinstance(s, numbers.Integral):
                raise NetworkError(f"node {x!r} has a non-integer number of states: {s!r}")
            s = int(s)
            if s < 1:
                raise NetworkError(f"node {x!r} has {s} states; it needs at least 1")
            self.states[x] = s
        edge_list: list[tuple[str, str]] = []
        edge_set: set[tuple[str, str]] = set()
        for edge in edges:
            if not isinstance(edge, (list, tuple)) or len(edge) != 2:
                raise NetworkError(f"an edge must be a [parent, child] pair, got {edge!r}")
            u, v = edge
            for end in (u, v):
                if not isinstance(end, str) or end not in self.index:
                    raise NetworkError(f"edge {u!r} -> {v!r} refers to unknown node {end!r}")
            if (u, v) in edge_set:
                raise NetworkError(f"duplicate edge {u!r} -> {v!r}")
            edge_set.add((u, v))
            edge_list.append((u, v))
        self.edges: tuple[tuple[str, str], ...] = tuple(edge_list)
        observed_list = list(observed)
        for x in observed_list:
            if not isinstance(x, str):
                raise NetworkError(f"observed names must be node names (strings), got {x!r}")
        observed_set = frozenset(observed_list)
        unknown = sorted(observed_set - seen)
        if unknown:
            raise NetworkError(f"observed name {unknown[0]!r} is not a node of {self.name!r}")
        self.observed: frozenset[str] = observed_set
        self.labels: dict[str, Hashable] = {x: y for x, y in (labels or {}).items() if x in self.index}
        self.origin: dict[str, Any] = dict(origin or {})

        order = self.index.__getitem__
        parents: dict[str, list[str]] = {x: [] for x in self.nodes}
        children: dict[str, list[str]] = {x: [] for x in self.nodes}
        for u, v in edge_list:
            parents[v].append(u)
            children[u].append(v)
        self.parents: dict[str, tuple[str, ...]] = {x: tuple(sorted(parents[x], key=order)) for x in self.nodes}
        self.children: dict[str, tuple[str, ...]] = {x: tuple(sorted(children[x], key=order)) for x in self.nodes}
        cycle = find_cycle(self.nodes, self.children)
        if cycle:
            raise NetworkError(f"the graph has a cycle: {' -> '.join(cycle + [cycle[0]])}")
        self.derived: dict[str, object] = {}  # facts computed from the structure, cached

    def __repr__(self) -> str:
        return f"Network({self.name!r}, {len(self.nodes)} nodes, {len(self.edges)} arcs)"

    def __len__(self) -> int:
        return len(self.nodes)

    def label(self, node: str) -> Hashable:
        """The node as the caller gave it (see ``labels``): ``node`` itself for a name
        that was given as a string."""
        return self.labels.get(node, node)

    def card(self, node: str) -> int:
        """Number of states the cost models count: 1 for an observed node."""
        return 1 if node in self.observed else self.states[node]

    def digraph(self) -> nx.DiGraph:
        """A copy of the structure as a networkx DiGraph with a ``states`` attribute."""
        import networkx as nx

        graph = nx.DiGraph(name=self.name)
        for x in self.nodes:
            graph.add_node(x, states=self.states[x], observed=x in self.observed)
        graph.add_edges_from(self.edges)
        return graph

    def with_observed(self, names: Iterable[str]) -> Network:
        """The same network with ``names`` observed (in addition to those already observed)."""
        return Network(self.name, self.nodes, self.states, self.edges, self.observed | set(names),
                       self.labels, self.origin)

    def subnetwork(self, nodes: Iterable[str], name: str | None = None) -> Network:
        """The network induced by ``nodes``, keeping input order."""
        keep = set(nodes)
        return Network(
            name or self.name,
            [x for x in self.nodes if x in keep],
            self.states,
            [(u, v) for u, v in self.edges if u in keep and v in keep],
            self.observed & keep,
            self.labels,
            self.origin,
        )

    def components(self) -> list[Network]:
        """Weakly connected components, ordered by their first node in input order."""
        comps = weak_components(self.nodes, self.parents, self.children)
        if len(comps) == 1:
            return [self]
        return [self.subnetwork(c, f"{self.name}[{i}]") for i, c in enumerate(comps)]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of SPEC section 1."""
        return {
            "name": self.name,
            "nodes": [{"id": x, "states": self.states[x]} for x in self.nodes],
            "edges": [list(e) for e in self.edges],
            "observed": [x for x in self.nodes if x in self.observed],
        }

    def content_hash(self) -> str:
        """SHA-256 of the structure: nodes in input order with their states, the arcs
        (as a set) and the observed nodes. The name is not part of it."""
        data = self.to_dict()
        data.pop("name")
        data["edges"] = sorted(data["edges"])
        data = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(data.encode()).hexdigest()


def find_cycle(nodes: Iterable[str], children: Mapping[str, Iterable[str]]) -> list[str]:
    """The nodes of one directed cycle in order (``[]``: the graph is acyclic), by an
    iterative depth-first search."""
    done: set[str] = set()
    for start in nodes:
        if start in done:
            continue
        path = [start]  # the nodes on the stack, in order
        on_path = {start}
        stack = [iter(children[start])]
        while stack:
            node = next(stack[-1], None)
            if node is None:  # every child of path[-1] is done
                finished = path.pop()
                on_path.remove(finished)
                done.add(finished)
                stack.pop()
                continue
            if node in on_path:
                return path[path.index(node):]
            if node not in done:
                path.append(node)
                on_path.add(node)
                stack.append(iter(children[node]))
    return []


def weak_components(nodes: Iterable[str], parents: Mapping[str, Iterable[str]],
                    children: Mapping[str, Iterable[str]]) -> list[set[str]]:
    """The weakly connected components (arcs read both ways), in the order of their first
    node in ``nodes``."""
    found: list[set[str]] = []
    placed: set[str] = set()
    for start in nodes:
        if start in placed:
            continue
        component = {start}
        todo = [start]
        while todo:
            node = todo.pop()
            for other in (*parents[node], *children[node]):
                if other not in component:
                    component.add(other)
                    todo.append(other)
        placed |= component
        found.append(component)
    return found
