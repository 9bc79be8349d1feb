"""The network model: a DAG of named discrete nodes, loaded from JSON, BIF or networkx.

A :class:`Network` is immutable. Node order is the input order (the order in
which the file lists the nodes); several rules of the cost model depend on it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import numbers
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx


class NetworkError(ValueError):
    """Bad input: the message names the problem."""


class Network:
    """A Bayesian network structure: named nodes with a number of states, and arcs.

    ``observed`` nodes count with one state in the cost models (SPEC 4.2b).
    """

    def __init__(
        self,
        name: str,
        nodes: Iterable[str],
        states: Mapping[str, int],
        edges: Iterable[tuple[str, str]],
        observed: Iterable[str] = (),
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
            if (u, v) not in edge_set:
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

        graph = nx.DiGraph()
        graph.add_nodes_from(self.nodes)
        graph.add_edges_from(self.edges)
        if not nx.is_directed_acyclic_graph(graph):
            cycle = [u for u, _ in nx.find_cycle(graph)]
            path = " -> ".join(cycle + [cycle[0]])
            raise NetworkError(f"the graph has a cycle: {path}")
        self._graph = graph
        order = self.index.__getitem__
        self.parents: dict[str, tuple[str, ...]] = {
            x: tuple(sorted(graph.predecessors(x), key=order)) for x in self.nodes
        }
        self.children: dict[str, tuple[str, ...]] = {
            x: tuple(sorted(graph.successors(x), key=order)) for x in self.nodes
        }
        self.derived: dict[str, object] = {}  # facts computed from the structure, cached

    def __repr__(self) -> str:
        return f"Network({self.name!r}, {len(self.nodes)} nodes, {len(self.edges)} arcs)"

    def __len__(self) -> int:
        return len(self.nodes)

    def card(self, node: str) -> int:
        """Number of states the cost models count: 1 for an observed node."""
        return 1 if node in self.observed else self.states[node]

    def digraph(self) -> nx.DiGraph:
        """A copy of the structure as a networkx DiGraph with a ``states`` attribute."""
        graph = nx.DiGraph(name=self.name)
        for x in self.nodes:
            graph.add_node(x, states=self.states[x], observed=x in self.observed)
        graph.add_edges_from(self.edges)
        return graph

    def with_observed(self, names: Iterable[str]) -> Network:
        """The same network with ``names`` observed (in addition to those already observed)."""
        return Network(self.name, self.nodes, self.states, self.edges, self.observed | set(names))

    def subnetwork(self, nodes: Iterable[str], name: str | None = None) -> Network:
        """The network induced by ``nodes``, keeping input order."""
        keep = set(nodes)
        return Network(
            name or self.name,
            [x for x in self.nodes if x in keep],
            self.states,
            [(u, v) for u, v in self.edges if u in keep and v in keep],
            self.observed & keep,
        )

    def components(self) -> list[Network]:
        """Weakly connected components, ordered by their first node in input order."""
        comps = [set(c) for c in nx.weakly_connected_components(self._graph)]
        if len(comps) == 1:
            return [self]
        comps.sort(key=lambda c: min(self.index[x] for x in c))
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


def network_from_dict(data: Mapping[str, Any], default_name: str = "network") -> Network:
    """Build a network from the JSON structure of SPEC section 1."""
    if not isinstance(data, Mapping):
        raise NetworkError("a network must be a JSON object with 'nodes' and 'edges'")
    if "nodes" not in data:
        raise NetworkError("the network has no 'nodes' list")
    raw_nodes = data["nodes"]
    if not isinstance(raw_nodes, list):
        raise NetworkError("'nodes' must be a list")
    names: list[str] = []
    states: dict[str, int] = {}
    for entry in raw_nodes:
        if not isinstance(entry, Mapping) or "id" not in entry:
            raise NetworkError(f"each node needs an 'id' and 'states', got {entry!r}")
        name = entry["id"]
        if not isinstance(name, str):
            raise NetworkError(f"node ids must be strings, got {name!r}")
        if "states" not in entry:
            raise NetworkError(f"node {name!r} has no 'states'")
        names.append(name)
        if name not in states:
            states[name] = entry["states"]
    edges = data.get("edges", [])
    if not isinstance(edges, list):
        raise NetworkError("'edges' must be a list of [parent, child] pairs")
    observed = data.get("observed", []) or []
    if not isinstance(observed, list):
        raise NetworkError("'observed' must be a list of node names")
    name = data.get("name", default_name)
    if not isinstance(name, str):
        raise NetworkError(f"the network's 'name' must be a string, got {name!r}")
    return Network(name, names, states, edges, observed)


def network_from_digraph(graph: nx.DiGraph, name: str | None = None) -> Network:
    """Build a network from a networkx DiGraph whose nodes carry an int ``states`` attribute.

    Nodes with a true ``observed`` attribute are observed.
    """
    nodes = [str(x) for x in graph.nodes]
    states: dict[str, int] = {}
    observed = []
    for x, attrs in graph.nodes(data=True):
        if "states" not in attrs:
            raise NetworkError(f"node {x!r} has no 'states' attribute")
        states[str(x)] = attrs["states"]
        if attrs.get("observed"):
            observed.append(str(x))
    edges = [(str(u), str(v)) for u, v in graph.edges]
    return Network(name or graph.graph.get("name") or "network", nodes, states, edges, observed)


def read_text(path: Path, encodings: tuple[str, ...] = ("utf-8",)) -> str:
    """Read a text file, gunzipping it when its name ends in ``.gz``, in the first of
    ``encodings`` that decodes it (a UTF-8 byte order mark is dropped)."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                data = handle.read()
        else:
            data = path.read_bytes()
    except FileNotFoundError:
        raise NetworkError(f"no such file: {path}") from None
    except (OSError, EOFError, zlib.error) as exc:  # EOFError, zlib.error: a damaged .gz
        raise NetworkError(f"cannot read {path}: {exc}") from None
    for encoding in encodings:
        try:
            return data.decode("utf-8-sig" if encoding == "utf-8" else encoding)
        except UnicodeDecodeError as exc:
            problem = exc
    raise NetworkError(f"cannot read {path}: it is not {' or '.join(encodings)} text ({problem})")


def read_json(path: Path) -> dict[str, Any]:
    """Parse a JSON (or JSON.gz) file, with an error naming the file and the line."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise NetworkError(f"{path} is not valid JSON: {exc}") from None
