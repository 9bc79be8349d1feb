"""Checkpoints: the whole state of a search as Apache Arrow tables, written so that a
process killed at any instant leaves a checkpoint that resumes, and read so that a
damaged or altered one is never resumed into a result.

A checkpoint folder holds generations (``gen-000001``, ...) and a pointer file
``LATEST`` naming the newest complete one. A generation is written into a
temporary folder, every file fsynced, the folder renamed, then ``LATEST``
replaced atomically; the previous generation is kept until the new one is
complete. Each generation holds ``metadata.json``, one Arrow IPC file per table
(readable by pyarrow, pandas' ``read_feather`` and polars' ``read_ipc``) and
``SHA256SUMS``, the digest of every other file; docs/checkpoints.md describes every
column. Nothing is stored as a pickle but the messages of a user cost model that have
no plain encoding (:mod:`dcmap_dist.checkpoint.codec`), which are read back only when the caller
trusts the folder.

This module is the format (schemas, file names, errors); :mod:`.write` writes a
generation and :mod:`.read` reads one back, checking its digests, validating every
table in full and decoding every row before it is used (a generation that fails is
reported and the one before it tried). The state of the component being searched
(:class:`~dcmap_dist.search.state.SearchState`) does not depend on how many actors held
it, so a checkpoint resumes on any number of workers.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa

from .codec import KEY_FIELDS

__all__ = ["BATCH_ROWS", "CheckpointError", "CheckpointWarning", "DIGESTS", "Damaged", "FAULT_VARIABLE", "FILES",
           "FORMAT", "METADATA", "POINTER", "SCHEMAS", "TABLES", "digest", "generations"]

FORMAT = 3  # 3: digests, no pickles, keys as columns; 2: issue 29's keys; 1: the first
POINTER = "LATEST"
DIGESTS = "SHA256SUMS"
METADATA = "metadata.json"
BATCH_ROWS = 20_000
FAULT_VARIABLE = "DCMAP_CHECKPOINT_FAULT"  # "<step>:<generation>": kill -9 there (tests)

_MASKS = pa.list_(pa.binary())
SCHEMAS = {
    "branches": pa.schema([
        ("component", pa.int32()), ("arrival", pa.bool_()), ("layer", pa.int32()), ("assigned", pa.binary()),
        ("comps", pa.list_(pa.struct([("members", pa.binary()), ("fixed", pa.bool_())]))),
        ("cls", pa.list_(pa.struct([("members", pa.binary()), ("message", pa.int64())]))),
        ("cost", pa.float64()), ("estimate", pa.float64()), ("bound", pa.float64()), ("link", pa.int64()),
        ("trail_record", pa.int64()), ("trail_joins", _MASKS),
    ]),
    "links": pa.schema([("component", pa.int32()), *KEY_FIELDS, ("best", pa.float64()), ("record", pa.int64())]),
    "histories": pa.schema([("component", pa.int32()), ("record", pa.int64()), ("iteration", pa.int64()),
                            ("trail_record", pa.int64()), ("trail_joins", _MASKS)]),
    "dominated": pa.schema([("component", pa.int32()), ("record", pa.int64())]),
    "messages": pa.schema([("id", pa.int64()), ("codec", pa.string()), ("value", pa.binary())]),
}
TABLES = tuple(SCHEMAS)
FILES = (METADATA, *(f"{name}.arrow" for name in TABLES))


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, damaged, altered, or of another search."""


class Damaged(CheckpointError):
    """A generation that does not read whole: the one before it may still do."""


class CheckpointWarning(UserWarning):
    """A checkpoint resumed with less than it held: a damaged generation passed over for
    the one before it, or a best mapping that cannot be rebuilt."""


def digest(path: Path) -> str:
    """The SHA-256 of a file, as written in ``SHA256SUMS``."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def generations(directory: Path) -> list[Path]:
    """The complete generation folders of a checkpoint, newest first."""
    found = [p for p in directory.glob("gen-*") if re.fullmatch(r"gen-\d{6}", p.name) and p.is_dir()]
    return sorted(found, key=lambda p: p.name, reverse=True)
