"""The ``dcmap`` command line: ``info``, ``cost``, ``solve``, ``resume``, ``template``,
and the pictures ``plot`` and ``draw``.

``main`` parses the arguments (``parser``) and runs the command they name, turning its
errors into exit codes and one-line messages. The commands live in ``network_commands``
(info, cost, template), ``search_commands`` (solve, resume; with the progress
``display``) and ``picture_commands`` (plot, draw)."""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import Any

from ..compiled import warn_build
from ..cost.base import CostError
from ..env import EnvironmentValueError, flag
from ..faults import EXIT_CODE as FAULT_EXIT_CODE, EnvironmentFault
from ..text import printable
from ..model.network import NetworkError
from .parser import build_parser

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dcmap`` console script; returns the exit code: 0 done (a
    solve proven optimal), 1 internal error, 2 bad input or usage, 3 a solve stopped by
    a limit (its best result written), 4 interrupted by a signal, 5 its Ray was lost, 6
    a fault of the machine (:mod:`dcmap_dist.faults`: a checkpoint the disk refused, Ray
    not starting in time); a search's best result is written in every case. See the README's Troubleshooting."""
    try:  # a bad value of an environment variable is refused before anything runs
        flag("DCMAP_DEBUG")
        parser = build_parser()  # its --version reads DCMAP_ENGINE
    except EnvironmentValueError as exc:
        print(f"dcmap: error: {printable(exc)}", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error already printed
        return int(stop.code or 0)
    args.command = ["dcmap", *(sys.argv[1:] if argv is None else argv)]
    if os.getcwd() not in sys.path:  # --cost module:name finds modules where the user is
        sys.path.append(os.getcwd())
    try:
        with warnings.catch_warnings():  # the library's warnings, one line each on stderr
            warnings.showwarning = _show_warning
            warn_build()  # a source edited since the build, the native engine not built
            return args.run(args)
    except (NetworkError, CostError, ValueError, TimeoutError) as exc:
        _traceback_if_debugging()
        print(f"dcmap: error: {printable(exc)}", file=sys.stderr)
        return 2
    except EnvironmentFault as exc:  # the machine failed the run: an outcome, not a bug
        _traceback_if_debugging()
        print(f"dcmap: error: {printable(exc)}", file=sys.stderr)
        return FAULT_EXIT_CODE
    except KeyboardInterrupt:
        print("dcmap: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: one line, the traceback on request
        _traceback_if_debugging()
        print(f"dcmap: internal error: {type(exc).__name__}: {printable(exc)} (please report this bug, with the "
              "command and its input; DCMAP_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Show a warning as ``dcmap: warning: ...`` on stderr (where the code warned, with DCMAP_DEBUG)."""
    where = f" ({filename}:{lineno})" if _debugging() else ""
    print(f"dcmap: warning: {printable(message)}{where}", file=sys.stderr)


def _traceback_if_debugging() -> None:
    """Print the traceback of the exception being handled when DCMAP_DEBUG is on."""
    if _debugging():
        traceback.print_exc()


def _debugging() -> bool:
    """DCMAP_DEBUG is on (checked when the command started: a bad value is an error then)."""
    try:
        return flag("DCMAP_DEBUG")
    except EnvironmentValueError:
        return False
