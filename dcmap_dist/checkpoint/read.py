"""Reading a checkpoint generation (the format is :mod:`dcmap_dist.checkpoint.arrow`): its
digests are checked, every table validated in full and every row decoded before it is
used; a generation that fails is reported and the one before it tried."""

from __future__ import annotations

import json
import pickle
import re
import warnings
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..limits import StopReason
from ..io.files import no_duplicate_keys
from ..io.plain import network_from_dict
from ..search.histories import HistoryTable, history
from ..search.linking import Entry
from ..search.messages import MessageCodes
from ..search.branch import Branch, link_of
from ..search.state import SearchState
from .arrow import (BATCH_ROWS, DIGESTS, FILES, FORMAT, METADATA, POINTER, SCHEMAS, TABLES, CheckpointError,
                    CheckpointWarning, Damaged, digest, generations)
from .codec import Comps, Layers, Masks, batch_keys, bytes_mask, decode_message, list_column

__all__ = ["Generation", "check_metadata", "read_checkpoint", "read_generation"]


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
            got = digest(folder / name)
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


def _check_component(column: pa.Array, last: int, what: str) -> None:
    """Every row of ``column`` is of the component being searched, ``last``."""
    for component in column.to_pylist():
        if component != last:
            raise ValueError(f"{what} of component {component}, not {last}")


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
    if meta["cost_spec"] == "dcmap":  # the built-in model (node_set_messages): its messages held as codes
        codes = MessageCodes(network_from_dict(meta["network"], "network"), True)
        messages = {number: codes.held(value) for number, value in messages.items()}
    found = Generation(folder, meta)
    link_key = meta["link_key"]
    last = meta["component"]

    def state(component: int, table: str) -> SearchState:
        if component is None or not 0 <= component <= last:
            raise ValueError(f"{table}.arrow: component {component} outside 0..{last}")
        return found.states.setdefault(component, SearchState(histories=HistoryTable()))

    masks = Masks()
    for batch in tables["branches"].to_batches(BATCH_ROWS):
        column = batch.column
        _check_component(column("component"), last, "branches.arrow: a branch")
        comps, frontier = Comps(column("comps"), masks), Layers(column("cls"), masks, messages.__getitem__, "cls")
        join_at, joins = list_column(column("trail_joins"), "trail_joins")
        join_masks = list(map(bytes_mask, joins.to_pylist()))  # mostly distinct: not remembered
        fields = ("arrival", "layer", "assigned", "cost", "trail_record", "link", "estimate", "bound")
        for i, (arrival, layer, assigned, cost, record, link, estimate, bound) in enumerate(
                zip(*(column(name).to_pylist() for name in fields))):
            if link != record:  # the same record in two columns
                raise ValueError(f"branches.arrow: a branch's link {link} is not its trail's record {record}")
            members, fixed = comps.row(i)
            branch = Branch(layer, -1 if assigned is None else masks[assigned], members, tuple(frontier.row(i)),
                            cost, tuple(join_masks[join_at[i]:join_at[i + 1]]), link_of(link), estimate, bound,
                            fixed)
            if arrival:
                found.arrivals.setdefault(last, []).append(branch)
            else:
                state(last, "branches").branches.append(branch)
    for batch in tables["links"].to_batches(BATCH_ROWS):
        _check_component(batch.column("component"), last, "links.arrow: a record")
        entries = state(last, "links").entries
        for key, best, record in zip(batch_keys(batch, link_key, messages.__getitem__, masks),
                                     batch.column("best").to_pylist(), batch.column("record").to_pylist()):
            entries[key] = Entry(best, record)
    for batch in tables["histories"].to_batches(BATCH_ROWS):  # in each record's order: added as they come
        join_at, joins = list_column(batch.column("trail_joins"), "trail_joins")
        data = joins.to_pylist()
        fields = ("component", "record", "iteration", "trail_record")
        for i, (component, record, iteration, previous) in enumerate(
                zip(*(batch.column(name).to_pylist() for name in fields))):
            state(component, "histories").histories.add(
                record, history(iteration, (previous, *map(bytes_mask, data[join_at[i]:join_at[i + 1]]))))
    for batch in tables["dominated"].to_batches(BATCH_ROWS):
        for component, record in zip(batch.column("component").to_pylist(), batch.column("record").to_pylist()):
            state(component, "dominated").dominated.add(record)
    return found


def read_checkpoint(directory: Path, trust: bool = False) -> Generation:
    """The newest generation that reads whole (the one ``LATEST`` names first); a damaged
    one is reported by name (a :class:`CheckpointWarning`) and the one before it is used."""
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
            warnings.warn(f"checkpoint generation {folder.name} is damaged ({exc}); trying the one before",
                          CheckpointWarning, stacklevel=2)
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
# a search by contours' counters.contour (absent from the ordinary search's and older checkpoints)
_CONTOUR = {
    "value": (lambda v: _number(v) and v > 0, "a positive cost"),
    "proven": (_number, "a number"),
    "before": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an iteration count"),
    "done": (lambda v: isinstance(v, list) and all(isinstance(d, list) and len(d) == 2 and _number(d[0])
                                                   and isinstance(d[1], int) and d[1] >= 0 for d in v),
             "a list of [value, expansions]"),
    "given_up": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a count"),
}
_FINISHED = {
    "best_cost": (lambda v: _number(v) and v > 0, "a positive cost"),
    "proven": (lambda v: isinstance(v, bool), "true or false"),
    "stop_reason": (lambda v: v in set(StopReason), "a stop reason (" + ", ".join(StopReason) + ")"),
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
        contour = meta["counters"].get("contour")
        if contour is not None:
            check("counters.contour.", contour if isinstance(contour, dict) else {}, _CONTOUR)
    for k, done in enumerate(meta["finished"]):
        check(f"finished[{k}].", done, _FINISHED)
    if len(meta["finished"]) != meta["component"]:
        raise Damaged(f"{path}: component is {meta['component']} but {len(meta['finished'])} components are "
                      "finished (they must be the ones before it)")
