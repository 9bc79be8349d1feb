"""Plain encodings of a search's values for checkpoints, read back without running code.

* **Messages** (the cost model's values, SPEC 4.1) as JSON text with tags: ``null``,
  ``true``, numbers (an integer has no decimal point, a float always has one or an
  exponent), strings, ``["t", ...]`` for a tuple, ``["s", ...]`` for a frozenset (items
  in a canonical order) and ``["b", hex]`` for bytes. The built-in models' messages
  (frozensets of node names) and most user models' (numbers, strings, tuples) fit.
  A message of any other type (a user's class) has no plain encoding:
  :func:`encode_message` returns None and the checkpoint stores a pickle instead,
  which is read back only when the user says they trust the folder.
* **Link keys** (:meth:`~dcmap_dist.search.problem.Problem.link_key`) as nested Arrow columns of masks,
  integers and message ids (:data:`KEY_FIELDS`), both the ``lean`` and the ``full`` key
  (written by :func:`~dcmap_dist.checkpoint.write.link_batch`, read by :func:`batch_keys`).

Decoding checks the shape of what it reads and raises ValueError naming what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pyarrow as pa


__all__ = ["encode_message", "decode_message", "KEY_FIELDS", "batch_keys", "Masks", "Comps", "Layers",
           "list_column", "struct_fields", "mask_bytes", "bytes_mask"]

MAX_DEPTH = 64  # nesting of a message (a deeper one is stored as a pickle)


def mask_bytes(mask: int) -> bytes:
    """A node mask as little-endian bytes (bit i is node i of the component)."""
    return mask.to_bytes(max(1, (mask.bit_length() + 7) // 8), "little")


def bytes_mask(data: bytes) -> int:
    return int.from_bytes(data, "little")


# -- messages ---------------------------------------------------------------------------
def _plain(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise TypeError("nested too deep")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is tuple:
        return ["t", *(_plain(item, depth + 1) for item in value)]
    if kind is frozenset:
        items = [_plain(item, depth + 1) for item in value]
        return ["s", *sorted(items, key=lambda item: json.dumps(item, sort_keys=True))]
    if kind is bytes:
        return ["b", value.hex()]
    raise TypeError(f"no plain encoding for {kind.__name__}")


def encode_message(message: Hashable) -> str | None:
    """``message`` as tagged JSON text, or None if it has no plain encoding."""
    try:
        return json.dumps(_plain(message, 0), separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def _value(data: Any, depth: int) -> Hashable:
    if depth > MAX_DEPTH:
        raise ValueError("a message nested too deep")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list and data and data[0] in ("t", "s", "b"):
        tag, items = data[0], data[1:]
        if tag == "b":
            if len(items) != 1 or type(items[0]) is not str:
                raise ValueError("a malformed bytes message")
            return bytes.fromhex(items[0])
        values = [_value(item, depth + 1) for item in items]
        return tuple(values) if tag == "t" else frozenset(values)
    raise ValueError(f"not a message encoding: {json.dumps(data)[:80]}")


def decode_message(text: str) -> Hashable:
    """The inverse of :func:`encode_message`; ValueError if ``text`` is not one."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"a message that is not JSON ({exc})") from None
    return _value(data, 0)


# -- link keys --------------------------------------------------------------------------
_MEMBERS_MESSAGE = pa.list_(pa.struct([("members", pa.binary()), ("message", pa.int64())]))
KEY_FIELDS = [  # the columns of a link key (the links table adds component, best, record)
    ("layer", pa.int32()),
    ("assigned", pa.binary()),  # null at a completed layer
    ("fixed", pa.binary()),  # lean, inside a layer: components fixed at it
    ("held", pa.binary()),  # lean, inside a layer: components holding a node of it
    ("parts", pa.list_(pa.struct([("frontier", _MEMBERS_MESSAGE), ("outside", pa.binary())]))),  # lean
    ("blocked", pa.list_(pa.struct([("first", pa.int32()), ("second", pa.int32())]))),  # lean
    ("comps", pa.list_(pa.struct([("members", pa.binary()), ("fixed", pa.bool_())]))),  # full
    ("cls", _MEMBERS_MESSAGE),  # full
]


# -- reading columns back ---------------------------------------------------------------
class Masks(dict):
    """bytes -> mask (:func:`bytes_mask`), decoded once per distinct value of a read (a
    null, None, raises TypeError)."""

    def __missing__(self, data: bytes) -> int:
        mask = self[data] = bytes_mask(data)
        return mask


def list_column(column: pa.Array, what: str) -> tuple[list[int], pa.Array]:
    """A list column's offsets counted from 0 (row ``i``'s items are
    ``items[offsets[i]:offsets[i + 1]]``) and its items; ValueError if a row is null."""
    if column.null_count:
        raise ValueError(f"a null {what}")
    offsets = column.offsets.to_pylist()
    return [at - offsets[0] for at in offsets], column.flatten()


def struct_fields(items: pa.Array) -> list[list]:
    """A struct column's fields as lists of Python values (a null struct's are null)."""
    return [field.to_pylist() for field in items.flatten()]


class Comps:
    """A ``comps`` column read whole, ``{members, fixed}`` per open component (a
    branch's and a full key's): :meth:`row` gives a row's member masks and fixed bits."""

    def __init__(self, column: pa.Array, masks: Masks) -> None:
        self.at, items = list_column(column, "comps")
        members, self.flags = struct_fields(items)
        self.members = list(map(masks.__getitem__, members))

    def row(self, i: int) -> tuple[tuple[int, ...], int]:
        start, end = self.at[i], self.at[i + 1]
        flags = self.flags[start:end]
        return tuple(self.members[start:end]), sum(1 << k for k, flag in enumerate(flags) if flag)


class Layers:
    """A column of cluster-layers ``{members, message}`` read whole (a branch's frontier,
    a full key's cluster-layers, a lean key's part's): :meth:`row` gives a row's
    ``(members, message)`` pairs, ``message`` looking each id up."""

    def __init__(self, column: pa.Array, masks: Masks, message: Callable[[int], Hashable], what: str) -> None:
        self.at, items = list_column(column, what)
        members, ids = struct_fields(items)
        self.items = list(zip(map(masks.__getitem__, members), map(message, ids)))

    def row(self, i: int) -> list[tuple[int, Hashable]]:
        return self.items[self.at[i]:self.at[i + 1]]


def batch_keys(batch: pa.RecordBatch, link_key: str, message: Callable[[int], Hashable],
               masks: Masks | None = None) -> list[tuple]:
    """The link keys (``link_key``: ``lean`` or ``full``) of a batch of the ``links`` table, as
    :func:`~dcmap_dist.checkpoint.write.link_batch` writes them (``message`` looks an id
    up); ValueError if a row does not hold a key of that kind."""
    masks = Masks() if masks is None else masks
    try:
        layers, assigned = (batch.column(name).to_pylist() for name in ("layer", "assigned"))
        if link_key == "lean":
            return _lean_keys(batch, layers, assigned, message, masks)
        comps, cls = Comps(batch.column("comps"), masks), Layers(batch.column("cls"), masks, message, "cls")
        keys = []
        for i, layer in enumerate(layers):
            members, fixed = comps.row(i)
            if fixed and assigned[i] is None:
                raise ValueError("a fixed component at a completed layer")
            head = layer if assigned[i] is None else (layer, masks[assigned[i]], fixed)
            keys.append((head, members, tuple(cls.row(i))))
        return keys
    except (TypeError, KeyError) as exc:
        raise ValueError(f"not a {link_key} link key ({type(exc).__name__}: {exc})") from None


def _lean_keys(batch: pa.RecordBatch, layers: list, assigned: list, message: Callable[[int], Hashable],
               masks: Masks) -> list[tuple]:
    fixed, held = (batch.column(name).to_pylist() for name in ("fixed", "held"))
    part_at, parts = list_column(batch.column("parts"), "parts")
    frontiers, outsides = parts.flatten()
    part_layers = Layers(frontiers, masks, message, "part's frontier")
    outside = list(map(masks.__getitem__, outsides.to_pylist()))
    pair_at, pairs = list_column(batch.column("blocked"), "blocked")
    if any(field.null_count for field in pairs.flatten()):
        raise ValueError("a null blocked pair")
    firsts, seconds = (field.to_numpy(zero_copy_only=False).astype(np.int64) for field in pairs.flatten())
    keys = []
    for i, layer in enumerate(layers):
        items: list[tuple] = []  # the parts' cluster-layers, part after part
        shape: list[int] = []
        for part in range(part_at[i], part_at[i + 1]):
            own = part_layers.row(part)
            if not own:
                raise ValueError("a part with no cluster-layer")
            union = 0
            for members, _ in own:
                union |= members
            shape += (union, outside[part])
            items += own
        count = part_at[i + 1] - part_at[i]
        blocked = _blocked(firsts[pair_at[i]:pair_at[i + 1]], seconds[pair_at[i]:pair_at[i + 1]], count)
        if assigned[i] is None:  # of a completed layer, the key holds the frontier sorted (as the branch does)
            keys.append((layer, tuple(sorted(items)), tuple(shape), blocked))
        else:
            head = (layer, masks[assigned[i]], masks[fixed[i]], masks[held[i]])
            keys.append((head, tuple(items), tuple(shape), blocked))
    return keys


def _blocked(firsts: np.ndarray, seconds: np.ndarray, count: int) -> int:
    """The blocked pairs ``(first, second)`` of a key of ``count`` parts as its bits
    (bit ``first * count + second``); ValueError unless ``0 <= first < second < count``."""
    if not len(firsts):
        return 0
    bad = (firsts < 0) | (firsts >= seconds) | (seconds >= count)
    if bad.any():
        k = int(bad.argmax())
        raise ValueError(f"a blocked pair {int(firsts[k]), int(seconds[k])} of {count} parts")
    bits = np.zeros(count * count, np.uint8)
    bits[firsts * count + seconds] = 1
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")
