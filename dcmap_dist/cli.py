"""The ``dcmap`` command line: ``info``, ``cost``, ``solve``, ``resume``, ``template``,
and the pictures ``plot`` and ``draw``."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._version import __version__
from .compiled import describe
from .cost.base import CostError, evaluate_mapping
from .cost.dcmap import ELIMINATION_ORDERS, DcmapCost
from .cost.user import load_cost
from .io.dynamic import MAX_UNROLLED_NODES, recover_template
from .io.load import bundled_examples, load_network
from .io.outputs import OutputError, check_output, json_cost, write_atomic
from .model.mappings import SCHEMES, MappingError, check_mapping
from .model.network import Network, NetworkError, TooLarge, read_json
from .model.topology import eta, layer_nodes, long_arcs, scientific
from .search.limits import INTERRUPT, memory_mb
from .solve import METHODS, SolveResult, solve

# dcmap solve refuses larger networks unless --force: setting one up (before the search,
# outside --time-limit) takes minutes beyond it (docs/inputs.md)
MAX_SOLVE_NODES = 10_000


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dcmap`` console script; returns the exit code: 0 done (a
    solve proven optimal), 1 internal error, 2 bad input or usage, 3 a solve stopped by
    a limit (its best result written), 4 interrupted by a signal, 5 its Ray was lost (the
    best result written either way). See the README's Troubleshooting."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error already printed
        return int(stop.code or 0)
    args.command = ["dcmap", *(sys.argv[1:] if argv is None else argv)]
    if os.getcwd() not in sys.path:  # --cost module:name finds modules where the user is
        sys.path.append(os.getcwd())
    try:
        return args.run(args)
    except (NetworkError, CostError, ValueError, TimeoutError) as exc:
        _traceback_if_debugging()
        print(f"dcmap: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dcmap: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: one line, the traceback on request
        _traceback_if_debugging()
        print(f"dcmap: internal error: {type(exc).__name__}: {exc} (please report this bug, with the "
              "command and its input; DCMAP_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def _traceback_if_debugging() -> None:
    """Print the traceback of the exception being handled when DCMAP_DEBUG is set."""
    if os.environ.get("DCMAP_DEBUG"):
        traceback.print_exc()


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``dcmap: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"dcmap: error: {message} (see '{self.prog} --help')\n")


def _checked(convert: Callable[[str], Any], ok: Callable[[Any], bool], what: str) -> Callable[[str], Any]:
    """An argparse type: the text ``convert``-ed, which must then satisfy ``ok``."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


_POSITIVE = _checked(float, lambda v: 0 < v < math.inf, "a positive number")
_NON_NEGATIVE = _checked(float, lambda v: 0 <= v < math.inf, "a number >= 0")
_PROBABILITY = _checked(float, lambda v: 0 <= v <= 1, "a probability from 0 to 1")
_POSITIVE_INT = _checked(int, lambda v: v >= 1, "an integer >= 1")
_COUNT = _checked(int, lambda v: v >= 0, "an integer >= 0")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dcmap", description="Optimal clustering of Bayesian network nodes with dependent costs (DCMAP).",
        epilog=f"Bundled example networks, usable by name: {', '.join(bundled_examples())}. Exit codes: 0 done "
               "(proven optimal), 1 internal error, 2 bad input or usage, 3 stopped by a limit (best result "
               "written), 4 interrupted, 5 Ray lost (best result written either way).",
    )
    parser.add_argument("--version", action="version", version=f"dcmap {__version__} ({describe()})")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="describe a network")
    _network_options(info)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(run=_info)

    cost = sub.add_parser("cost", help="evaluate one mapping")
    _network_options(cost)
    cost.add_argument("mapping", help='JSON file {"clusters": [["A", "D"], ["F"], ...]}')
    _cost_options(cost)
    cost.add_argument("--json", action="store_true", help="print JSON")
    cost.set_defaults(run=_cost)

    solve_ = sub.add_parser("solve", help="find every optimal mapping", allow_abbrev=False)
    _network_options(solve_)
    _cost_options(solve_)
    solve_.add_argument("--method", choices=METHODS, default="dcmap", help="search method (default dcmap)")
    solve_.add_argument("--force", action="store_true",
                        help=f"solve a network of more than {MAX_SOLVE_NODES:,} nodes (its setup takes minutes and "
                             "is not covered by --time-limit)")
    solve_.add_argument("--alpha", type=_PROBABILITY, default=0.6, help="probability of best-first activation (0.6)")
    solve_.add_argument("--seed", type=int, default=0, help="random seed for activation (0)")
    solve_.add_argument("--link-key", choices=("lean", "full"), default="lean",
                        help="dominance key: lean (default) or SPEC's full key")
    solve_.add_argument("--no-bound", action="store_true", help="do not prune with the cost model's lower bound")
    _run_options(solve_)
    solve_.set_defaults(run=_solve)

    resume = sub.add_parser("resume", help="resume a checkpointed search (on any number of workers)",
                            allow_abbrev=False)
    resume.add_argument("checkpoint", metavar="DIR", help="the --checkpoint folder of a solve")
    _run_options(resume, resuming=True)
    resume.set_defaults(run=_resume)

    template = sub.add_parser("template", help="recover the 2-slice template of an unrolled network")
    template.add_argument("network", help="network file whose node names carry a slice suffix")
    template.add_argument("--output", "-o", metavar="FILE", help="write the template JSON to FILE")
    template.set_defaults(run=_template)

    plot = sub.add_parser("plot", help="draw a result's anytime trace and similarity curve (needs matplotlib)")
    plot.add_argument("result", metavar="RESULT", help="result JSON written by dcmap solve --output")
    plot.add_argument("--output", "-o", metavar="FILE",
                      help="image to write, its format from its suffix (default: RESULT's name with -trace.png)")
    plot.add_argument("--title", help="the figure's title")
    plot.set_defaults(run=_plot)

    draw = sub.add_parser("draw", help="draw a network by layer with the clusters of a result (needs matplotlib)")
    _network_options(draw)
    draw.add_argument("result", metavar="RESULT", help="result JSON of a solve of this network")
    which = draw.add_mutually_exclusive_group()
    which.add_argument("--solution", type=_COUNT, metavar="N", help="draw the result's N-th mapping (default 0)")
    which.add_argument("--trace-point", type=_COUNT, metavar="N",
                       help="draw the mapping of the trace's N-th improvement (an anytime mapping)")
    draw.add_argument("--output", "-o", metavar="FILE",
                      help="image to write, its format from its suffix (default: RESULT's name with -clusters.png)")
    draw.add_argument("--title", help="the figure's title")
    draw.set_defaults(run=_draw)
    return parser


def _run_options(parser: argparse.ArgumentParser, resuming: bool = False) -> None:
    """Options of a search run: limits, output, workers, checkpoints."""
    counted = " (counted from the resumption)" if resuming else ""
    parser.add_argument("--time-limit", type=_POSITIVE, metavar="S", help=f"stop after S seconds{counted}")
    parser.add_argument("--max-iterations", type=_POSITIVE_INT, metavar="N",
                        help=f"stop after N iterations{counted}")
    parser.add_argument("--memory-limit", type=_POSITIVE, metavar="MB", help="stop above MB MiB of memory (with --workers: the coordinator and the workers together)")
    parser.add_argument("--max-solutions", type=_COUNT, default=10_000, metavar="N",
                        help="list at most N optimal mappings (default 10000; 0: all); all are counted")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the result JSON to FILE ('-' for stdout)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    parser.add_argument("--workers", "-w", type=_POSITIVE_INT, default=1, metavar="W",
                        help="search on W Ray worker actors (default 1: serial, without Ray)")
    parser.add_argument("--address", metavar="ADDR",
                        help="Ray to attach to with --workers: auto (the running cluster), local (default: "
                             "a private Ray on this machine, stopped afterwards) or HOST:PORT")
    parser.add_argument("--link-table", choices=("sharded", "coordinator"), default="sharded",
                        help="where the dominance table lives with --workers: sharded over the workers "
                             "(default) or on the coordinator")
    parser.add_argument("--snapshot-every", type=_POSITIVE, default=30.0, metavar="S",
                        help="with --workers: snapshot every S s at least, to recover a lost worker (30)")
    if not resuming:
        parser.add_argument("--checkpoint", metavar="DIR",
                            help="write checkpoints (Arrow tables) to DIR, to resume with 'dcmap resume DIR'")
        parser.add_argument("--fresh-checkpoint", action="store_true",
                            help="discard a checkpoint already in --checkpoint DIR (else it is refused)")
    else:
        parser.add_argument("--trust-checkpoint", action="store_true",
                            help="read the messages of a user cost model that the checkpoint stores as Python "
                                 "pickles (they can run code: only for a folder you trust)")
    parser.add_argument("--checkpoint-every", type=_POSITIVE, metavar="S",
                        help="seconds between checkpoints (default 600); one is also written when a "
                             "limit or a signal stops the search")


def _network_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("network", help="network: .json, .bif, .bif.gz (others through pyAgrum), a 2-slice "
                                        f"template, or a bundled example: {', '.join(bundled_examples())}")
    parser.add_argument("--slices", type=_POSITIVE_INT, metavar="T", help="unroll a 2-slice template to T slices")
    parser.add_argument("--observe", metavar="NAMES", default="", help="comma-separated observed nodes")
    parser.add_argument("--order", choices=ELIMINATION_ORDERS, default="cpt", help="elimination order (cpt)")
    parser.add_argument("--addition", type=_NON_NEGATIVE, default=0.6, help="cost of one addition (0.6)")


def _cost_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cost", default="dcmap", help="'dcmap' or package.module:name (default dcmap)")
    parser.add_argument("--scheme", choices=SCHEMES, default="merge", help="feasible mappings (merge)")


def _load(args: argparse.Namespace, max_nodes: int = MAX_UNROLLED_NODES) -> Network:
    observe = [x.strip() for x in args.observe.split(",") if x.strip()]
    return load_network(args.network, slices=args.slices, observe=observe, max_nodes=max_nodes)


def _info(args: argparse.Namespace) -> int:
    network = _load(args)
    by_layer = layer_nodes(network)
    states = Counter(network.states.values())
    facts: dict[str, Any] = {
        "name": network.name,
        "nodes": len(network.nodes),
        "arcs": len(network.edges),
        "states": {str(k): v for k, v in sorted(states.items())},
        "observed": sorted(network.observed),
        "layers": len(by_layer),
        "nodes_per_layer": [len(nodes) for nodes in by_layer],
        "long_arcs": len(long_arcs(network)),
        "eta": eta(network),
        "components": len(network.components()),
        "naive_cost": _finite(DcmapCost(args.order, args.addition).naive(network)),
        "hash": network.content_hash(),
    }
    if args.json:
        print(json.dumps(facts, indent=1))
        return 0
    states_text = ", ".join(f"{v} with {scientific(int(k))}" for k, v in facts["states"].items())
    print(f"network      {facts['name']}")
    print(f"nodes        {facts['nodes']} ({states_text} states)")
    print(f"observed     {', '.join(facts['observed']) or 'none'}")
    print(f"arcs         {facts['arcs']} ({facts['long_arcs']} skip layers)")
    print(f"layers       {facts['layers']} (nodes per layer, leaves first: {facts['nodes_per_layer']})")
    print(f"eta          {scientific(facts['eta'])} ({facts['eta']})")
    print(f"components   {facts['components']}")
    naive = "past the float range" if facts["naive_cost"] is None else f"{facts['naive_cost']:.1f}"
    print(f"naive cost   {naive} (order {args.order})")
    return 0


def _cost(args: argparse.Namespace) -> int:
    network = _load(args)
    data = read_json(Path(args.mapping))
    if not isinstance(data, dict) or "clusters" not in data:
        raise NetworkError(f"{args.mapping} must be a JSON object with a 'clusters' list")
    clusters = check_mapping(network, data["clusters"], args.scheme)
    model = load_cost(args.cost, order=args.order, addition=args.addition)
    rows = evaluate_mapping(network, clusters, model)
    total = sum(row.cost for row in rows)
    if args.json:
        print(json.dumps({
            "total": _finite(total),
            "cluster_layers": [{"nodes": sorted(r.nodes), "layer": r.layer, "cost": _finite(r.cost)} for r in rows],
        }, indent=1))
        return 0
    owner = {x: k for k, cluster in enumerate(sorted(clusters, key=sorted)) for x in cluster}
    shown = sorted(rows, key=lambda r: (owner[next(iter(r.nodes))], r.layer))
    print(f"{'cluster':>7}  {'layer':>5}  {'cost':>12}  nodes")
    for row in shown:
        print(f"{owner[next(iter(row.nodes))] + 1:>7}  {row.layer:>5}  {row.cost:12.1f}  {', '.join(sorted(row.nodes))}")
    print(f"total {total:.1f} ({len(clusters)} clusters, {len(rows)} cluster-layers)")
    return 0


def _finite(value: float) -> float | None:
    """A cost for JSON: 12 significant digits, None (JSON null) past the float range."""
    return json_cost(value)


def _solve(args: argparse.Namespace) -> int:
    if args.output and args.output != "-":
        check_output(Path(args.output), [Path(args.network)])
    if args.checkpoint:
        from .checkpoint.session import check_checkpoint_path  # imports pyarrow

        check_checkpoint_path(Path(args.checkpoint), args.output and Path(args.output))
    try:
        network = _load(args, MAX_UNROLLED_NODES if args.force else MAX_SOLVE_NODES)
    except TooLarge as exc:
        if args.force:
            raise
        fewer = "use fewer slices, or " if args.slices else ""
        raise TooLarge(f"{exc} by dcmap solve: setting up a larger network takes minutes, which --time-limit "
                       f"does not cover; {fewer}give --force") from None
    return _search(args, network, dict(
        cost=args.cost, scheme=args.scheme, method=args.method, alpha=args.alpha, seed=args.seed,
        order=args.order, addition=args.addition, key=args.link_key, use_bound=not args.no_bound,
        checkpoint=args.checkpoint, fresh_checkpoint=args.fresh_checkpoint))


def _resume(args: argparse.Namespace) -> int:
    from .checkpoint.session import Resume, check_checkpoint_path  # imports pyarrow

    if args.output and args.output != "-":
        check_output(Path(args.output), [])
    check_checkpoint_path(Path(args.checkpoint), args.output and Path(args.output))
    resumed = Resume(Path(args.checkpoint), args.trust_checkpoint)
    meta = resumed.metadata
    if meta["cost_spec"] is None:
        raise ValueError(f"checkpoint {args.checkpoint} was made with a cost model given as a Python object; "
                         "resume it from Python: solve(network, cost=..., resume=DIR)")
    params = meta["cost_model"]
    return _search(args, None, dict(
        cost=meta["cost_spec"], scheme=meta["scheme"], alpha=meta["alpha"], seed=meta["seed"],
        order=params.get("order", "cpt"), addition=params.get("addition", 0.6), key=meta["link_key"],
        use_bound=meta["use_bound"], resume=resumed))


def _search(args: argparse.Namespace, network: Network | None, settings: dict[str, Any]) -> int:
    """Run a solve with the run options of ``args``; SIGINT and SIGTERM stop it cleanly
    (a checkpoint and the result with the best so far are written; exit code 4)."""
    _check_memory_limit(args.memory_limit)
    progress = Progress(enabled=not args.quiet)
    INTERRUPT.clear()
    handlers = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _stdout_to_stderr():
            result = solve(
                network, time_limit=args.time_limit, max_iterations=args.max_iterations,
                memory_limit_mb=args.memory_limit, max_solutions=args.max_solutions or None,
                on_improvement=progress.improved, on_progress=progress.update,
                workers=args.workers, address=args.address, link_table=args.link_table,
                snapshot_every=args.snapshot_every, checkpoint_every=args.checkpoint_every, **settings,
            )
    finally:
        progress.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    result.command = args.command
    status = 0 if result.proven_optimal else STOPPED.get(result.stop_reason, 3)
    if result.stop_reason == "ray_lost":
        lost = next((c["distributed"]["lost"] for c in result.components if "lost" in c.get("distributed", {})), "")
        folder = settings.get("checkpoint") or settings.get("resume")
        folder = getattr(folder, "directory", folder)
        again = f"go on from its last checkpoint with: dcmap resume {folder}" if folder else \
            "without --checkpoint it starts again from the beginning"
        print(f"dcmap: Ray was lost during the search ({lost}); the best mapping found so far is in the result; "
              f"{again}", file=sys.stderr)
    if args.output == "-":
        print(result.to_json())
        return status
    if args.output:
        _write_result(Path(args.output), result.to_json() + "\n")
    _summary(result, args.output)
    return status


STOPPED = {"interrupted": 4, "ray_lost": 5}  # exit codes of an unproven solve; others (a limit): 3


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While a search runs, whatever is printed on standard output (Ray, or a user's
    cost function; also by the processes started meanwhile) goes to standard error:
    standard output carries only what the user asked for (``--output -`` stays valid
    JSON)."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output at all
        yield
        return
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _check_memory_limit(limit_mb: float | None) -> None:
    """Refuse a --memory-limit that this process already uses: it would stop the search at once."""
    used = memory_mb()
    if limit_mb is not None and used >= limit_mb:
        raise ValueError(f"--memory-limit {limit_mb:g} MiB is below the {used:.0f} MiB this process already "
                         "uses before searching")


def _interrupt(signum: int, _frame: Any) -> None:
    """SIGINT or SIGTERM: stop the search cleanly; a second one stops at once."""
    if INTERRUPT.is_set():
        raise KeyboardInterrupt
    INTERRUPT.set()
    print(f"dcmap: {signal.Signals(signum).name}: stopping; the best so far will be written "
          "(send it again to stop at once)", file=sys.stderr)


def _write_result(path: Path, text: str) -> None:
    """Write a solve's result; if that fails, print it on stdout so the work is not lost."""
    try:
        write_atomic(path, text)
    except OutputError as exc:
        sys.stdout.write(text)
        raise OutputError(f"{exc}; the result is on stdout instead") from None


def _summary(result: SolveResult, output: str | None) -> None:
    bound = f"no mapping costs less than {result.lower_bound:.1f}"
    if not math.isfinite(result.optimal_cost):  # breadth-first search stopped before a whole mapping
        print(f"{result.network}: no complete mapping found ({result.stop_reason}); {bound}")
    else:
        status = ("proven optimal" if result.proven_optimal else
                  f"best found, not proven ({result.stop_reason}); {bound} (gap {100 * result.gap:.2f}%)")
        print(f"{result.network}: cost {result.optimal_cost:.1f}, {status}")
    listed = "" if result.solutions_complete else f" ({len(result.solutions)} listed)"
    print(f"{result.solution_count} mapping(s){listed}; {result.iterations} iterations "
          f"in {result.elapsed_seconds:.2f} s")
    for solution in result.solutions[:3]:
        print("  " + " ".join("{" + ", ".join(map(str, c)) + "}" for c in solution.clusters))
    if result.solution_count > 3:
        print(f"  ... and {result.solution_count - 3} more")
    if output:
        print(f"result written to {output}")


def _plot(args: argparse.Namespace) -> int:
    from .viz import plots  # imports matplotlib only when it draws

    result, output = _picture_paths(args, "-trace.png")
    try:
        notes = plots.plot_trace(result, output, args.title)
    except plots.MissingMatplotlib as exc:
        return _missing(exc)
    for note in notes:
        print(f"note: {note}")
    print(f"trace written to {output}")
    return 0


def _draw(args: argparse.Namespace) -> int:
    from .viz import drawing, plots  # imports matplotlib only when it draws

    result, output = _picture_paths(args, "-clusters.png", (Path(args.network),))
    clusters, what = plots.mapping_of(result, args.solution, args.trace_point)
    network = _load(args)
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
    """The result JSON of ``plot`` or ``draw``, and the picture's path: ``--output``, or
    beside the result, its stem with ``suffix``; checked not to be an input."""
    source = Path(args.result)
    stem = Path(source.name.removesuffix(".gz")).stem  # result.json.gz -> result
    output = Path(args.output) if args.output else source.with_name(stem + suffix)
    check_output(output, [source, *inputs])
    result = read_json(source)
    if not isinstance(result, dict):
        raise NetworkError(f"{source} is not a dcmap result: it holds a JSON {type(result).__name__}, not an object")
    return result, output


def _missing(exc: ImportError) -> int:
    """Exit code 2, with the install command, when matplotlib is missing."""
    print(f"dcmap: error: {exc}", file=sys.stderr)
    return 2


def _template(args: argparse.Namespace) -> int:
    if args.output:
        check_output(Path(args.output), [Path(args.network)])
    template = recover_template(load_network(args.network))
    text = json.dumps(template, indent=1) + "\n"
    if args.output:
        write_atomic(Path(args.output), text)
        print(f"template with {len(template['nodes'])} nodes and {template['slices']} slices "
              f"written to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


class Progress:
    """Live progress on stderr: a rewritten line on a terminal, a line every 10 s otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.calls = 0
        self.shown = False

    def improved(self, cost: float, iteration: int, seconds: float, _clusters: Any = None) -> None:
        if self.enabled:
            self._clear()
            print(f"improved: cost {cost:.1f} at iteration {iteration} ({seconds:.1f} s)", file=sys.stderr)

    def update(self, stats: dict[str, Any]) -> None:
        self.calls += 1
        if not self.enabled or (not self.tty and self.calls % 10):
            return
        best, lower = stats["best"], stats.get("lower_bound", math.nan)
        gap = (best - lower) / best if best > 0 and math.isfinite(best) and math.isfinite(lower) else math.nan
        workers = f"  {stats['workers']} workers" if "workers" in stats else ""
        line = (f"iterations {stats['iterations']:>10}  best {best:.1f}  bound {lower:.1f}  gap {100 * gap:.2f}%  "
                f"open {stats['open']:>8}{workers}  {stats['rate']:.0f} it/s  {stats['elapsed']:.0f} s  "
                f"{stats['memory_mb']:.0f} MiB")
        if self.tty:  # one terminal line, rewritten in place: cut to the width, rest cleared
            width = shutil.get_terminal_size().columns
            print("\r\033[K" + line[: width - 1], end="", file=sys.stderr, flush=True)
            self.shown = True
        else:
            print(line, file=sys.stderr, flush=True)

    def _clear(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr)
            self.shown = False

    def close(self) -> None:
        self._clear()


if __name__ == "__main__":
    sys.exit(main())
