"""Pictures of results, drawn with matplotlib (the optional extra ``dcmap_dist[plot]``).

* :func:`plot_trace`: a solve's anytime trace (cost and lower bound against
  iterations and seconds) and the similarity of each improving mapping to the
  optimal ones (:mod:`dcmap_dist.similarity`);
* :func:`draw_clusters`: a network drawn by layer, leaves at the bottom, with each
  cluster of a mapping in its own colour and outline;
* :func:`plot_scaling`: a scaling study's iterations and seconds against nodes,
  log-log, with each family's fitted growth exponent (:mod:`dcmap_dist.growth`).

matplotlib is imported when a picture is drawn, not with this module, and only its
``Figure`` is used (no pyplot): nothing needs a display, and the backend of a
program that already uses matplotlib is left alone.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .growth import PowerFit, fit_power
from .network import Network
from .similarity import cluster_labels, similarities
from .structure import layer_nodes, layers

INSTALL_HINT = "pip install 'dcmap_dist[plot]'"
# the study CSV's columns drawn by plot_scaling, with their panel titles
SCALING_PANELS = {
    "first_optimal_iteration": "iterations to the first optimal mapping",
    "proof_iterations": "iterations to the proof of optimality",
    "first_optimal_seconds": "seconds to the first optimal mapping",
    "proof_seconds": "seconds to the proof of optimality",
}
TRUE_TEXTS = ("true", "1", "yes")  # how a CSV cell says a run was proven optimal


class MissingMatplotlib(ImportError):
    """matplotlib is not installed; the message says how to install it."""


def figure(**options: Any) -> Any:
    """A new matplotlib ``Figure`` (not attached to pyplot); raises
    :class:`MissingMatplotlib` with the install command when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingMatplotlib(f"pictures need matplotlib, which is not installed: {INSTALL_HINT}") from None
    return Figure(**options)


def _colours(name: str) -> list[Any]:
    """The colours of a matplotlib qualitative colour map."""
    from matplotlib import colormaps

    return list(colormaps[name].colors)


def _save(fig: Any, output: Path) -> None:
    """Write the figure (its format from the file's suffix), creating missing folders."""
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)


# --- the anytime trace ------------------------------------------------------------------------------------------


def plot_trace(result: Mapping[str, Any], output: Path, title: str | None = None) -> list[str]:
    """Draw a solve's anytime trace from its result JSON (``dcmap solve --output``):
    the best cost (a step curve) and the lower bound against iterations, the
    similarity of each improving mapping to the listed optimal mappings against
    iterations, and cost and bound against seconds. The cost axis is logarithmic
    when the costs drawn span more than a decade. The optimum is a line when it is
    proven; a dotted line marks the first optimal mapping.

    Returns notes for the user: why the similarity panel is missing (a result
    written before the trace recorded mappings), or what it compares with.
    Raises ValueError when ``result`` is not a solve's result.
    """
    trace = _trace(result)
    notes: list[str] = []
    panel, note = _similarity_panel(result, trace)
    if note:
        notes.append(note)
    fig = figure(figsize=(8, 9.5 if panel else 6.5), layout="constrained")
    axes = fig.subplots(3 if panel else 2, 1)
    by_iteration, by_seconds = axes[0], axes[-1]
    if panel:
        axes[1].sharex(by_iteration)
    for ax, axis in ((by_iteration, "iteration"), (by_seconds, "seconds")):
        _cost_panel(ax, result, trace, axis)
    if panel:
        _draw_similarity(axes[1], result, panel)
    proven = "proven optimal" if result.get("proven_optimal") else "not proven optimal"
    cost = result.get("optimal_cost")
    fig.suptitle(title or f"{result.get('network', 'result')}: cost {_number(cost)} ({proven}), "
                          f"{result.get('iterations', '?')} iterations")
    _save(fig, output)
    return notes


def _trace(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trace points, checked: each with an iteration, seconds and a cost (or null)."""
    if not isinstance(result, Mapping) or not isinstance(result.get("trace"), list):
        raise ValueError("not a dcmap result: it has no 'trace' list (write one with dcmap solve --output)")
    for k, point in enumerate(result["trace"]):
        if not (isinstance(point, Mapping) and all(isinstance(point.get(key), (int, float))
                                                   for key in ("iteration", "seconds"))):
            raise ValueError(f"trace point {k} needs a numeric 'iteration' and 'seconds', got {point!r}")
    return result["trace"]


def _cost_panel(ax: Any, result: Mapping[str, Any], trace: list[dict[str, Any]], axis: str) -> None:
    """Best cost (steps) and lower bound against ``axis`` (``iteration`` or ``seconds``)."""
    end = result.get("iterations" if axis == "iteration" else "elapsed_seconds")
    found = [(p[axis], p["cost"]) for p in trace if p.get("cost") is not None]
    bounds = [(b[axis], b["lower_bound"]) for b in result.get("bounds") or [] if b.get("lower_bound") is not None]
    if result.get("lower_bound") is not None and end is not None:
        bounds.append((end, result["lower_bound"]))
    values = [c for _, c in found] + [b for _, b in bounds]
    positive = [v for v in values if v > 0]
    logarithmic = bool(positive) and max(positive) > 10 * min(positive)
    if logarithmic:
        bounds = [(x, b) for x, b in bounds if b > 0]
    if found:
        xs, costs = zip(*found)
        if end is not None and end > xs[-1]:  # the best holds to the end of the search
            xs, costs = (*xs, end), (*costs, costs[-1])
        ax.step(xs, costs, where="post", color="tab:blue", label="best cost found")
        ax.plot([x for x, _ in found], [c for _, c in found], "o", color="tab:blue", markersize=3)
    if len(bounds) > 1:
        ax.step(*zip(*bounds), where="post", color="tab:orange", label="lower bound")
    elif bounds:
        ax.plot(*zip(*bounds), "s", color="tab:orange", label="lower bound at the end")
    if result.get("proven_optimal") and result.get("optimal_cost") is not None:
        ax.axhline(result["optimal_cost"], color="tab:green", linestyle="--", linewidth=1,
                   label=f"proven optimum {_number(result['optimal_cost'])}")
    _mark_first(ax, result, axis)
    if logarithmic:
        ax.set_yscale("log")
    ax.set_xlabel("iteration" if axis == "iteration" else "seconds")
    ax.set_ylabel("cost")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _mark_first(ax: Any, result: Mapping[str, Any], axis: str) -> None:
    """A dotted line at the first optimal (or, unproven, best) mapping's iteration or second."""
    where = result.get("first_optimal_iteration" if axis == "iteration" else "first_optimal_seconds")
    if where is None:
        return
    what = "first optimal mapping" if result.get("proven_optimal") else "first best mapping"
    at = f"iteration {where}" if axis == "iteration" else f"{where:.3g} s"
    ax.axvline(where, color="grey", linestyle=":", linewidth=1.2, label=f"{what} ({at})")


def _similarity_panel(result: Mapping[str, Any],
                      trace: list[dict[str, Any]]) -> tuple[list[tuple[int, float]] | None, str | None]:
    """The similarity of each trace mapping to the listed optimal ones, as (iteration,
    similarity) pairs, or None and why it cannot be drawn; and a note for the user."""
    mapped = [p for p in trace if p.get("clusters") is not None]
    if not mapped:
        return None, ("no similarity panel: the trace records no mappings (a result written before "
                      "the trace held them; solve again to get them)")
    solutions = [s["clusters"] for s in result.get("solutions") or []]
    if not solutions:
        return None, "no similarity panel: the result lists no optimal mapping to compare with"
    nodes = sorted(x for cluster in solutions[0] for x in cluster)
    values = similarities([p["clusters"] for p in mapped], solutions, nodes)
    points = list(zip([p["iteration"] for p in mapped], values))
    skipped = len(trace) - len(mapped)
    note = f"{skipped} trace points have no mapping (left out of the similarity)" if skipped else None
    return points, note


def _draw_similarity(ax: Any, result: Mapping[str, Any], points: list[tuple[int, float]]) -> None:
    """The similarity curve: steps through each improving mapping's similarity."""
    xs, ys = zip(*points)
    end = result.get("iterations")
    if end is not None and end > xs[-1]:
        xs, ys = (*xs, end), (*ys, ys[-1])
    listed = len(result.get("solutions") or [])
    if not result.get("proven_optimal"):
        label = f"similarity to the {listed} best mappings found (not proven optimal)"
    elif result.get("solutions_complete", True):
        label = f"similarity to the {listed} optimal mappings"
    else:
        label = (f"similarity to the {listed} listed of {result.get('solution_count', '?')} optimal mappings "
                 "(the list is incomplete)")
    ax.step(xs, ys, where="post", color="tab:purple", label=label)
    ax.plot([x for x, _ in points], [y for _, y in points], "o", color="tab:purple", markersize=3)
    _mark_first(ax, result, "iteration")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("iteration")
    ax.set_ylabel("similarity")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


def _number(value: Any) -> str:
    """A cost for a title: up to 12 significant digits, or '?' when unknown."""
    return "?" if value is None else f"{value:.12g}"


def mapping_of(result: Mapping[str, Any], solution: int | None = None,
               trace_point: int | None = None) -> tuple[list[list[Hashable]], str]:
    """One mapping of a result, with a description for a title: optimal mapping number
    ``solution`` (default 0), or the mapping of trace point ``trace_point``. Raises
    ValueError when the result has no such mapping."""
    if trace_point is not None:
        trace = _trace(result)
        if not 0 <= trace_point < len(trace):
            raise ValueError(f"the result's trace has {len(trace)} points (0 to {len(trace) - 1}), "
                             f"not {trace_point}")
        point = trace[trace_point]
        if point.get("clusters") is None:
            raise ValueError(f"trace point {trace_point} records no mapping (a result written before the trace "
                             "held mappings; solve again to get them)")
        return point["clusters"], (f"mapping found at iteration {point['iteration']}, cost "
                                   f"{_number(point.get('cost'))}")
    index = 0 if solution is None else solution
    listed = result.get("solutions") if isinstance(result, Mapping) else None
    if not isinstance(listed, list):
        raise ValueError("not a dcmap result: it has no 'solutions' list (write one with dcmap solve --output)")
    if not 0 <= index < len(listed):
        raise ValueError(f"the result lists {len(listed)} mappings" +
                         (f" (0 to {len(listed) - 1})" if listed else "") + f", not {index}")
    chosen = listed[index]
    what = "optimal" if result.get("proven_optimal") else "best found (not proven optimal)"
    return chosen["clusters"], (f"mapping {index} of {result.get('solution_count', len(listed))}, {what}, "
                                f"cost {_number(chosen.get('cost'))}")


# --- a mapping drawn on its network -----------------------------------------------------------------------------

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
    _save(fig, output)


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
    palette = [c for c in _colours("tab10") + _colours("Dark2") + _colours("Set1")
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


# --- a scaling study --------------------------------------------------------------------------------------------


def plot_scaling(rows: Sequence[Mapping[str, str]], output: Path,
                 columns: Sequence[str] = tuple(SCALING_PANELS)) -> dict[tuple[str, str, int], PowerFit]:
    """Draw a scaling study's CSV rows (as ``csv.DictReader`` reads them: strings, empty
    when missing): each of ``columns`` (by default iterations and seconds to the first
    optimal mapping and to the proof, a 2 x 2 grid) against ``nodes``, log-log, one
    series per ``family`` and worker count, each with its fitted growth exponent
    (:func:`~dcmap_dist.growth.fit_power`, 95% interval) in the legend and its fitted
    line dashed. Only runs proven optimal are drawn (the first optimal mapping of an
    unproven run is not known to be optimal); values of 0 cannot be drawn on a log
    axis and are counted in the legend instead.

    Returns the fits, by (column, family, workers): series of fewer than 3 points or
    of a single size have none. Raises ValueError naming a missing column or a cell
    that is not a number.
    """
    unknown = [c for c in columns if c not in SCALING_PANELS]
    if unknown:
        raise ValueError(f"unknown column {unknown[0]!r}: choose from {', '.join(SCALING_PANELS)}")
    series = _study_series(rows, columns)
    families = sorted({family for family, _ in series})
    workers = sorted({w for _, w in series})
    across = 1 if len(columns) == 1 else 2
    down = math.ceil(len(columns) / across)
    fig = figure(figsize=(6.5 * across, 4.8 * down), layout="constrained")
    from matplotlib.ticker import FuncFormatter  # matplotlib is there: figure() found it

    family_colour = dict(zip(families, (_colours("tab10") * len(families))[: len(families)]))
    marker = dict(zip(workers, "osD^vP*X" * len(workers)))
    axes = np.atleast_1d(fig.subplots(down, across)).ravel()
    fits: dict[tuple[str, str, int], PowerFit] = {}
    for ax, column in zip(axes, columns):
        for (family, w), points in sorted(series.items()):
            if not points[column]:
                continue
            drawn = [(x, v) for x, v in points[column] if v > 0]
            n, y = [x for x, _ in drawn], [v for _, v in drawn]
            zeros = len(points[column]) - len(drawn)
            label = family if len(workers) == 1 else f"{family}, {w} worker{'s' * (w != 1)}"
            fit = _fit(n, y)
            if fit is not None:
                fits[(column, family, w)] = fit
                span = np.geomspace(min(n), max(n), 50)
                ax.plot(span, fit.predict(span), "--", color=family_colour[family], linewidth=1)
                label += f": b = {fit.slope:.2f} [{fit.low:.2f}, {fit.high:.2f}]"
            label += f" ({len(y)} runs" + (f", {zeros} at 0 not shown)" if zeros else ")")
            ax.plot(n, y, marker[w], color=family_colour[family], markersize=4, alpha=0.75, label=label,
                    linestyle="none")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for ticks in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
            ticks(FuncFormatter(lambda value, _: f"{value:g}"))  # 60, not 6 x 10^1
        ax.set_xlabel("nodes n")
        ax.set_ylabel("seconds" if column.endswith("seconds") else "iterations")
        ax.set_title(SCALING_PANELS[column], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, title="y = c n^b, 95% interval of b", title_fontsize=7)
    for ax in axes[len(columns):]:
        ax.axis("off")
    _save(fig, output)
    return fits


def _fit(n: list[float], y: list[float]) -> PowerFit | None:
    """The power fit of a series, or None when it has fewer than 3 points or one size."""
    if len(n) < 3 or len(set(n)) < 2:
        return None
    return fit_power(n, y)


def _study_series(rows: Sequence[Mapping[str, str]],
                  columns: Sequence[str]) -> dict[tuple[str, int], dict[str, list[tuple[float, float]]]]:
    """The proven runs' (nodes, value) pairs of each column, by (family, workers)."""
    series: dict[tuple[str, int], dict[str, list[tuple[float, float]]]] = {}
    for k, row in enumerate(rows, start=1):
        for needed in ("family", "nodes", "workers", "proven", *columns):
            if needed not in row:
                raise ValueError(f"the study's rows have no {needed!r} column (row {k} has {', '.join(row)})")
        if str(row["proven"]).strip().lower() not in TRUE_TEXTS:
            continue
        key = (row["family"], int(_cell(row, "workers", k) or 1))
        points = series.setdefault(key, {c: [] for c in columns})
        nodes = _cell(row, "nodes", k)
        for column in columns:
            value = _cell(row, column, k)
            if value is not None and nodes is not None:
                points[column].append((nodes, value))
    return series


def _cell(row: Mapping[str, str], column: str, k: int) -> float | None:
    """A number from a CSV cell, None when it is empty."""
    text = str(row[column]).strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"row {k}: {column} is {text!r}, not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"row {k}: {column} is {text!r}, not a number >= 0")
    return value
