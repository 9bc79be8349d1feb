"""A mapping drawn on its network with matplotlib (the optional extra
``dcmap_dist[plot]``): the network by layer, leaves at the bottom, each cluster in
its own colour and outline (see :func:`draw_clusters`)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..model.network import Network
from ..model.topology import layer_nodes, layers
from ..study.similarity import cluster_labels
from ..text import printable
from .plots import figure, qualitative_colours, save_figure

__all__ = ["crossed", "draw_clusters"]

SLOT_INCHES = 1.6  # width of a node's slot in a layer
LAYER_INCHES = 1.0  # height of a layer
FONT_SIZE = 7.0
LABEL_WIDTH = 16  # characters per line of a node's label (names are wrapped after '_')
TUBE_POINTS = 12.0  # width of the band joining a cluster's members along its arcs
SWEEPS = 12  # barycentre sweeps when ordering the nodes of each layer
SINGLETON = "#d9d9d9"  # the colour of a cluster of one node
BENDS = (0.0, 0.15, -0.15, 0.3, -0.3, 0.5, -0.5, 0.75, -0.75, 1.0, -1.0)  # the bends an arc may take, straightest first
NODE_HALF_WIDTH, NODE_HALF_HEIGHT = 0.42, 0.22  # the room a node's box takes (slots, layers)
MAX_DRAWN_NODES = 300  # draw refuses larger networks (andes, 223 nodes, draws in 8 s)
MAX_DRAWN_WIDTH = 50  # and layers wider than this (pathfinder's 77 made a picture 12,560 px wide)
BULGE_LAYERS = 1.5  # how far past the top and bottom layers the drawing reaches for the arcs
ROUTE_WIDTH = 0.35  # the width of a slot kept for a band that passes through a layer (in node slots)


def draw_clusters(network: Network, clusters: Iterable[Iterable[str]], output: Path,
                  title: str | None = None, costs: list[float] | None = None) -> None:
    """Draw ``network`` by layer (leaves at the bottom, each node at its layer: the
    longest path down to a leaf, each layer labelled at the left) with the mapping
    ``clusters``. Each cluster of two or more nodes has its own colour: its nodes are
    tinted with it, and its outline is a band in that colour joining its members along
    the arcs inside it; clusters of one node are grey. A legend gives each coloured
    cluster's colour, size and, with ``costs`` (one per cluster, in order), its cost.
    Observed nodes have a thick black border; arcs inside a cluster are dark, arcs
    between clusters light. Nodes are ordered within their layer to reduce arc
    crossings (barycentre sweeps); an arc, and its cluster's band, bends around the
    nodes it would otherwise cross (:func:`_routes`). The figure grows with the widest
    layer and the number of layers, so that labels stay readable.

    Raises a :class:`~dcmap_dist.model.mappings.MappingError` when ``clusters`` do not
    partition the network's nodes.
    """
    check_drawable(network)
    clusters = [list(cluster) for cluster in clusters]
    labels = dict(zip(network.nodes, cluster_labels(clusters, network.nodes).tolist()))
    chains = _chains(network, labels)
    rows = _layer_order(network, labels, chains)
    place = _positions(rows)
    routes = _routes(network, place, chains)
    # the arcs' curves may bulge past the top and bottom layers: the drawing holds them up
    # to BULGE_LAYERS more (cut there), clear of the title above it and the legend below
    heights = [y for _, points in routes.values() for _, y in points]
    low = max(-0.65 - BULGE_LAYERS, min(-0.65, min(heights, default=0) - 0.25))
    high = min(len(rows) - 0.35 + BULGE_LAYERS, max(len(rows) - 0.35, max(heights, default=0) + 0.25))
    widest = max(place[row[-1]][0] - place[row[0]][0] for row in rows) + 1.0
    width, height = max(SLOT_INCHES * (widest + 1.5), 6.0), LAYER_INCHES * (high - low) + 1.4
    fig = figure(figsize=(width, height))
    ax = fig.add_axes((0, 0.9 / height, 1, 1 - 1.5 / height))
    ax.set_xlim(-width / SLOT_INCHES / 2, width / SLOT_INCHES / 2)
    ax.set_ylim(low, high)
    ax.axis("off")
    for layer in range(len(rows)):
        ax.text(-width / SLOT_INCHES / 2 + 0.1, layer, f"layer {layer}" + (" (leaves)" if layer == 0 else ""),
                ha="left", va="center", fontsize=FONT_SIZE, color="#555555")
    colour = _cluster_colours(clusters)
    for k, cluster in enumerate(clusters):
        if len(cluster) > 1:
            inside = [routes[u, v][1] for u, v in network.edges if labels[u] == labels[v] == k]
            alone = [x for x in cluster if not any(labels[y] == k for y in (*network.parents[x], *network.children[x]))]
            inside += [[(place[x][0] - 0.01, place[x][1]), (place[x][0] + 0.01, place[x][1])] for x in alone]
            _band(ax, inside, colour[k], zorder=1 + k / len(clusters))
    boxes = {}
    for x in network.nodes:
        edge, thick = ("black", 2.2) if x in network.observed else (_shade(colour[labels[x]]), 1.0)
        boxes[x] = ax.text(*place[x], _wrap(printable(x)), ha="center", va="center", fontsize=FONT_SIZE, zorder=3,
                           bbox=dict(boxstyle="round,pad=0.3", facecolor=_tint(colour[labels[x]]),
                                     edgecolor=edge, linewidth=thick))
    for u, v in network.edges:
        inside = labels[u] == labels[v]
        style = dict(mutation_scale=9, shrinkA=0, shrinkB=1, color="#333333" if inside else "#aaaaaa",
                     linewidth=1.0 if inside else 0.8)
        # drawn above the boxes (whose outlines clip the arrows only once they are drawn)
        if (u, v) in chains:  # through the slots kept for it in the layers between
            points = routes[u, v][1]
            ax.annotate("", xy=points[1], xytext=(0.5, 0.5), textcoords=boxes[u], zorder=4,
                        arrowprops=dict(arrowstyle="-", patchA=boxes[u].get_bbox_patch(), **style))
            ax.plot(*zip(*points[1:-1]), color=style["color"], linewidth=style["linewidth"], zorder=4)
            ax.annotate("", xy=(0.5, 0.5), xycoords=boxes[v], xytext=points[-2], textcoords="data", zorder=4,
                        arrowprops=dict(arrowstyle="-|>", patchB=boxes[v].get_bbox_patch(), **style))
            continue
        ax.annotate("", xy=(0.5, 0.5), xycoords=boxes[v], xytext=(0.5, 0.5), textcoords=boxes[u], zorder=4,
                    arrowprops=dict(arrowstyle="-|>", patchA=boxes[u].get_bbox_patch(), patchB=boxes[v].get_bbox_patch(),
                                    connectionstyle=f"arc3,rad={routes[u, v][0]}", **style))
    for drawn in [*ax.lines, *ax.collections, *(a.arrow_patch for a in ax.texts if getattr(a, "arrow_patch", None))]:
        drawn.set_clip_path(ax.patch)  # nothing drawn over the title or the legend
    shared = sum(len(c) > 1 for c in clusters)
    fig.suptitle(printable(title or f"{network.name}: {len(clusters)} clusters of {len(network.nodes)} nodes"),
                 y=1 - 0.1 / height, va="top")
    _legend(fig, clusters, colour, costs, height)
    fig.text(0.01, 0.1 / height, f"{shared} clusters of two or more nodes in colour, {len(clusters) - shared} of one "
             "node in grey; thick border: observed node; leaves at the bottom", fontsize=FONT_SIZE, va="bottom")
    save_figure(fig, output)


def check_drawable(network: Network) -> None:
    """A ValueError, at once, for a network too big to draw readably (past
    :data:`MAX_DRAWN_NODES` nodes or :data:`MAX_DRAWN_WIDTH` in a layer): its picture
    would be metres wide and take minutes (pigs, 441 nodes, ran past 300 s)."""
    widths = [len(row) for row in layer_nodes(network)]
    widest = max(widths)
    if len(network.nodes) > MAX_DRAWN_NODES or widest > MAX_DRAWN_WIDTH:
        raise ValueError(
            f"{network.name!r} has {len(network.nodes)} nodes, {widest} in its widest layer (layer "
            f"{widths.index(widest)}): too many to draw readably (at most {MAX_DRAWN_NODES} nodes and "
            f"{MAX_DRAWN_WIDTH} in a layer); draw a part of it (a network of the nodes of interest), or list "
            "the mapping's clusters and costs with 'dcmap cost'")


def _legend(fig: Any, clusters: list[list[str]], colour: list[Any], costs: list[float] | None,
            height: float) -> None:
    """A legend below the network: each coloured cluster's colour, its size and cost
    (biggest first), then the clusters of one node together."""
    from matplotlib.patches import Patch

    def cost(ks: list[int]) -> str:
        return "" if costs is None else f", cost {sum(costs[k] for k in ks):.1f}"

    coloured = sorted((k for k, c in enumerate(clusters) if len(c) > 1), key=lambda k: (-len(clusters[k]), k))
    alone = [k for k, c in enumerate(clusters) if len(c) == 1]
    handles = [Patch(facecolor=_tint(colour[k]), edgecolor=_shade(colour[k]),
                     label=f"{len(clusters[k])} nodes{cost([k])}") for k in coloured]
    if alone:
        handles.append(Patch(facecolor=_tint(SINGLETON), edgecolor=_shade(SINGLETON),
                             label=f"{len(alone)} clusters of one node{cost(alone)}"))
    if costs is not None:
        handles.append(Patch(facecolor="white", edgecolor="white", label=f"total cost {sum(costs):.1f}"))
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.3 / height), ncol=min(6, len(handles)),
               fontsize=FONT_SIZE, frameon=False)


def _routes(network: Network, place: Mapping[str, tuple[float, float]], chains: Mapping[tuple[str, str], list[str]]
            ) -> dict[tuple[str, str], tuple[float, list[tuple[float, float]]]]:
    """Each arc's bend (matplotlib's ``arc3`` ``rad``) and the points of its curve. An
    arc with slots of its own in the layers it skips (:func:`_chains`) runs through
    them. Any other takes the straightest of :data:`BENDS` whose curve keeps clear of
    every node but its two ends, or the one that passes fewest."""
    routes = {}
    for u, v in network.edges:
        if (u, v) in chains:
            routes[u, v] = (0.0, [place[x] for x in (u, *chains[u, v], v)])
            continue
        best = None
        for bend in BENDS:
            points = _curve(place[u], place[v], bend)
            hits = crossed(points, place, (u, v))
            if best is None or hits < best[0]:
                best = (hits, bend, points)
            if hits == 0:
                break
        routes[u, v] = (best[1], best[2])
    return routes


def crossed(points: list[tuple[float, float]], place: Mapping[str, tuple[float, float]],
            ends: tuple[str, str], samples: int = 8) -> int:
    """How many points of a polyline (each segment sampled ``samples`` times) fall on the
    box of a node other than its ``ends`` (routing slots, whose names are tuples, hold
    no box)."""
    dense = [(x0 + (x1 - x0) * t / samples, y0 + (y1 - y0) * t / samples)
             for (x0, y0), (x1, y1) in zip(points, points[1:]) for t in range(samples + 1)] or points
    return sum(1 for x, (cx, cy) in place.items() if x not in ends and isinstance(x, str)
               for px, py in dense if ((px - cx) / NODE_HALF_WIDTH) ** 2 + ((py - cy) / NODE_HALF_HEIGHT) ** 2 < 1)


def _curve(start: tuple[float, float], end: tuple[float, float], bend: float,
           samples: int = 24) -> list[tuple[float, float]]:
    """Points of matplotlib's ``arc3`` curve from ``start`` to ``end``: a quadratic Bezier
    curve whose control point lies ``bend`` times the chord's length off its middle.
    Computed in a space where a slot and a layer have their drawn sizes in inches, as
    matplotlib computes it on the page."""
    (x0, y0), (x2, y2) = start, end
    sx, sy = SLOT_INCHES, LAYER_INCHES
    dx, dy = (x2 - x0) * sx, (y2 - y0) * sy
    cx, cy = (x0 + x2) / 2 + bend * dy / sx, (y0 + y2) / 2 - bend * dx / sy
    return [((1 - t) ** 2 * x0 + 2 * t * (1 - t) * cx + t * t * x2, (1 - t) ** 2 * y0 + 2 * t * (1 - t) * cy + t * t * y2)
            for t in (i / samples for i in range(samples + 1))]


def _wrap(name: str) -> str:
    """A node's label, broken after '_' into lines of at most :data:`LABEL_WIDTH`
    characters where it can be (longer parts are cut)."""
    lines: list[str] = []
    for word in name.replace("_", "_\n").split("\n"):
        if lines and len(lines[-1]) + len(word) <= LABEL_WIDTH:
            lines[-1] += word
        else:
            lines.append(word)
    return "\n".join(part for line in lines for part in textwrap.wrap(line, LABEL_WIDTH) or [line])


def _cluster_colours(clusters: list[list[str]]) -> list[Any]:
    """A colour per cluster: colours in turn for clusters of two or more nodes (24 before
    they repeat), grey for clusters of one node."""
    palette = [c for c in qualitative_colours("tab10") + qualitative_colours("Dark2") + qualitative_colours("Set1")
               if max(c) - min(c) > 0.1]  # greys would pass for clusters of one node
    colours: list[Any] = []
    for cluster in clusters:
        shared = sum(c != SINGLETON for c in colours)
        colours.append(palette[shared % len(palette)] if len(cluster) > 1 else SINGLETON)
    return colours


def _tint(colour: Any) -> tuple[float, float, float]:
    """A light version of a colour (for fills under black text)."""
    from matplotlib.colors import to_rgb

    return tuple(0.55 + 0.45 * c for c in to_rgb(colour))  # type: ignore[return-value]


def _shade(colour: Any) -> tuple[float, float, float]:
    """A darker version of a colour (for outlines)."""
    from matplotlib.colors import to_rgb

    return tuple(0.75 * c for c in to_rgb(colour))  # type: ignore[return-value]


def _band(ax: Any, segments: list[list[tuple[float, float]]], colour: Any, zorder: float) -> None:
    """A cluster's outline: a light band with a border in ``colour`` along ``segments``
    (polylines: the curves of its arcs)."""
    from matplotlib.collections import LineCollection

    for width, shade in ((TUBE_POINTS + 3, _shade(colour)), (TUBE_POINTS, _tint(colour))):
        ax.add_collection(LineCollection(segments, linewidths=width, colors=[shade], capstyle="round",
                                         joinstyle="round", zorder=zorder))


def _chains(network: Network, labels: Mapping[str, int]) -> dict[tuple[str, str], list[Any]]:
    """The arcs inside a cluster that skip layers, each with a routing slot (a name of its
    own, a tuple) in every layer between its ends: the cluster's band runs through
    them, never across another node."""
    level = layers(network)
    return {(u, v): [("slot", u, v, layer) for layer in range(level[u] - 1, level[v], -1)]
            for u, v in network.edges if labels[u] == labels[v] and level[u] - level[v] > 1}


def _layer_order(network: Network, labels: Mapping[str, int],
                 chains: Mapping[tuple[str, str], list[Any]] | None = None) -> list[list[Any]]:
    """The nodes of each layer (leaves first), with the routing slots of ``chains``, in
    the order that drawing them crosses fewest arcs, of those met in :data:`SWEEPS`
    barycentre sweeps (alternately down from the top layer and up from the leaves; each
    node moves to the mean position of its neighbours, those in its own cluster counted
    twice; an arc with slots links each slot to the next)."""
    chains = chains or {}
    rows: list[list[Any]] = [list(row) for row in layer_nodes(network)]
    links = _links(network, chains)
    for slots in chains.values():
        for slot in slots:
            rows[slot[3]].append(slot)
    weighted: dict[Any, list[tuple[Any, float]]] = {x: [] for row in rows for x in row}
    for a, b in links:  # a slot is in its arc's cluster
        same = 2.0 if labels[a if isinstance(a, str) else a[1]] == labels[b if isinstance(b, str) else b[1]] else 1.0
        weighted[a].append((b, same))
        weighted[b].append((a, same))
    best, fewest = [list(row) for row in rows], _crossings_of(links, rows)
    for sweep in range(SWEEPS):
        sequence = range(len(rows) - 1, -1, -1) if sweep % 2 == 0 else range(len(rows))
        for layer in sequence:
            at = {x: p[0] for x, p in _positions(rows).items()}
            rows[layer].sort(key=lambda x: (sum(at[y] * w for y, w in weighted[x]) / sum(w for _, w in weighted[x])
                                            if weighted[x] else at[x]))
        crossings = _crossings_of(links, rows)
        if crossings < fewest:
            best, fewest = [list(row) for row in rows], crossings
    return best


def _links(network: Network, chains: Mapping[tuple[str, str], list[Any]]) -> list[tuple[Any, Any]]:
    """The network's arcs, those with routing slots as a chain through them."""
    links = []
    for u, v in network.edges:
        path = [u, *chains.get((u, v), ()), v]
        links += list(zip(path, path[1:]))
    return links


def _positions(rows: list[list[Any]]) -> dict[Any, tuple[float, float]]:
    """Each node's place: across, a slot per node and a narrower one per routing slot,
    every layer centred on 0; up, its layer."""
    place = {}
    for layer, row in enumerate(rows):
        widths = [ROUTE_WIDTH if isinstance(x, tuple) else 1.0 for x in row]
        left = -sum(widths) / 2
        for x, width in zip(row, widths):
            place[x] = (left + width / 2, float(layer))
            left += width
    return place


def _crossings(network: Network, rows: list[list[str]]) -> int:
    """How many pairs of the network's arcs cross when drawn as straight segments."""
    return _crossings_of(list(network.edges), rows)


def _crossings_of(links: list[tuple[Any, Any]], rows: list[list[Any]]) -> int:
    """How many pairs of ``links`` cross when drawn as straight segments between places."""
    if len(links) < 2:
        return 0
    place = _positions(rows)
    ends = np.array([[*place[u], *place[v]] for u, v in links])
    a, b = ends[:, :2], ends[:, 2:]

    def side(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Sign of the turn p -> q -> r for each segment pair (rows: p, q; columns: r)."""
        d = q - p
        return np.sign(d[:, None, 0] * (r[None, :, 1] - p[:, None, 1]) - d[:, None, 1] * (r[None, :, 0] - p[:, None, 0]))

    straddles = side(a, b, a) * side(a, b, b) < 0  # [i, j]: j's ends lie on both sides of i's line
    proper = straddles & straddles.T
    return int(np.triu(proper, 1).sum())
