"""Output files: checked before any work starts, then written whole or not at all.

A long search must not end in "cannot write the result", and an interrupted write
must not leave half a JSON file where a reader expects a whole one.
"""

from __future__ import annotations

import csv
import io
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TextIO

__all__ = ["OutputError", "PACKAGE", "append_csv_row", "check_not_package", "check_output", "json_cost", "unwritable",
           "write_atomic", "write_pieces"]

COST_DIGITS = 12  # significant digits of a cost in a result file or JSON output


class OutputError(ValueError):
    """An output file that cannot be written; the message names it and the reason
    (``errno``: the operating system's error number, when it refused the write)."""

    errno: int | None = None


def json_cost(value: float) -> float | None:
    """A cost as JSON writes it: rounded to :data:`COST_DIGITS` significant digits, so that
    sums that differ only in float rounding print alike (68.8, not 68.80000000000001);
    None (JSON null) for a cost past the float range or never found (``inf``, ``nan``)."""
    return float(f"{value:.{COST_DIGITS}g}") if math.isfinite(value) else None


PACKAGE = Path(__file__).resolve().parents[1]  # the installed package, bundled examples included


def check_not_package(path: Path, what: str) -> None:
    """Raise an OutputError if ``path`` lies inside the installed package (which holds the
    bundled examples): no run may change it."""
    target = Path(os.path.realpath(path))
    if target == PACKAGE or PACKAGE in target.parents:
        raise OutputError(f"{what}: it is inside the installed package {PACKAGE}, which holds the bundled "
                          "examples; write elsewhere")


def check_output(path: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise an OutputError now if ``path`` could not be written later: it is a
    directory, one of the ``inputs``, inside the installed package, a symbolic link to
    a file (:func:`write_atomic` replaces no file through a link), or the nearest
    existing folder above it is not a writable directory. Creates nothing."""
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    for source in inputs:
        if target.exists() and Path(source).exists() and os.path.samefile(target, source):
            raise OutputError(f"cannot write {path}: it is the input file {source}")
    if os.path.islink(path) and _link_to_file(path):
        raise OutputError(f"cannot write {path}: it is a symbolic link to {os.readlink(path)}; give the file's own "
                          "path, or remove the link")
    check_not_package(path, f"cannot write {path}")
    problem = unwritable(target.parent)
    if problem:
        raise OutputError(f"cannot write {path}: {problem}")


def unwritable(folder: Path) -> str | None:
    """Why nothing can be made in ``folder`` (which need not exist yet): the nearest
    existing folder at or above it is not a directory, or not writable; None if it can."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"no permission to write in {folder}"
    return None


def _link_to_file(path: Path) -> bool:
    """A symbolic link that points to a regular file, or to nothing (not a device or a pipe)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # dangling


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (a string, or its pieces in order: a large result is written as
    it is encoded, never held whole) to ``path`` through a temporary file beside it, so that readers
    see the old file or the whole new one, never a part; missing folders are created.
    A file that is replaced keeps its mode; a new one gets what a plain open() gives.

    A path that is not a regular file, such as ``/dev/stdout`` or a named pipe, is
    written directly. A symbolic link to a file is refused: writing through it would
    change a file the user did not name. Raises an OutputError naming the path and the
    reason.
    """
    path = Path(path)
    try:
        if os.path.islink(path) and _link_to_file(path):
            raise OutputError(f"cannot write {path}: it is a symbolic link to {os.readlink(path)}; give the file's "
                              "own path, or remove the link")
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            with open(path, "w", encoding="utf-8") as handle:
                write_pieces(handle, text)
            return
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            write_pieces(handle, text)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # as a plain open() would (mkstemp makes it 0600)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, OSError):
            error = OutputError(f"cannot write {path}: {exc.strerror or exc}")
            error.errno = exc.errno
            raise error from None
        raise


def write_pieces(handle: TextIO, text: str | Iterable[str]) -> None:
    """Write a string, or its pieces one after another, to an open file (joined, the
    pieces of a large result would be held twice)."""
    if isinstance(text, str):
        handle.write(text)
        return
    for piece in text:
        handle.write(piece)


def append_csv_row(path: Path, row: Mapping[str, object], columns: list[str]) -> None:
    """Append ``row`` to the CSV file ``path`` (its header first, if the file is new or
    empty) in one write, then fsync, so that a killed run leaves whole rows only.
    Missing folders are created. A file whose header has other columns is an
    OutputError: rows of another layout would be read under the wrong names."""
    path = Path(path)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    if not path.exists() or path.stat().st_size == 0:
        writer.writeheader()
    else:
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), [])
        if header != list(columns):
            raise OutputError(f"{path} has other columns ({', '.join(header)}) than these rows "
                              f"({', '.join(columns)}): choose another file")
    writer.writerow({k: row.get(k) for k in columns})
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(handle, buffer.getvalue().encode())
        os.fsync(handle)
    finally:
        os.close(handle)
