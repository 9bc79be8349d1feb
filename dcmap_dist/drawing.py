"""A mapping drawn on its network with matplotlib (the optional extra
``dcmap_dist[plot]``): the network by layer, leaves at the bottom, each cluster in
its own colour and outline (see :func:`draw_clusters`)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .network import Network
from .plots import qualitative_colours, save_figure, figure
from .similarity import cluster_labels
from .structure import layer_nodes, layers

SLOT_INCHES = 1.6  # width of a node's slot in a layer
LAYER_INCHES = 1.0  # height of a layer
FONT_SIZE = 7.0
LABEL_WIDTH = 16  # characters per line of a node's label (names are wrapped after '_')
TUBE_POINTS = 12.0  # width of the band joining a cluster's members along its arcs
SWEEPS = 12  # barycentre sweeps when ordering the nodes of each layer
SINGLETON = "#d9d9d9"  # the colour of a cluster of one node


def draw_clusters(network: Network, clusters: Iterable[Iterable[str]], output: Path,
                  title: str | None = None) -> None:
    """Draw ``network`` by layer (leaves at the bottom, each node at its layer: the
    longest path down to a leaf) with the mapping ``clusters``. Each cluster of two or
    more nodes has its own colour: its nodes are tinted with it, and its outline is a
    band in that colour joining its members along the arcs inside it; clusters of one
    node are grey. Observed nodes have a thick black border; arcs inside a cluster are
    dark, arcs between clusters light. Nodes are ordered within their layer to reduce
    arc crossings (barycentre sweeps). The figure grows with the widest layer and the
    number of layers, so that labels stay readable.

    Raises a :class:`~dcmap_dist.mappings.MappingError` when ``clusters`` do not
    partition the network's nodes.
    """
    clusters = [list(cluster) for cluster in clusters]
    labels = dict(zip(network.nodes, cluster_labels(clusters, network.nodes).tolist()))
    rows = _layer_order(network, labels)
    widest = max(len(row) for row in rows)
    width, height = max(SLOT_INCHES * (widest + 0.5), 5.0), LAYER_INCHES * (len(rows) + 0.3) + 0.9
    fig = figure(figsize=(width, height))
    ax = fig.add_axes((0, 0.4 / height, 1, 1 - 1.0 / height))
    ax.set_xlim(-width / SLOT_INCHES / 2, width / SLOT_INCHES / 2)
    ax.set_ylim(-0.65, len(rows) - 0.35)
    ax.axis("off")
    place = {x: (k - (len(row) - 1) / 2, layer) for layer, row in enumerate(rows) for k, x in enumerate(row)}
    colour = _cluster_colours(clusters)
    for k, cluster in enumerate(clusters):
        if len(cluster) > 1:
            inside = [(place[u], place[v]) for u, v in network.edges if labels[u] == labels[v] == k]
            alone = [x for x in cluster if not any(labels[y] == k for y in (*network.parents[x], *network.children[x]))]
            inside += [((place[x][0] - 0.01, place[x][1]), (place[x][0] + 0.01, place[x][1])) for x in alone]
            _band(ax, inside, colour[k], zorder=1 + k / len(clusters))
    boxes = {}
    for x in network.nodes:
        edge, thick = ("black", 2.2) if x in network.observed else (_shade(colour[labels[x]]), 1.0)
        boxes[x] = ax.text(*place[x], _wrap(x), ha="center", va="center", fontsize=FONT_SIZE, zorder=3,
                           bbox=dict(boxstyle="round,pad=0.3", facecolor=_tint(colour[labels[x]]),
                                     edgecolor=edge, linewidth=thick))
    level = layers(network)
    for u, v in network.edges:
        inside = labels[u] == labels[v]
        bend = 0.25 if level[u] - level[v] > 1 else 0.0  # arcs that skip layers curve past them
        # drawn above the boxes (whose outlines clip the arrows only once they are drawn)
        ax.annotate("", xy=(0.5, 0.5), xycoords=boxes[v], xytext=(0.5, 0.5), textcoords=boxes[u], zorder=4,
                    arrowprops=dict(arrowstyle="-|>", mutation_scale=9, shrinkA=0, shrinkB=1,
                                    color="#333333" if inside else "#aaaaaa", linewidth=1.0 if inside else 0.8,
                                    patchA=boxes[u].get_bbox_patch(), patchB=boxes[v].get_bbox_patch(),
                                    connectionstyle=f"arc3,rad={bend}"))
    shared = sum(len(c) > 1 for c in clusters)
    fig.suptitle(title or f"{network.name}: {len(clusters)} clusters of {len(network.nodes)} nodes",
                 y=1 - 0.1 / height, va="top")
    fig.text(0.01, 0.1 / height, f"{shared} clusters of two or more nodes in colour, {len(clusters) - shared} of one "
             "node in grey; thick border: observed node; leaves at the bottom", fontsize=FONT_SIZE, va="bottom")
    save_figure(fig, output)


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


def _band(ax: Any, segments: list[tuple[tuple[float, float], tuple[float, float]]], colour: Any,
          zorder: float) -> None:
    """A cluster's outline: a light band with a border in ``colour`` along ``segments``."""
    from matplotlib.collections import LineCollection

    for width, shade in ((TUBE_POINTS + 3, _shade(colour)), (TUBE_POINTS, _tint(colour))):
        ax.add_collection(LineCollection(segments, linewidths=width, colors=[shade], capstyle="round",
                                         joinstyle="round", zorder=zorder))


def _layer_order(network: Network, labels: Mapping[str, int]) -> list[list[str]]:
    """The nodes of each layer (leaves first) in the order that drawing them crosses
    fewest arcs, of those met in :data:`SWEEPS` barycentre sweeps (alternately down
    from the top layer and up from the leaves; each node moves to the mean position
    of its parents and children, those in its own cluster counted twice)."""
    rows = [list(row) for row in layer_nodes(network)]
    weighted = {x: [(y, 2.0 if labels[x] == labels[y] else 1.0)
                    for y in (*network.parents[x], *network.children[x])] for x in network.nodes}
    best, fewest = [list(row) for row in rows], _crossings(network, rows)
    for sweep in range(SWEEPS):
        sequence = range(len(rows) - 1, -1, -1) if sweep % 2 == 0 else range(len(rows))
        for layer in sequence:
            at = _positions(rows)
            rows[layer].sort(key=lambda x: (sum(at[y] * w for y, w in weighted[x]) / sum(w for _, w in weighted[x])
                                            if weighted[x] else at[x]))
        crossings = _crossings(network, rows)
        if crossings < fewest:
            best, fewest = [list(row) for row in rows], crossings
    return best


def _positions(rows: list[list[str]]) -> dict[str, float]:
    """Each node's horizontal position: its rank in its layer, layers centred on 0."""
    return {x: k - (len(row) - 1) / 2 for row in rows for k, x in enumerate(row)}


def _crossings(network: Network, rows: list[list[str]]) -> int:
    """How many pairs of arcs cross when drawn as straight segments between positions."""
    if len(network.edges) < 2:
        return 0
    at = _positions(rows)
    level = {x: layer for layer, row in enumerate(rows) for x in row}
    ends = np.array([[at[u], level[u], at[v], level[v]] for u, v in network.edges])
    a, b = ends[:, :2], ends[:, 2:]

    def side(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Sign of the turn p -> q -> r for each segment pair (rows: p, q; columns: r)."""
        d = q - p
        return np.sign(d[:, None, 0] * (r[None, :, 1] - p[:, None, 1]) - d[:, None, 1] * (r[None, :, 0] - p[:, None, 0]))

    straddles = side(a, b, a) * side(a, b, b) < 0  # [i, j]: j's ends lie on both sides of i's line
    proper = straddles & straddles.T
    return int(np.triu(proper, 1).sum())


