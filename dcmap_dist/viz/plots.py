"""Pictures of results, drawn with matplotlib (the optional extra ``dcmap_dist[plot]``).

* :func:`plot_trace`: a solve's anytime trace (cost and lower bound against
  iterations and seconds) and the similarity of each improving mapping to the
  optimal ones (:mod:`dcmap_dist.study.similarity`);
* :func:`plot_scaling`: a scaling study's iterations and seconds against nodes,
  log-log, with each family's fitted growth exponent (:mod:`dcmap_dist.study.growth`).

A mapping drawn on its network is :func:`dcmap_dist.viz.drawing.draw_clusters`.

matplotlib is imported when a picture is drawn, not with this module, and only its
``Figure`` is used (no pyplot): nothing needs a display, and the backend of a
program that already uses matplotlib is left alone.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..study.growth import PowerFit, fit_power
from ..study.similarity import similarities
from ..text import printable

__all__ = ["MissingMatplotlib", "figure", "mapping_of", "plot_scaling", "plot_trace", "qualitative_colours",
           "save_figure"]

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


def qualitative_colours(name: str) -> list[Any]:
    """The colours of a matplotlib qualitative colour map."""
    from matplotlib import colormaps

    return list(colormaps[name].colors)


def save_figure(fig: Any, output: Path) -> None:
    """Write the figure (its format from the file's suffix), creating missing folders.
    Characters that the figure's font lacks (a CJK name in DejaVu Sans) are drawn in an
    installed font that has them all, if one does; else one warning names them (not
    matplotlib's one per character)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    missing = _saved(fig, output)
    if not missing:
        return
    fallback = _font_with(missing)
    if fallback is not None:
        from matplotlib.text import Text

        for text in fig.findobj(Text):
            text.set_fontfamily([*text.get_fontfamily(), fallback])
        missing = _saved(fig, output)
    if missing:
        shown = "".join(sorted(map(chr, missing)))
        warnings.warn(f"no installed font has the characters {shown}: they are drawn as boxes in {output} "
                      "(install a font that has them, such as Noto Sans CJK for Chinese, Japanese or Korean)",
                      stacklevel=2)


def _saved(fig: Any, output: Path) -> set[int]:
    """Save ``fig``; the code points matplotlib found no glyph for (its other warnings passed on)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(output, dpi=100)
    missing = set()
    for warning in caught:
        found = _GLYPH.match(str(warning.message))
        if found:
            missing.add(int(found.group(1)))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return missing


_GLYPH = re.compile(r"Glyph (\d+) .*missing from font")


def _font_with(codes: set[int]) -> str | None:
    """The name of an installed font that has a glyph for every code point of ``codes``
    (matplotlib's placeholder font aside), or None."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    for entry in font_manager.fontManager.ttflist:
        if "Last Resort" in entry.name:
            continue
        try:
            if codes <= FT2Font(entry.fname).get_charmap().keys():
                return entry.name
        except (OSError, RuntimeError):
            continue
    return None


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
    fig.suptitle(printable(title or f"{result.get('network', 'result')}: cost {_number(cost)} ({proven}), "
                                    f"{result.get('iterations', '?')} iterations"))
    save_figure(fig, output)
    return notes


def _trace(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trace points, checked: each with an iteration, seconds and a cost (or null)."""
    if not isinstance(result, Mapping) or not isinstance(result.get("trace"), list):
        raise ValueError("not a dcmap result: it has no 'trace' list (write one with dcmap solve --output)")
    for k, point in enumerate(result["trace"]):
        if not (isinstance(point, Mapping) and all(isinstance(point.get(key), (int, float))
                                                   for key in ("iteration", "seconds"))):
            raise ValueError(f"trace point {k} needs a numeric 'iteration' and 'seconds', got {point!r}")
        if not _numeric(point.get("cost")):
            raise ValueError(f"trace point {k}: its 'cost' is {point.get('cost')!r}, not a number or null")
    for key in ("optimal_cost", "lower_bound", "iterations", "elapsed_seconds"):
        if not _numeric(result.get(key)):
            raise ValueError(f"the result's {key!r} is {result[key]!r}, not a number or null: not a dcmap result "
                             "as dcmap solve writes it (edited?)")
    for k, point in enumerate(result.get("bounds") or []):
        if not (isinstance(point, Mapping) and _numeric(point.get("lower_bound"))):
            raise ValueError(f"bounds point {k}: its 'lower_bound' is not a number or null, got {point!r}")
    return result["trace"]


def _numeric(value: Any) -> bool:
    """A number (not a bool) or None, as a result file's figures are."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


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


# --- a scaling study --------------------------------------------------------------------------------------------


def plot_scaling(rows: Sequence[Mapping[str, str]], output: Path,
                 columns: Sequence[str] = tuple(SCALING_PANELS)) -> dict[tuple[str, str, int], PowerFit]:
    """Draw a scaling study's CSV rows (as ``csv.DictReader`` reads them: strings, empty
    when missing): each of ``columns`` (by default iterations and seconds to the first
    optimal mapping and to the proof, a 2 x 2 grid) against ``nodes``, log-log, one
    series per ``family`` and worker count, each with its fitted growth exponent
    (:func:`~dcmap_dist.study.growth.fit_power`, 95% interval) in the legend and its fitted
    line dashed. Only runs proven optimal are drawn (the first optimal mapping of an
    unproven run is not known to be optimal); values of 0 cannot be drawn on a log
    axis and are counted in the legend instead (a panel of zeros only, as the first
    mapping's iteration is when it is optimal, says so).

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

    family_colour = dict(zip(families, (qualitative_colours("tab10") * len(families))[: len(families)]))
    marker = dict(zip(workers, "osD^vP*X" * len(workers)))
    axes = np.atleast_1d(fig.subplots(down, across)).ravel()
    fits: dict[tuple[str, str, int], PowerFit] = {}
    for ax, column in zip(axes, columns):
        for (family, w), points in sorted(series.items()):
            if not points[column]:
                continue
            drawn = [(x, v) for x, v in points[column] if v > 0]
            if not drawn:  # every run at 0 (the first mapping already optimal): nothing to draw on log axes
                continue
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
        ax.set_title(SCALING_PANELS[column], fontsize=10)
        if not ax.lines:
            ax.text(0.5, 0.5, "every run at 0", ha="center", va="center", transform=ax.transAxes)
            continue
        ax.set_xscale("log")
        ax.set_yscale("log")
        for ticks in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
            ticks(FuncFormatter(lambda value, _: f"{value:g}"))  # 60, not 6 x 10^1
        ax.set_xlabel("nodes n")
        ax.set_ylabel("seconds" if column.endswith("seconds") else "iterations")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, title="y = c n^b, 95% interval of b", title_fontsize=7)
    for ax in axes[len(columns):]:
        ax.axis("off")
    save_figure(fig, output)
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
