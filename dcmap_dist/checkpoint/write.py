"""Writing a checkpoint generation (the format is :mod:`dcmap_dist.checkpoint.arrow`): the
rows of a search's state, streamed in batches into Arrow files of a temporary folder,
every file fsynced and digested, the folder renamed and ``LATEST`` replaced atomically."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..search.linking import Histories, histories_of, history_fields
from ..search.problem import Branch
from ..search.state import SearchState
from .arrow import (BATCH_ROWS, DIGESTS, FAULT_VARIABLE, FILES, FORMAT, METADATA, POINTER, SCHEMAS, TABLES, digest,
                    generations)
from .codec import comp_rows, encode_message, key_columns, mask_bytes


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

    def id(self, message: Hashable) -> int:
        return self.ids[message]

    def rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for held, number in self.ids.items():
            message = self.value(held)
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
        "comps": comp_rows(branch.comps, branch.fixed, masks),
        "cls": [{"members": masks[m], "message": ids[msg]} for m, msg in branch.frontier],
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


def history_rows(component: int, histories: dict[int, Histories]) -> Iterator[tuple[str, dict[str, Any]]]:
    for record, held in histories.items():
        for data in histories_of(held):
            iteration, trail = history_fields(data)
            yield "histories", {"component": component, "record": record, "iteration": iteration,
                                "trail_record": trail[0], "trail_joins": _joins(trail)}


def _joins(trail: tuple) -> list[bytes]:
    """A trail's join masks as bytes (mostly distinct: not remembered)."""
    return [m.to_bytes((m.bit_length() + 7) // 8 or 1, "little") for m in trail[1:]]


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
    for old in done[1:]:  # keep the previous generation, drop the older ones
        shutil.rmtree(old, ignore_errors=True)
    return final
