"""The argument parser of the ``dcmap`` command line: its commands, their option groups
(network, cost, run) and the checked converters of option values; each command names
the function that runs it (``run``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from .._version import __version__
from ..compiled import describe
from ..cost.dcmap import ELIMINATION_ORDERS
from ..io.load import bundled_examples
from ..model.mappings import SCHEMES
from ..settings import FIRST_BUDGET, LINK_KEYS, LINK_TABLES, METHODS
from .network_commands import run_cost, run_info, run_template
from .picture_commands import run_draw, run_plot
from .search_commands import MAX_SOLVE_NODES, run_resume, run_solve

__all__ = ["build_parser"]


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


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``dcmap`` command line; each command sets ``run``, the function that runs it."""
    parser = _Parser(
        prog="dcmap", description="Optimal clustering of Bayesian network nodes with dependent costs (DCMAP).",
        epilog=f"Bundled example networks, usable by name: {', '.join(bundled_examples())}. Exit codes: 0 done "
               "(proven optimal), 1 internal error, 2 bad input or usage, 3 stopped by a limit (best result "
               "written), 4 interrupted (best result written), 5 Ray lost (best result written), 6 a fault of "
               "the machine (a full disk, Ray not starting; best result written where it can be).",
    )
    parser.add_argument("--version", action="version", version=f"dcmap {__version__} ({describe()})")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="describe a network")
    _network_options(info)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(run=run_info)

    cost = sub.add_parser("cost", help="evaluate one mapping")
    _network_options(cost)
    cost.add_argument("mapping", help='JSON file {"clusters": [["A", "D"], ["F"], ...]}')
    _cost_options(cost)
    cost.add_argument("--json", action="store_true", help="print JSON")
    cost.set_defaults(run=run_cost)

    solve_ = sub.add_parser("solve", help="find every optimal mapping", allow_abbrev=False)
    _network_options(solve_)
    _cost_options(solve_)
    solve_.add_argument("--method", choices=METHODS, default="dcmap", help="search method (default dcmap)")
    solve_.add_argument("--force", action="store_true",
                        help=f"solve a network of more than {MAX_SOLVE_NODES:,} nodes (its setup takes minutes and "
                             "is not covered by --time-limit)")
    solve_.add_argument("--alpha", type=_PROBABILITY, default=0.6, help="probability of best-first activation (0.6)")
    solve_.add_argument("--seed", type=int, default=0, help="random seed for activation (0)")
    solve_.add_argument("--link-key", choices=LINK_KEYS, default="lean",
                        help="dominance key: lean (default) or SPEC's full key")
    solve_.add_argument("--no-bound", action="store_true", help="do not prune with the cost model's lower bound")
    _run_options(solve_)
    solve_.set_defaults(run=run_solve)

    resume = sub.add_parser("resume", help="resume a checkpointed search (on any number of workers)",
                            allow_abbrev=False)
    resume.add_argument("checkpoint", metavar="DIR", help="the --checkpoint folder of a solve")
    _run_options(resume, resuming=True)
    resume.set_defaults(run=run_resume)

    template = sub.add_parser("template", help="recover the 2-slice template of an unrolled network")
    template.add_argument("network", help="network file whose node names carry a slice suffix")
    template.add_argument("--output", "-o", metavar="FILE",
                          help="write the template JSON to FILE ('-' or none: standard output)")
    template.set_defaults(run=run_template)

    plot = sub.add_parser("plot", help="draw a result's anytime trace and similarity curve (needs matplotlib)")
    plot.add_argument("result", metavar="RESULT", help="result JSON written by dcmap solve --output")
    plot.add_argument("--output", "-o", metavar="FILE",
                      help="image to write, its format from its suffix (.png if it has none; default: RESULT's "
                           "name with -trace.png)")
    plot.add_argument("--title", help="the figure's title")
    plot.set_defaults(run=run_plot)

    draw = sub.add_parser("draw", help="draw a network by layer with the clusters of a result (needs matplotlib)")
    _network_options(draw)
    draw.add_argument("result", metavar="RESULT", help="result JSON of a solve of this network")
    which = draw.add_mutually_exclusive_group()
    which.add_argument("--solution", type=_COUNT, metavar="N", help="draw the result's N-th mapping (default 0)")
    which.add_argument("--trace-point", type=_COUNT, metavar="N",
                       help="draw the mapping of the trace's N-th improvement (an anytime mapping)")
    draw.add_argument("--output", "-o", metavar="FILE",
                      help="image to write, its format from its suffix (.png if it has none; default: RESULT's "
                           "name with -clusters.png)")
    draw.add_argument("--title", help="the figure's title")
    draw.set_defaults(run=run_draw)
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
    parser.add_argument("--link-table", choices=LINK_TABLES, default="sharded",
                        help="where the dominance table lives with --workers: sharded over the workers "
                             "(default) or on the coordinator (it does several times the "
                             "work: docs/distributed.md)")
    parser.add_argument("--first-budget", type=_COUNT, default=FIRST_BUDGET, metavar="N",
                        help=f"expansions the beam search for the first mapping may take (default {FIRST_BUDGET}; "
                             "0: the greedy dive only); it speeds the proof, never changes the result")
    parser.add_argument("--snapshot-every", type=_POSITIVE, default=30.0, metavar="S",
                        help="with --workers: snapshot every S s at least (and every 10%% of the run), to "
                             "recover a lost worker (30)")
    parser.add_argument("--contours", action="store_true",
                        help="search by contours (serially or with --workers): the lower bound shown is proven and rises as the "
                             "search goes; the result is the same (docs/search.md)")
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
    parser.add_argument("--strict", action="store_true",
                        help="refuse a BIF file whose probability tables are broken (by default a warning)")
    parser.add_argument("--order", choices=ELIMINATION_ORDERS, default="cpt", help="elimination order (cpt)")
    parser.add_argument("--addition", type=_NON_NEGATIVE, default=0.6, help="cost of one addition (0.6)")


def _cost_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cost", default="dcmap", help="'dcmap' or package.module:name (default dcmap)")
    parser.add_argument("--scheme", choices=SCHEMES, default="merge", help="feasible mappings (merge)")
