"""The network model: a DAG of named discrete nodes, loaded from JSON, BIF or networkx.

A :class:`Network` is immutable. Node order is the input order (the order in
which the file lists the nodes); several rules of the cost model depend on it.
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import json
import numbers
import os
import stat
import zlib
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # networkx is imported where a graph is made or read, not by the search
    import networkx as nx

__all__ = [
    "Network", "NetworkError", "TooLarge", "network_from_dict", "network_from_digraph", "network_from_node_link",
]


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


# the keys of a network JSON object (SPEC section 1); "source" and "description" are
# free text for people, not read
NETWORK_KEYS = ("name", "nodes", "edges", "observed", "source", "description")
NODE_KEYS = ("id", "states")
# networkx's node-link format (nx.node_link_data), recognised by its "directed" key
NODE_LINK_KEYS = ("directed", "multigraph", "graph", "nodes", "links", "edges", "name", "source", "description")


def check_keys(data: Mapping[str, Any], expected: Iterable[str], what: str) -> None:
    """Raise a NetworkError naming the first key of ``data`` that is not ``expected``
    (with the closest expected key, when one is close) and the keys expected."""
    expected = list(expected)
    for key in data:
        if key not in expected:
            close = difflib.get_close_matches(str(key), expected, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if key == "links" and what == "the network":
                hint = " (a networkx node-link graph also has \"directed\": true)"
            raise NetworkError(f"unknown key {key!r} in {what}{hint}; expected keys: {', '.join(expected)}")


def network_from_dict(data: Mapping[str, Any], default_name: str = "network",
                      extra_keys: Iterable[str] = ()) -> Network:
    """Build a network from the JSON structure of SPEC section 1, or from networkx's
    node-link format (an object with a ``"directed"`` key, see :func:`network_from_node_link`).

    Keys other than :data:`NETWORK_KEYS` and ``extra_keys`` are refused, and so are node
    keys other than ``id`` and ``states``: a misspelled key would otherwise be ignored.
    """
    if not isinstance(data, Mapping):
        raise NetworkError("a network must be a JSON object with 'nodes' and 'edges'")
    if "directed" in data:
        return network_from_node_link(data, default_name)
    check_keys(data, [*NETWORK_KEYS, *extra_keys], "the network")
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
        check_keys(entry, NODE_KEYS, f"node {name!r}")
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
    return Network(_name(data.get("name", default_name)), names, states, edges, observed)


def network_from_node_link(data: Mapping[str, Any], default_name: str = "network") -> Network:
    """Build a network from networkx's node-link format (what ``nx.node_link_data`` of a
    DiGraph gives): ``"directed": true``, ``"nodes"`` with an ``id`` (a string or an
    integer) and a ``states`` attribute, arcs under ``"edges"`` or ``"links"`` as
    ``{"source": ..., "target": ...}`` objects. Read as the DiGraph would be (see
    :func:`network_from_digraph`): other attributes are ignored, ``observed: true``
    observes a node; the name is the graph attribute ``name``, else ``name``."""
    check_keys(data, NODE_LINK_KEYS, "the networkx node-link graph")
    if data["directed"] is not True:
        raise NetworkError("the networkx node-link graph is not directed (\"directed\" is not true): "
                           "a Bayesian network needs a directed graph")
    if data.get("multigraph", False):
        raise NetworkError(_MULTIGRAPH)
    if "links" in data and "edges" in data:
        raise NetworkError("the networkx node-link graph has both 'links' and 'edges': give its arcs once")
    nodes, arcs, graph = data.get("nodes"), data.get("links", data.get("edges", [])), data.get("graph", {})
    if not isinstance(nodes, list) or not all(isinstance(n, Mapping) and "id" in n for n in nodes):
        raise NetworkError("'nodes' of a node-link graph must be a list of objects with an 'id'")
    if not isinstance(arcs, list) or not all(isinstance(a, Mapping) and {"source", "target"} <= set(a) for a in arcs):
        raise NetworkError("the arcs of a node-link graph must be a list of objects with 'source' and 'target'")
    for node in [n["id"] for n in nodes] + [a[end] for a in arcs for end in ("source", "target")]:
        if isinstance(node, bool) or not isinstance(node, (str, int)):
            raise NetworkError(f"node ids of a node-link graph must be strings or integers, got {node!r}")
    name = graph.get("name") if isinstance(graph, Mapping) and graph.get("name") else data.get("name", default_name)
    return _from_attributes(_name(name), [(n["id"], n) for n in nodes],
                            [(a["source"], a["target"]) for a in arcs])


_MULTIGRAPH = ("a multigraph (networkx MultiDiGraph) may hold parallel arcs, which a Bayesian network "
               "cannot: give a DiGraph (nx.DiGraph(graph) merges them)")


def network_from_digraph(graph: nx.DiGraph, name: str | None = None) -> Network:
    """Build a network from a networkx DiGraph whose nodes carry an int ``states`` attribute.

    Nodes with a true ``observed`` attribute are observed. A node that is not a string
    is named ``str(node)`` and given back as it is in results (``Network.labels``). An
    undirected graph and a MultiDiGraph are refused.
    """
    if not graph.is_directed():
        raise NetworkError("a networkx graph must be directed: give a DiGraph")
    if graph.is_multigraph():
        raise NetworkError(_MULTIGRAPH)
    return _from_attributes(str(name or graph.graph.get("name") or "network"), graph.nodes(data=True), graph.edges)


def _from_attributes(name: str, nodes: Iterable[tuple[Hashable, Mapping[str, Any]]],
                     edges: Iterable[tuple[Hashable, Hashable]]) -> Network:
    """A network from (node, attributes) pairs, with a ``states`` and optionally an
    ``observed`` attribute, and arcs; nodes are named by ``str()``."""
    names: list[str] = []
    states: dict[str, int] = {}
    labels: dict[str, Hashable] = {}
    observed = []
    for x, attrs in nodes:
        label = str(x)
        if label in labels or (label in states and not isinstance(x, str)):
            raise NetworkError(f"nodes {labels.get(label, label)!r} and {x!r} have the same name {label!r}")
        if "states" not in attrs:
            raise NetworkError(f"node {x!r} has no 'states' attribute")
        names.append(label)
        states.setdefault(label, attrs["states"])
        if not isinstance(x, str):
            labels[label] = x
        if attrs.get("observed"):
            observed.append(label)
    return Network(name, names, states, [(str(u), str(v)) for u, v in edges], observed, labels)


def _name(name: Any) -> str:
    """A network's name, which must be a string."""
    if not isinstance(name, str):
        raise NetworkError(f"the network's 'name' must be a string, got {name!r}")
    return name


MAX_INPUT_MB = 256  # the most a network or result file may hold, gunzipped (bnlearn's largest: 5.3 MB)
INPUT_LIMIT_VARIABLE = "DCMAP_MAX_INPUT_MB"  # raises (or lowers) it


def input_limit() -> int:
    """The most bytes an input file may hold once gunzipped: :data:`MAX_INPUT_MB` MiB, or
    what the environment variable :data:`INPUT_LIMIT_VARIABLE` says."""
    text = os.environ.get(INPUT_LIMIT_VARIABLE)
    try:
        megabytes = float(text) if text else MAX_INPUT_MB
    except ValueError:
        raise NetworkError(f"{INPUT_LIMIT_VARIABLE}={text!r}: expected a number of MiB") from None
    return int(megabytes * 2**20)


def read_text(path: Path, encodings: tuple[str, ...] = ("utf-8",)) -> str:
    """Read a text file, gunzipping it when its name ends in ``.gz``, in the first of
    ``encodings`` that decodes it (a UTF-8 byte order mark is dropped). Only a regular
    file is read (not a device such as ``/dev/zero``, a pipe or a folder), and at most
    :func:`input_limit` bytes of it, gunzipped: a file that holds or inflates to more
    is refused before it fills the memory."""
    limit = input_limit()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise NetworkError(f"cannot read {path}: it is not a regular file")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise NetworkError(f"no such file: {path}") from None
    except (OSError, EOFError, zlib.error) as exc:  # EOFError, zlib.error: a damaged .gz
        raise NetworkError(f"cannot read {path}: {exc}") from None
    if len(data) > limit:
        raise NetworkError(f"cannot read {path}: it holds more than {limit / 2**20:g} MiB"
                           f"{' once gunzipped' if path.suffix == '.gz' else ''}, far more than a network; "
                           f"set {INPUT_LIMIT_VARIABLE} to a larger number of MiB if it is meant to")
    for encoding in encodings:
        try:
            return data.decode("utf-8-sig" if encoding == "utf-8" else encoding)
        except UnicodeDecodeError as exc:
            problem = exc
    raise NetworkError(f"cannot read {path}: it is not {' or '.join(encodings)} text ({problem})")


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` that refuses an object with a key twice
    (JSON allows it, and the last one would silently win)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise NetworkError(f"the key {key!r} appears twice in one JSON object (which one is meant?)")
        found[key] = value
    return found


def read_json(path: Path) -> dict[str, Any]:
    """Parse a JSON (or JSON.gz) file, with an error naming the file and the line; an
    object with a key twice, or nesting deeper than Python's parser goes, is refused."""
    text = read_text(path)
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise NetworkError(f"{path} is not valid JSON: {exc}") from None
    except NetworkError as exc:
        raise NetworkError(f"{path}: {exc}") from None
    except RecursionError:
        raise NetworkError(f"{path}: its JSON is nested too deeply to be a network") from None
