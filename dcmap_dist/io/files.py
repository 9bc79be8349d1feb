"""Reading input files safely: only regular files, gunzipped when their name ends in
``.gz``, never more than :func:`input_limit` bytes (so that ``/dev/zero`` or a
decompression bomb is refused before it fills the memory), and JSON whose objects
hold each key once."""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any

from ..env import EnvironmentValueError, number
from ..model.network import NetworkError

__all__ = ["INPUT_LIMIT_VARIABLE", "MAX_INPUT_MB", "input_limit", "no_duplicate_keys", "read_json", "read_text"]

MAX_INPUT_MB = 256  # the most a network or result file may hold, gunzipped (bnlearn's largest: 5.3 MB)
INPUT_LIMIT_VARIABLE = "DCMAP_MAX_INPUT_MB"  # raises (or lowers) it
LARGEST_INPUT_MB = 2**20  # the most it may say (a TiB): a file is read whole into memory


def input_limit() -> int:
    """The most bytes an input file may hold once gunzipped: :data:`MAX_INPUT_MB` MiB, or
    what the environment variable :data:`INPUT_LIMIT_VARIABLE` says."""
    try:
        megabytes = number(INPUT_LIMIT_VARIABLE, MAX_INPUT_MB, LARGEST_INPUT_MB, "MiB")
    except EnvironmentValueError as exc:
        raise NetworkError(str(exc)) from None
    return int(megabytes * 2**20)


def read_text(path: Path, encodings: tuple[str, ...] = ("utf-8",)) -> str:
    """Read a text file, gunzipping it when its name ends in ``.gz``, in the first of
    ``encodings`` that decodes it (a UTF-8 byte order mark is dropped). Only a regular
    file is read (not a device such as ``/dev/zero``, a pipe or a folder), and at most
    :func:`input_limit` bytes of it, gunzipped: a file that holds or inflates to more
    is refused before it fills the memory."""
    limit = input_limit()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise NetworkError(f"cannot read {path}: it is not a regular file")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise NetworkError(f"no such file: {path}") from None
    except (OSError, EOFError, zlib.error) as exc:  # EOFError, zlib.error: a damaged .gz
        raise NetworkError(f"cannot read {path}: {exc}") from None
    if len(data) > limit:
        raise NetworkError(f"cannot read {path}: it holds more than {limit / 2**20:g} MiB"
                           f"{' once gunzipped' if path.suffix == '.gz' else ''}, far more than a network; "
                           f"set {INPUT_LIMIT_VARIABLE} to a larger number of MiB if it is meant to")
    for encoding in encodings:
        try:
            return data.decode("utf-8-sig" if encoding == "utf-8" else encoding)
        except UnicodeDecodeError as exc:
            problem = exc
    raise NetworkError(f"cannot read {path}: it is not {' or '.join(encodings)} text ({problem})")


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` that refuses an object with a key twice
    (JSON allows it, and the last one would silently win)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise NetworkError(f"the key {key!r} appears twice in one JSON object (which one is meant?)")
        found[key] = value
    return found


def read_json(path: Path) -> dict[str, Any]:
    """Parse a JSON (or JSON.gz) file, with an error naming the file and the line; an
    object with a key twice, or nesting deeper than Python's parser goes, is refused."""
    text = read_text(path)
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise NetworkError(f"{path} is not valid JSON: {exc}") from None
    except NetworkError as exc:
        raise NetworkError(f"{path}: {exc}") from None
    except RecursionError:
        raise NetworkError(f"{path}: its JSON is nested too deeply to be a network") from None
