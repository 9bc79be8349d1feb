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

Reading a generation checks its digests, validates every table in full and decodes
every row before it is used; a generation that fails is reported and the one before it
tried. The state of the component being searched (:class:`SearchState`) does not
depend on how many actors held it, so a checkpoint resumes on any number of workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import shutil
import sys
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..model.network import no_duplicate_keys
from ..search.linking import Entry, History
from ..search.problem import Branch
from ..search.state import SearchState
from .codec import KEY_FIELDS, bytes_mask, columns_key, decode_message, encode_message, key_columns, mask_bytes

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


class _Numbered(dict):
    """value -> its number, numbering a new value on its first lookup (a hit is one
    subscript: a write looks up millions of messages)."""

    def __missing__(self, value: Hashable) -> int:
        number = self[value] = len(self)
        return number


class _Bytes(dict):
    """mask -> :func:`codec.mask_bytes`, computed once per distinct mask of a write."""

    def __missing__(self, mask: int) -> bytes:
        got = self[mask] = mask_bytes(mask)
        return got


class Messages:
    """The distinct messages of a generation being written, numbered: each is stored
    once, plainly where it can be (:func:`codec.encode_message`), else as a pickle.
    It also keeps the bytes of every mask written (:data:`masks`)."""

    def __init__(self) -> None:
        self.ids: dict[Hashable, int] = _Numbered()
        self.masks: dict[int, bytes] = _Bytes()
        self.pickled = False

    def id(self, message: Hashable) -> int:
        return self.ids[message]

    def rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for message, number in self.ids.items():
            text = encode_message(message)
            if text is None:
                self.pickled = True
                yield "messages", {"id": number, "codec": "pickle", "value": pickle.dumps(message, protocol=5)}
            else:
                yield "messages", {"id": number, "codec": "plain", "value": text.encode()}


# -- values -> rows ---------------------------------------------------------------------
def _branch_row(component: int, branch: Branch, arrival: bool, messages: Messages) -> dict[str, Any]:
    masks, ids = messages.masks, messages.ids
    return {
        "component": component, "arrival": arrival,
        "layer": branch.layer, "assigned": None if branch.assigned == -1 else masks[branch.assigned],
        "comps": [{"members": masks[m], "fixed": f} for m, f in branch.comps],
        "cls": [{"members": masks[m], "message": ids[msg]} for m, msg in branch.cls],
        "cost": branch.cost, "estimate": branch.estimate, "bound": branch.bound, "link": branch.link,
        "trail_record": branch.trail[0], "trail_joins": _joins(branch.trail),
    }


def state_rows(component: int, state: SearchState, kind: str,
               messages: Messages) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row of ``state`` (link keys of kind ``kind``), as ``(table, row)``. An
    arrival is stored as its branch: its key is the branch's own link key, recomputed
    on resume."""
    for branch in state.branches:
        yield "branches", _branch_row(component, branch, False, messages)
    for _, branch in state.arrivals:
        yield "branches", _branch_row(component, branch, True, messages)
    for key, entry in state.entries.items():
        yield "links", {"component": component, **key_columns(key, kind, messages.ids, messages.masks),
                        "best": entry.best, "record": entry.record}
    yield from history_rows(component, state.histories)
    for record in state.dominated:
        yield "dominated", {"component": component, "record": record}


def history_rows(component: int, histories: dict[int, list[History]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for record, items in histories.items():
        for trail, iteration in items:
            yield "histories", {"component": component, "record": record, "iteration": iteration,
                                "trail_record": trail[0], "trail_joins": _joins(trail)}


def _joins(trail: tuple) -> list[bytes]:
    """A trail's join masks as bytes (mostly distinct: not remembered)."""
    return [m.to_bytes((m.bit_length() + 7) // 8 or 1, "little") for m in trail[1:]]


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


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def generations(directory: Path) -> list[Path]:
    """The complete generation folders of a checkpoint, newest first."""
    found = [p for p in directory.glob("gen-*") if re.fullmatch(r"gen-\d{6}", p.name) and p.is_dir()]
    return sorted(found, key=lambda p: p.name, reverse=True)


def write_checkpoint(directory: Path, metadata: dict[str, Any], rows: Iterable[tuple[str, dict[str, Any]]],
                     messages: Messages) -> Path:
    """Write a new generation from ``rows`` (``(table, row)`` pairs, streamed in batches
    so the state is never copied whole; their messages numbered by ``messages``) and
    point ``LATEST`` at it; returns its folder."""
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

    def add(name: str, row: dict[str, Any]) -> None:
        pending[name].append(row)
        if len(pending[name]) >= BATCH_ROWS:
            flush(name)

    try:
        for name, row in rows:
            add(name, row)
        for name, row in messages.rows():  # last: the rows above numbered them
            add(name, row)
        for name in TABLES:
            flush(name)
    finally:
        for writer in writers.values():
            writer.close()
    meta = dict(metadata, format=FORMAT, generation=number, rows=counts, pickled_messages=messages.pickled)
    with open(tmp / METADATA, "w") as handle:
        json.dump(meta, handle, indent=1)
    _fault("metadata", number)
    sums = "".join(f"{_digest(tmp / name)}  {name}\n" for name in FILES)
    (tmp / DIGESTS).write_text(sums)
    for name in (*FILES, DIGESTS):
        _fsync(tmp / name)
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
@dataclass
class Generation:
    """One generation read whole and decoded: its metadata, the state of each component
    it holds (arrivals without their keys: :meth:`SearchState` of the component being
    searched gets them from the problem) and the histories of the finished ones."""

    folder: Path
    metadata: dict[str, Any]
    states: dict[int, SearchState] = field(default_factory=dict)
    arrivals: dict[int, list[Branch]] = field(default_factory=dict)

    def state(self, component: int) -> SearchState:
        return self.states.get(component) or SearchState()


def _check_digests(folder: Path) -> None:
    try:
        listed = (folder / DIGESTS).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise Damaged(f"{folder / DIGESTS}: unreadable ({exc})") from None
    sums = {}
    for line in listed.splitlines():
        match = re.fullmatch(r"([0-9a-f]{64})  (\S+)", line)
        if not match:
            raise Damaged(f"{folder / DIGESTS}: a malformed line {line[:80]!r}")
        sums[match[2]] = match[1]
    if set(sums) != set(FILES):
        raise Damaged(f"{folder / DIGESTS}: lists {sorted(sums)}, not the files of format {FORMAT}")
    for name in FILES:
        try:
            got = _digest(folder / name)
        except OSError as exc:
            raise Damaged(f"{folder / name}: unreadable ({exc.strerror or exc})") from None
        if got != sums[name]:
            raise Damaged(f"{folder / name}: its SHA-256 digest differs from the one {DIGESTS} gives "
                          "(damaged or altered)")


def _read_metadata(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / METADATA).read_text(encoding="utf-8"), object_pairs_hook=no_duplicate_keys)
    except (OSError, ValueError, RecursionError) as exc:
        raise Damaged(f"{folder / METADATA}: unreadable ({exc})") from None
    if not isinstance(meta, dict):
        raise Damaged(f"{folder / METADATA}: not a JSON object")
    return meta


def _check_format(folder: Path) -> None:
    """Refuse a generation of another format, by its number (the files of older formats
    differ, so this is read before the digests, which format 1 and 2 did not have)."""
    if (folder / DIGESTS).exists():
        return
    try:
        found = json.loads((folder / METADATA).read_text(encoding="utf-8")).get("format")
    except (OSError, ValueError, AttributeError):
        return  # no digests and no readable metadata: reported as damaged
    if found != FORMAT and isinstance(found, int):
        raise CheckpointError(
            f"{folder}: checkpoint format {found}, written by an older dcmap_dist; this version reads format "
            f"{FORMAT} only (format 1 and 2 are not safe to resume: they hold pickles, no digests, and format 1 "
            "the link keys that lost optimal mappings). Resume it with the version that wrote it, or start afresh")


def read_generation(folder: Path, trust: bool = False) -> Generation:
    """One generation, checked and decoded: its digests, its metadata (see
    :func:`check_metadata`), every table validated in full and every row decoded.
    Damaged if any of that fails; CheckpointError (not damage) for another format or
    for pickled messages that ``trust`` does not allow."""
    _check_format(folder)
    _check_digests(folder)
    meta = _read_metadata(folder)
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{folder}: checkpoint format {meta.get('format')!r}, this version reads {FORMAT}")
    check_metadata(meta, folder / METADATA)
    if meta["pickled_messages"] and not trust:
        raise CheckpointError(
            f"checkpoint {folder.parent} holds messages of a user cost model stored as Python pickles, which can "
            "run code when read: resume it only if you trust the folder and who wrote it, with --trust-checkpoint "
            "(solve(..., trust_checkpoint=True))")
    tables = {}
    for name in TABLES:
        path = folder / f"{name}.arrow"
        try:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_file(source).read_all()
            table.validate(full=True)
        except (OSError, pa.ArrowException) as exc:
            raise Damaged(f"{path}: unreadable ({exc})") from None
        if not table.schema.equals(SCHEMAS[name]):
            raise Damaged(f"{path}: its columns are not those of format {FORMAT}")
        if table.num_rows != meta["rows"][name]:
            raise Damaged(f"{path}: {table.num_rows} rows, metadata says {meta['rows'][name]}: truncated or damaged")
        tables[name] = table
    try:
        return _decoded(folder, meta, tables, trust)
    except (ValueError, TypeError, KeyError, OverflowError, pickle.UnpicklingError, EOFError,
            AttributeError, ImportError) as exc:
        raise Damaged(f"{folder}: a row does not decode ({type(exc).__name__}: {exc})") from None


def _rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    for batch in table.to_batches(BATCH_ROWS):
        yield from batch.to_pylist()


def _trail(record: int | None, joins: list[bytes]) -> tuple:
    return (record, *(bytes_mask(j) for j in joins))


def _decoded(folder: Path, meta: dict[str, Any], tables: dict[str, pa.Table], trust: bool) -> Generation:
    messages: dict[int, Hashable] = {}
    for row in _rows(tables["messages"]):
        if row["id"] in messages:
            raise ValueError(f"message id {row['id']} twice")
        if row["codec"] == "plain":
            messages[row["id"]] = decode_message(row["value"].decode("utf-8"))
        elif row["codec"] == "pickle":
            if not (trust and meta["pickled_messages"]):  # never unpickled unless the caller trusts it
                raise ValueError("a pickled message in a checkpoint whose metadata says it holds none")
            messages[row["id"]] = pickle.loads(row["value"])
        else:
            raise ValueError(f"unknown message codec {row['codec']!r}")
    found = Generation(folder, meta)
    kind = meta["link_key"]
    last = meta["component"]

    def state(component: int, table: str) -> SearchState:
        if component is None or not 0 <= component <= last:
            raise ValueError(f"{table}.arrow: component {component} outside 0..{last}")
        return found.states.setdefault(component, SearchState())

    for row in _rows(tables["branches"]):
        if row["component"] != last:
            raise ValueError(f"branches.arrow: a branch of component {row['component']}, not {last}")
        branch = Branch(
            row["layer"], -1 if row["assigned"] is None else bytes_mask(row["assigned"]),
            tuple((bytes_mask(c["members"]), bool(c["fixed"])) for c in row["comps"]),
            tuple((bytes_mask(c["members"]), messages[c["message"]]) for c in row["cls"]),
            row["cost"], _trail(row["trail_record"], row["trail_joins"]), row["link"], row["estimate"], row["bound"])
        if row["arrival"]:
            found.arrivals.setdefault(last, []).append(branch)
        else:
            state(last, "branches").branches.append(branch)
    for row in _rows(tables["links"]):
        if row["component"] != last:
            raise ValueError(f"links.arrow: a record of component {row['component']}, not {last}")
        state(last, "links").entries[columns_key(row, kind, messages.__getitem__)] = Entry(row["best"], row["record"])
    for row in _rows(tables["histories"]):
        state(row["component"], "histories").histories.setdefault(row["record"], []).append(
            (_trail(row["trail_record"], row["trail_joins"]), row["iteration"]))
    for row in _rows(tables["dominated"]):
        state(row["component"], "dominated").dominated.add(row["record"])
    return found


def read_checkpoint(directory: Path, trust: bool = False) -> Generation:
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
    except (OSError, UnicodeDecodeError, ValueError):
        pass
    problems = []
    for folder in folders:
        try:
            return read_generation(folder, trust)
        except Damaged as exc:
            problems.append(str(exc))
            print(f"dcmap: warning: checkpoint generation {folder.name} is damaged ({exc}); "
                  "trying the one before", file=sys.stderr)
    detail = f": {'; '.join(problems)}" if problems else ""
    raise CheckpointError(f"no usable checkpoint generation in {directory}{detail}")


# -- what metadata.json must hold -------------------------------------------------------------
def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES = {  # field: check, what it must be
    "format": (lambda v: v == FORMAT, f"{FORMAT}"),
    "generation": (lambda v: isinstance(v, int) and v >= 1, "a generation number"),
    "network": (lambda v: isinstance(v, dict), "a network object"),
    "network_hash": (lambda v: isinstance(v, str), "a hash"),
    "cost_model": (lambda v: isinstance(v, dict) and isinstance(v.get("name"), str), "a cost model object"),
    "cost_spec": (lambda v: v is None or isinstance(v, str), "null or a string"),
    "scheme": (lambda v: v in ("merge", "single"), "merge or single"),
    "link_key": (lambda v: v in ("lean", "full"), "lean or full"),
    "use_bound": (lambda v: isinstance(v, bool), "true or false"),
    "alpha": (lambda v: _number(v) and 0 <= v <= 1, "a probability"),
    "seed": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "component": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a component index"),
    "counters": (lambda v: v is None or isinstance(v, dict), "null or an object"),
    "finished": (lambda v: isinstance(v, list) and all(isinstance(d, dict) for d in v), "a list of objects"),
    "solve_trace": (lambda v: isinstance(v, list), "a list"),
    "solve_bounds": (lambda v: isinstance(v, list), "a list"),
    "solve_elapsed": (lambda v: _number(v) and v >= 0, "seconds"),
    "rows": (lambda v: isinstance(v, dict) and all(isinstance(v.get(t), int) and v[t] >= 0 for t in TABLES),
             "a row count per table"),
    "pickled_messages": (lambda v: isinstance(v, bool), "true or false"),
}
_COUNTERS = {
    "iterations": (lambda v: isinstance(v, int) and v >= 0, "an iteration count"),
    "elapsed": (lambda v: _number(v) and v >= 0, "seconds"),
    "g_min": (lambda v: _number(v) and v > 0, "a positive cost"),
    "trace": (lambda v: isinstance(v, list), "a list"),
    "first_cost": (lambda v: _number(v) and v > 0, "a positive cost"),
    "first_trail": (lambda v: isinstance(v, list) and v and all(isinstance(x, int) for x in v[1:]), "a trail"),
    "next_owner": (lambda v: isinstance(v, int) and v >= 1, "an owner number"),
}
_FINISHED = {
    "best_cost": (lambda v: _number(v) and v > 0, "a positive cost"),
    "proven": (lambda v: isinstance(v, bool), "true or false"),
    "iterations": (lambda v: isinstance(v, int) and v >= 0, "an iteration count"),
    "lower_bound": (_number, "a number"),
    "trails": (lambda v: isinstance(v, list) and bool(v), "a non-empty list"),
}


def check_metadata(meta: dict[str, Any], path: Path) -> None:
    """Every field a resume reads has the type and range it must have (Damaged naming
    the field otherwise); cross-checks that need the network and the cost model are
    :meth:`session.Resume.verify`'s."""
    def check(where: str, data: dict[str, Any], rules: dict) -> None:
        for name, (ok, what) in rules.items():
            if name not in data:
                raise Damaged(f"{path}: {where}{name} is missing")
            try:
                good = ok(data[name])
            except (TypeError, ValueError):
                good = False
            if not good:
                raise Damaged(f"{path}: {where}{name} must be {what}, not {json.dumps(data[name])[:80]}")

    check("", meta, _TYPES)
    if meta["counters"] is not None:
        check("counters.", meta["counters"], _COUNTERS)
    for k, done in enumerate(meta["finished"]):
        check(f"finished[{k}].", done, _FINISHED)
    if len(meta["finished"]) != meta["component"]:
        raise Damaged(f"{path}: component is {meta['component']} but {len(meta['finished'])} components are "
                      "finished (they must be the ones before it)")
