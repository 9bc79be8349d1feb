"""Checkpoints: the whole state of a search as Apache Arrow tables, written so that a
process killed at any instant leaves a checkpoint that resumes.

A checkpoint folder holds generations (``gen-000001``, ...) and a pointer file
``LATEST`` naming the newest complete one. A generation is written into a
temporary folder, every file fsynced, the folder renamed, then ``LATEST``
replaced atomically; the previous generation is kept until the new one is
complete. Each generation holds ``metadata.json`` and one Arrow IPC file per
table (readable by pyarrow, pandas' ``read_feather`` and polars' ``read_ipc``);
docs/checkpoints.md describes every column.

The state of the component being searched (:class:`SearchState`) does not depend
on how many actors held it, so a checkpoint resumes on any number of workers.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from .engine import Branch
from .linking import Entry, History
from .state import SearchState

FORMAT = 2  # 2: keys inside a layer carry the mask of components holding a node of it (issue 29)
POINTER = "LATEST"
BATCH_ROWS = 20_000
FAULT_VARIABLE = "DCMAP_CHECKPOINT_FAULT"  # "<step>:<generation>": kill -9 there (tests)

_MASKS = pa.list_(pa.binary())
SCHEMAS = {
    "branches": pa.schema([
        ("component", pa.int32()), ("arrival_key", pa.binary()), ("layer", pa.int32()),
        ("assigned", pa.binary()),
        ("comps", pa.list_(pa.struct([("members", pa.binary()), ("fixed", pa.bool_())]))),
        ("cls", pa.list_(pa.struct([("members", pa.binary()), ("message", pa.binary())]))),
        ("cost", pa.float64()), ("estimate", pa.float64()), ("bound", pa.float64()), ("link", pa.int64()),
        ("trail_record", pa.int64()), ("trail_joins", _MASKS),
    ]),
    "links": pa.schema([("component", pa.int32()), ("key", pa.binary()), ("best", pa.float64()),
                        ("record", pa.int64())]),
    "histories": pa.schema([("component", pa.int32()), ("record", pa.int64()), ("iteration", pa.int64()),
                            ("trail_record", pa.int64()), ("trail_joins", _MASKS)]),
    "dominated": pa.schema([("component", pa.int32()), ("record", pa.int64())]),
}
TABLES = tuple(SCHEMAS)


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, damaged, or of another search."""


# -- values <-> columns -------------------------------------------------------------
def mask_bytes(mask: int) -> bytes:
    """A node mask as little-endian bytes (bit i is node i of the component)."""
    return mask.to_bytes(max(1, (mask.bit_length() + 7) // 8), "little")


def bytes_mask(data: bytes) -> int:
    return int.from_bytes(data, "little")


def _trail_columns(trail: tuple) -> tuple[int | None, list[bytes]]:
    return trail[0], [mask_bytes(m) for m in trail[1:]]


def _trail(record: int | None, joins: list[bytes]) -> tuple:
    return (record, *(bytes_mask(j) for j in joins))


def _pickled(value: Any, memo: dict[Any, bytes]) -> bytes:
    """``pickle.dumps(value)``, once per distinct value (messages repeat across branches)."""
    got = memo.get(value)
    if got is None:
        got = memo[value] = pickle.dumps(value, protocol=5)
    return got


def _branch_row(component: int, branch: Branch, key: tuple | None, memo: dict[Any, bytes]) -> dict[str, Any]:
    record, joins = _trail_columns(branch.trail)
    return {
        "component": component, "arrival_key": None if key is None else pickle.dumps(key, protocol=5),
        "layer": branch.layer, "assigned": None if branch.assigned == -1 else mask_bytes(branch.assigned),
        "comps": [{"members": mask_bytes(m), "fixed": f} for m, f in branch.comps],
        "cls": [{"members": mask_bytes(m), "message": _pickled(msg, memo)} for m, msg in branch.cls],
        "cost": branch.cost, "estimate": branch.estimate, "bound": branch.bound, "link": branch.link,
        "trail_record": record, "trail_joins": joins,
    }


def _row_branch(row: dict[str, Any], memo: dict[bytes, Any]) -> tuple[tuple | None, Branch]:
    key = None if row["arrival_key"] is None else pickle.loads(row["arrival_key"])
    messages = []
    for c in row["cls"]:
        message = memo.get(c["message"])
        if message is None:
            message = memo[c["message"]] = pickle.loads(c["message"])
        messages.append((bytes_mask(c["members"]), message))
    branch = Branch(
        row["layer"], -1 if row["assigned"] is None else bytes_mask(row["assigned"]),
        tuple((bytes_mask(c["members"]), c["fixed"]) for c in row["comps"]), tuple(messages),
        row["cost"], _trail(row["trail_record"], row["trail_joins"]), row["link"], row["estimate"], row["bound"],
    )
    return key, branch


def state_rows(component: int, state: SearchState) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row of ``state``, as ``(table, row)``."""
    memo: dict[Any, bytes] = {}
    for branch in state.branches:
        yield "branches", _branch_row(component, branch, None, memo)
    for key, branch in state.arrivals:
        yield "branches", _branch_row(component, branch, key, memo)
    for key, entry in state.entries.items():
        yield "links", {"component": component, "key": pickle.dumps(key, protocol=5), "best": entry.best,
                        "record": entry.record}
    yield from history_rows(component, state.histories)
    for record in state.dominated:
        yield "dominated", {"component": component, "record": record}


def history_rows(component: int, histories: dict[int, list[History]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for record, items in histories.items():
        for trail, iteration in items:
            trail_record, joins = _trail_columns(trail)
            yield "histories", {"component": component, "record": record, "iteration": iteration,
                                "trail_record": trail_record, "trail_joins": joins}


# -- writing ----------------------------------------------------------------------------
def _fault(step: str, generation: int) -> None:
    """Fault injection for tests: ``DCMAP_CHECKPOINT_FAULT=<step>:<generation>`` kills
    this process (SIGKILL) at that step of writing that generation."""
    if os.environ.get(FAULT_VARIABLE) == f"{step}:{generation}":
        os.kill(os.getpid(), 9)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def generations(directory: Path) -> list[Path]:
    """The complete generation folders of a checkpoint, newest first."""
    found = [p for p in directory.glob("gen-*") if re.fullmatch(r"gen-\d{6}", p.name) and p.is_dir()]
    return sorted(found, key=lambda p: p.name, reverse=True)


def write_checkpoint(directory: Path, metadata: dict[str, Any],
                     rows: Iterable[tuple[str, dict[str, Any]]]) -> Path:
    """Write a new generation from ``rows`` (``(table, row)`` pairs, streamed in batches
    so the state is never copied whole) and point ``LATEST`` at it; returns its folder."""
    directory.mkdir(parents=True, exist_ok=True)
    done = generations(directory)
    number = int(done[0].name[4:]) + 1 if done else 1
    for stale in directory.glob(".gen-*.tmp"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = directory / f".gen-{number:06d}.tmp"
    tmp.mkdir()
    writers = {name: pa.ipc.new_file(tmp / f"{name}.arrow", SCHEMAS[name]) for name in TABLES}
    pending: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    counts = dict.fromkeys(TABLES, 0)

    def flush(name: str) -> None:
        if pending[name]:
            writers[name].write_batch(pa.RecordBatch.from_pylist(pending[name], schema=SCHEMAS[name]))
            counts[name] += len(pending[name])
            pending[name] = []
            _fault(f"table-{name}", number)

    try:
        for name, row in rows:
            pending[name].append(row)
            if len(pending[name]) >= BATCH_ROWS:
                flush(name)
        for name in TABLES:
            flush(name)
    finally:
        for writer in writers.values():
            writer.close()
    for name in TABLES:
        _fsync(tmp / f"{name}.arrow")
    meta = dict(metadata, format=FORMAT, generation=number, rows=counts)
    with open(tmp / "metadata.json", "w") as handle:
        json.dump(meta, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    _fault("metadata", number)
    final = directory / f"gen-{number:06d}"
    os.rename(tmp, final)
    _fsync(directory)
    _fault("rename", number)
    pointer = directory / f".{POINTER}.tmp"
    with open(pointer, "w") as handle:
        handle.write(final.name + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(pointer, directory / POINTER)
    _fsync(directory)
    for old in done[1:]:  # keep the previous generation, drop the older ones
        shutil.rmtree(old, ignore_errors=True)
    return final


# -- reading ----------------------------------------------------------------------------
def read_generation(folder: Path) -> tuple[dict[str, Any], dict[str, pa.Table]]:
    """The metadata and tables of one generation; CheckpointError naming what is wrong."""
    try:
        with open(folder / "metadata.json") as handle:
            meta = json.load(handle)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{folder / 'metadata.json'}: unreadable ({exc})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{folder}: checkpoint format {meta.get('format')!r}, this version reads {FORMAT}")
    tables = {}
    for name in TABLES:
        path = folder / f"{name}.arrow"
        try:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_file(source).read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise CheckpointError(f"{path}: unreadable ({exc})") from None
        if table.num_rows != meta["rows"][name] or not table.schema.equals(SCHEMAS[name]):
            raise CheckpointError(f"{path}: {table.num_rows} rows, metadata says {meta['rows'][name]}, "
                                  "or its columns differ: truncated or damaged")
        tables[name] = table
    return meta, tables


def read_checkpoint(directory: Path) -> tuple[dict[str, Any], dict[str, pa.Table]]:
    """The newest generation that reads whole (the one ``LATEST`` names first); a damaged
    one is reported on stderr by name and the one before it is used."""
    if not directory.is_dir():
        raise CheckpointError(f"no checkpoint at {directory}: not a folder")
    folders = generations(directory)
    try:
        named = directory / (directory / POINTER).read_text().strip()
        if named in folders:
            folders.remove(named)
            folders.insert(0, named)
    except OSError:
        pass
    problems = []
    for folder in folders:
        try:
            found = read_generation(folder)
        except CheckpointError as exc:
            problems.append(str(exc))
            print(f"dcmap: warning: checkpoint generation {folder.name} is damaged ({exc}); "
                  "trying the one before", file=sys.stderr)
            continue
        return found
    detail = f": {'; '.join(problems)}" if problems else ""
    raise CheckpointError(f"no usable checkpoint generation in {directory}{detail}")


def table_state(tables: dict[str, pa.Table], component: int) -> SearchState:
    """The :class:`SearchState` of ``component`` from a generation's tables."""
    state = SearchState()
    memo: dict[bytes, Any] = {}
    for row in _rows(tables["branches"], component):
        key, branch = _row_branch(row, memo)
        if key is None:
            state.branches.append(branch)
        else:
            state.arrivals.append((key, branch))
    for row in _rows(tables["links"], component):
        state.entries[pickle.loads(row["key"])] = Entry(row["best"], row["record"])
    state.histories = table_histories(tables, component)
    state.dominated = {row["record"] for row in _rows(tables["dominated"], component)}
    return state


def table_histories(tables: dict[str, pa.Table], component: int) -> dict[int, list[History]]:
    histories: dict[int, list[History]] = {}
    for row in _rows(tables["histories"], component):
        histories.setdefault(row["record"], []).append(
            (_trail(row["trail_record"], row["trail_joins"]), row["iteration"]))
    return histories


def _rows(table: pa.Table, component: int) -> Iterator[dict[str, Any]]:
    for batch in table.to_batches(BATCH_ROWS):
        for row in batch.to_pylist():
            if row["component"] == component:
                yield row
