"""The commands that draw (with matplotlib, imported only then): ``plot`` (a result's
anytime trace and similarity curve) and ``draw`` (a network with a result's clusters)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cost.base import CostError, evaluate_mapping
from ..cost.user import load_cost
from ..io.outputs import check_output
from ..model.mappings import MappingError, check_mapping
from ..io.files import read_json
from ..model.network import Network, NetworkError
from .network_commands import load_from_options
from ..text import printable

__all__ = ["run_draw", "run_plot"]


def run_plot(args: argparse.Namespace) -> int:
    from ..viz import plots  # imports matplotlib only when it draws

    result, output = _picture_paths(args, "-trace.png")
    try:
        notes = plots.plot_trace(result, output, args.title)
    except plots.MissingMatplotlib as exc:
        return _missing(exc)
    for note in notes:
        print(f"note: {note}")
    print(f"trace written to {output}")
    return 0


def run_draw(args: argparse.Namespace) -> int:
    from ..viz import drawing, plots  # imports matplotlib only when it draws

    result, output = _picture_paths(args, "-clusters.png", (Path(args.network),))
    clusters, what = plots.mapping_of(result, args.solution, args.trace_point)
    network = load_from_options(args)
    drawing.check_drawable(network)  # at once, before the mapping is checked or anything drawn
    try:
        check_mapping(network, clusters, result.get("scheme", "merge"))
    except MappingError as exc:
        raise MappingError(f"the mapping drawn from {args.result} does not fit {network.name}: {exc} "
                           "(was the result solved on this network, with the same --slices?)") from None
    costs, note = _cluster_costs(network, clusters, result.get("cost_model"))
    try:
        drawing.draw_clusters(network, clusters, output, args.title or f"{network.name}: {what}", costs)
    except plots.MissingMatplotlib as exc:
        return _missing(exc)
    if note:
        print(f"note: {note}")
    print(f"clusters written to {output}")
    return 0


def _cluster_costs(network: Network, clusters: list[list[str]],
                   described: Any) -> tuple[list[float] | None, str | None]:
    """Each cluster's cost (its cluster-layers' costs added up) under the cost model a
    result names, or None with a note saying why not (a model that cannot be rebuilt)."""
    if not isinstance(described, dict) or not isinstance(described.get("name"), str):
        return None, "the result names no cost model: the legend shows no costs"
    name = described["name"]
    try:
        model = load_cost(name, order=described.get("order", "cpt"), addition=described.get("addition", 0.6)) \
            if name == "dcmap" else load_cost(name)
        rows = evaluate_mapping(network, clusters, model)
    except (ImportError, AttributeError, ValueError, CostError) as exc:
        return None, f"cost model {name} cannot be rebuilt here ({exc}): the legend shows no costs"
    owner = {x: k for k, cluster in enumerate(clusters) for x in cluster}
    costs = [0.0] * len(clusters)
    for row in rows:
        costs[owner[next(iter(row.nodes))]] += row.cost
    return costs, None


def _picture_paths(args: argparse.Namespace, suffix: str,
                   inputs: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Path]:
    """The result JSON of ``plot`` or ``draw``, and the picture's path: ``--output`` (with
    ``.png`` added to a name without a suffix; ``-`` refused), or beside the result, its
    stem with ``suffix``; checked not to be an input."""
    source = Path(args.result)
    stem = Path(source.name.removesuffix(".gz")).stem  # result.json.gz -> result
    if args.output == "-":
        raise ValueError(f"--output -: a picture cannot go to standard output; give a file name such as "
                         f"{stem}{suffix}")
    output = Path(args.output) if args.output else source.with_name(stem + suffix)
    if not output.suffix:  # what matplotlib would write: named here, so the message says so
        output = output.with_name(output.name + ".png")
    check_output(output, [source, *inputs])
    result = read_json(source)
    if not isinstance(result, dict):
        raise NetworkError(f"{source} is not a dcmap result: it holds a JSON {type(result).__name__}, not an object")
    return result, output


def _missing(exc: ImportError) -> int:
    """Exit code 2, with the install command, when matplotlib is missing."""
    print(f"dcmap: error: {printable(exc)}", file=sys.stderr)
    return 2
