"""Writing a checkpoint generation (the format is :mod:`dcmap_dist.checkpoint.arrow`): a
search's state turned into Arrow record batches column by column, streamed into Arrow
files of a temporary folder, every file fsynced and digested, the folder renamed and
``LATEST`` replaced atomically."""

from __future__ import annotations

import errno
import itertools
import json
import os
import pickle
import shutil
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..search.keys import key_parts
from ..search.histories import Histories, history_parts
from ..search.linking import Entry
from ..search.branch import Branch, record_of
from ..search.state import SearchState
from .arrow import (BATCH_ROWS, DIGESTS, FAULT_VARIABLE, FILES, FORMAT, METADATA, POINTER, SCHEMAS, TABLES, digest,
                    generations)
from .codec import encode_message, mask_bytes

__all__ = ["Batches", "Messages", "history_batches", "link_batch", "remove_partial", "state_batches", "write_checkpoint"]

Batches = Iterator[tuple[str, pa.RecordBatch]]  # (table, a batch of its rows)


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
    once, as the model's value (``value`` of what the search holds:
    :meth:`MessageCodes.value`), plainly where it can be (:func:`codec.encode_message`),
    else as a pickle. It also keeps the bytes of every mask written (:data:`masks`)."""

    def __init__(self, value: Callable[[Hashable], Hashable]) -> None:
        self.value = value
        self.ids: dict[Hashable, int] = _Numbered()
        self.masks: dict[int, bytes] = _Bytes()
        self.pickled = False

    def batch(self) -> pa.RecordBatch:
        """The ``messages`` table: every message numbered so far."""
        rows = []
        for held, number in self.ids.items():
            message = self.value(held)
            text = encode_message(message)
            if text is None:
                self.pickled = True
                rows.append({"id": number, "codec": "pickle", "value": pickle.dumps(message, protocol=5)})
            else:
                rows.append({"id": number, "codec": "plain", "value": text.encode()})
        return pa.RecordBatch.from_pylist(rows, schema=SCHEMAS["messages"])


# -- values -> columns -------------------------------------------------------------------
class _Lists:
    """A list column being built row by row: its offsets and its items, as one sequence
    per field of a struct item (a field that is itself a list column, a nested
    :class:`_Lists`) or one sequence of plain items."""

    def __init__(self, kind: pa.ListType) -> None:
        self.kind = kind
        item = kind.value_type
        fields = list(item) if pa.types.is_struct(item) else [pa.field("item", item)]
        self.fields: list[Any] = [_Lists(f.type) if pa.types.is_list(f.type) else [] for f in fields]
        self.offsets = [0]

    @classmethod
    def of(cls, table: str, column: str) -> _Lists:
        return cls(SCHEMAS[table].field(column).type)

    def __len__(self) -> int:  # rows so far (a nested list column's items)
        return len(self.offsets) - 1

    def end_row(self) -> None:
        self.offsets.append(len(self.fields[0]))

    def items(self, values: Iterable[Any]) -> None:
        """A row of plain items."""
        self.fields[0] += values
        self.end_row()

    def layers(self, rows: Sequence[Sequence[tuple[int, Hashable]]], messages: Messages) -> None:
        """Rows of cluster-layers ``(members, message)``, one sequence per row."""
        self.offsets += itertools.islice(itertools.accumulate(map(len, rows), initial=self.offsets[-1]), 1, None)
        items = [item for row in rows for item in row]
        if items:
            members, held = zip(*items)
            self.fields[0] += map(messages.masks.__getitem__, members)
            self.fields[1] += map(messages.ids.__getitem__, held)

    def comps(self, comps: tuple[int, ...], fixed: int, messages: Messages) -> None:
        """A row of open components (bit ``i`` of ``fixed``: component ``i`` is fixed)."""
        self.fields[0] += map(messages.masks.__getitem__, comps)
        self.fields[1] += [bool(fixed >> i & 1) for i in range(len(comps))] if fixed else [False] * len(comps)
        self.end_row()

    def array(self) -> pa.Array:
        item = self.kind.value_type
        if pa.types.is_struct(item):
            values = pa.StructArray.from_arrays([_array(f.type, got) for f, got in zip(item, self.fields)],
                                                fields=list(item))
        else:
            values = _array(item, self.fields[0])
        return pa.ListArray.from_arrays(pa.array(self.offsets, pa.int32()), values, type=self.kind)


def _array(kind: pa.DataType, values: Any) -> pa.Array:
    """A column's values as an array: a :class:`_Lists`, numpy chunks or a plain list."""
    if isinstance(values, _Lists):
        return values.array()
    if values and isinstance(values[0], np.ndarray):
        return pa.array(np.concatenate(values), kind)
    return pa.array(values, kind)


def _batch(table: str, rows: int, columns: dict[str, Any]) -> pa.RecordBatch:
    """A batch of ``table`` from its columns (see :func:`_array`); a column not given is
    null in every row."""
    schema = SCHEMAS[table]
    arrays = [pa.array([None] * rows, f.type) if columns.get(f.name) is None else _array(f.type, columns[f.name])
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _branch_batch(component: int, branches: Sequence[Branch], arrival: bool, messages: Messages) -> pa.RecordBatch:
    masks = messages.masks
    comps, layers, joins = (_Lists.of("branches", column) for column in ("comps", "cls", "trail_joins"))
    for branch in branches:
        comps.comps(branch.comps, branch.fixed, messages)
        layers.layers([branch.frontier], messages)
        joins.items(map(mask_bytes, branch.joins))
    links = [record_of(b.link) for b in branches]
    return _batch("branches", len(branches), {
        "component": [component] * len(branches), "arrival": [arrival] * len(branches),
        "layer": [b.layer for b in branches],
        "assigned": [None if b.assigned == -1 else masks[b.assigned] for b in branches],
        "comps": comps, "cls": layers,
        "cost": [b.cost for b in branches], "estimate": [b.estimate for b in branches],
        "bound": [b.bound for b in branches], "link": links, "trail_record": links, "trail_joins": joins,
    })


def _set_bits(mask: int) -> np.ndarray:
    """Positions of the set bits of ``mask``, ascending (as :func:`topology.bits`, for
    masks of hundreds of bits)."""
    data = np.frombuffer(mask.to_bytes((mask.bit_length() + 7) // 8, "little"), np.uint8)
    return np.flatnonzero(np.unpackbits(data, bitorder="little")).astype(np.int32)


def link_batch(component: int, items: Sequence[tuple[tuple, Entry]], link_key: str,
               messages: Messages) -> pa.RecordBatch:
    """Link table entries ``(key, entry)``, ``link_key`` keys (``lean`` or ``full``)
    (:meth:`~dcmap_dist.search.problem.Problem.link_key`), as a batch of the ``links``
    table: the key's columns (:data:`codec.KEY_FIELDS`) name every pair and flag that
    the key packs into bits; :func:`codec.batch_keys` reads them back."""
    masks = messages.masks
    layer, assigned, fixed, held = [], [], [], []
    parts, blocked = _Lists.of("links", "parts"), _Lists.of("links", "blocked")
    comps, layers = _Lists.of("links", "comps"), _Lists.of("links", "cls")
    for key, _ in items:
        head = key[0]
        inside = type(head) is tuple
        layer.append(head[0] if inside else head)
        assigned.append(masks[head[1]] if inside else None)
        if link_key == "full":
            comps.comps(key[1], head[2] if inside else 0, messages)
            layers.layers([key[2]], messages)
            continue
        fixed.append(masks[head[2]] if inside else None)
        held.append(masks[head[3]] if inside else None)
        own = key_parts(key)
        parts.fields[0].layers([part_layers for _, part_layers in own], messages)  # each part's, a row each
        parts.fields[1] += [masks[outside] for outside, _ in own]
        parts.end_row()
        pairs = 0
        if key[3]:  # the blocked pairs, bit first * parts + second
            first, second = np.divmod(_set_bits(key[3]), np.int32(len(own)))
            blocked.fields[0].append(first)
            blocked.fields[1].append(second)
            pairs = len(first)
        blocked.offsets.append(blocked.offsets[-1] + pairs)
    columns = {"component": [component] * len(items), "layer": layer, "assigned": assigned,
               "best": [entry.best for _, entry in items], "record": [entry.record for _, entry in items]}
    if link_key == "full":
        columns.update(comps=comps, cls=layers)
    else:
        columns.update(fixed=fixed, held=held, parts=parts, blocked=blocked)
    return _batch("links", len(items), columns)


def _chunks(items: Iterable[Any]) -> Iterator[list[Any]]:
    """``items`` in lists of :data:`BATCH_ROWS` (the last one shorter)."""
    items = iter(items)
    while chunk := list(itertools.islice(items, BATCH_ROWS)):
        yield chunk


def state_batches(component: int, state: SearchState, link_key: str, messages: Messages) -> Batches:
    """Every row of ``state`` (its keys ``link_key`` ones: lean or full), in batches of up to
    :data:`BATCH_ROWS` rows. An arrival is stored as its branch: its key is the branch's
    own link key, recomputed on resume."""
    for chunk in _chunks(state.branches):
        yield "branches", _branch_batch(component, chunk, False, messages)
    for chunk in _chunks(branch for _, branch in state.arrivals):
        yield "branches", _branch_batch(component, chunk, True, messages)
    for chunk in _chunks(state.entries.items()):
        yield "links", link_batch(component, chunk, link_key, messages)
    yield from history_batches(component, state.histories)
    for chunk in _chunks(state.dominated):
        yield "dominated", _batch("dominated", len(chunk), {"component": [component] * len(chunk), "record": chunk})


def history_batches(component: int, histories: Mapping[int, Histories]) -> Batches:
    """The rows of the ``histories`` table of a component's link records, in batches of
    about :data:`BATCH_ROWS` rows (a record's histories stay in one batch)."""
    held_by = iter(histories.items())
    while True:
        records, iterations, previous, joins = [], [], [], _Lists.of("histories", "trail_joins")
        flat, offsets = joins.fields[0], joins.offsets
        for record, held in held_by:
            for iteration, trail_record, masks in history_parts(held):
                records.append(record)
                iterations.append(iteration)
                previous.append(trail_record)
                flat += masks
                offsets.append(len(flat))
            if len(records) >= BATCH_ROWS:
                break
        if not records:
            return
        yield "histories", _batch("histories", len(records), {
            "component": [component] * len(records), "record": records, "iteration": iterations,
            "trail_record": previous, "trail_joins": joins})


def _fault(step: str, generation: int) -> None:
    """Fault injection for tests: ``DCMAP_CHECKPOINT_FAULT=<step>:<generation>`` kills
    this process (SIGKILL) at that step of writing that generation;
    ``DCMAP_CHECKPOINT_FAULT=enospc:<generation>`` fails the write after its first
    batch as a full disk does."""
    fault = os.environ.get(FAULT_VARIABLE)
    if fault == f"{step}:{generation}":
        os.kill(os.getpid(), 9)
    if fault == f"enospc:{generation}" and step.startswith("table-"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)



def write_checkpoint(directory: Path, metadata: dict[str, Any], batches: Iterable[tuple[str, pa.RecordBatch]],
                     messages: Messages, keep: Path | None = None) -> Path:
    """Write a new generation from ``batches`` (``(table, batch)`` pairs, streamed so
    the state is never copied whole; their messages numbered by ``messages``) and
    point ``LATEST`` at it; returns its folder. Then every other generation is removed
    but ``keep`` (the newest intact one before this write: the one a resume started
    from, or this run's last; by default the newest before this one), so a damaged
    generation a resume passed over is never kept. If the write fails (an OSError: a
    full disk, a read-only or vanished folder), its temporary folder is removed and
    the error raised: the generations already there are untouched."""
    directory.mkdir(parents=True, exist_ok=True)
    done = generations(directory)
    number = int(done[0].name[4:]) + 1 if done else 1
    remove_partial(directory)
    tmp = directory / f".gen-{number:06d}.tmp"
    try:
        final = _write_generation(directory, tmp, number, metadata, batches, messages)
    except BaseException:
        remove_partial(directory)
        raise
    kept = keep if keep is not None else (done[0] if done else None)
    for old in done:  # keep the previous intact generation, drop the others
        if old != kept:
            shutil.rmtree(old, ignore_errors=True)
    return final


def remove_partial(directory: Path) -> None:
    """Remove what an unfinished write left in a checkpoint folder: temporary
    generation folders and pointer file."""
    for stale in directory.glob(".gen-*.tmp"):
        shutil.rmtree(stale, ignore_errors=True)
    (directory / f".{POINTER}.tmp").unlink(missing_ok=True)


def _write_generation(directory: Path, tmp: Path, number: int, metadata: dict[str, Any],
                      batches: Iterable[tuple[str, pa.RecordBatch]], messages: Messages) -> Path:
    """Write generation ``number`` in ``tmp``, rename it and point ``LATEST`` at it."""
    tmp.mkdir()
    writers = {name: pa.ipc.new_file(tmp / f"{name}.arrow", SCHEMAS[name]) for name in TABLES}
    counts = dict.fromkeys(TABLES, 0)
    def write(name: str, batch: pa.RecordBatch) -> None:
        writers[name].write_batch(batch)
        counts[name] += batch.num_rows
        _fault(f"table-{name}", number)

    try:
        for name, batch in batches:
            write(name, batch)
        write("messages", messages.batch())  # last: the batches above numbered them
    finally:
        for writer in writers.values():
            writer.close()
    meta = dict(metadata, format=FORMAT, generation=number, rows=counts, pickled_messages=messages.pickled)
    with open(tmp / METADATA, "w") as handle:
        json.dump(meta, handle, indent=1)
    _fault("metadata", number)
    sums = "".join(f"{digest(tmp / name)}  {name}\n" for name in FILES)
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
    return final
