"""Networks from plain data: the JSON object of SPEC section 1, networkx's node-link
data, and a networkx DiGraph whose nodes carry a ``states`` attribute. Unknown keys
are refused with the closest known one named, so a misspelled key is never ignored."""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..model.network import Network, NetworkError

if TYPE_CHECKING:  # networkx is imported where a graph is made, not to read a file
    import networkx as nx

__all__ = ["NETWORK_KEYS", "check_keys", "network_from_dict", "network_from_digraph", "network_from_node_link"]

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
