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
  (written by :func:`~dcmap_dist.checkpoint.write.link_batch`, read by :func:`columns_key`).

Decoding checks the shape of what it reads and raises ValueError naming what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from typing import Any

import pyarrow as pa


__all__ = ["encode_message", "decode_message", "KEY_FIELDS", "columns_key",
           "mask_bytes", "bytes_mask"]

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


def columns_key(row: dict[str, Any], kind: str, message: Callable[[int], Hashable]) -> tuple:
    """A link key of kind ``lean`` or ``full`` from its row of the ``links`` table, as
    :func:`~dcmap_dist.checkpoint.write.link_batch` writes it (``message`` looks an id
    up); ValueError if the row does not hold a key of that kind."""
    try:
        layer = row["layer"]
        inside = row["assigned"] is not None
        if kind == "lean":
            head = (layer, bytes_mask(row["assigned"]), bytes_mask(row["fixed"]), bytes_mask(row["held"])) \
                if inside else layer
            items: list[tuple] = []  # the parts' cluster-layers, part after part
            shape: list[int] = []
            for part in row["parts"]:
                own = _items(part["frontier"], message)
                if not own:
                    raise ValueError("a part with no cluster-layer")
                union = 0
                for members, _ in own:
                    union |= members
                shape += (union, bytes_mask(part["outside"]))
                items += own
            count = len(row["parts"])
            blocked = 0
            for pair in row["blocked"]:
                first, second = pair["first"], pair["second"]
                if not 0 <= first < second < count:
                    raise ValueError(f"a blocked pair {first, second} of {count} parts")
                blocked |= 1 << (first * count + second)
            # of a completed layer, the key holds the frontier sorted (as the branch does)
            return head, tuple(items if inside else sorted(items)), tuple(shape), blocked
        comps, fixed = rows_comps(row["comps"])
        head = (layer, bytes_mask(row["assigned"]), fixed) if inside else layer
        if fixed and not inside:
            raise ValueError("a fixed component at a completed layer")
        return head, comps, tuple(_items(row["cls"], message))
    except (TypeError, KeyError) as exc:
        raise ValueError(f"not a {kind} link key ({type(exc).__name__}: {exc})") from None


def rows_comps(rows: list[dict[str, Any]]) -> tuple[tuple[int, ...], int]:
    """Open components from the rows of a ``comps`` column, ``{members, fixed}`` (a
    branch's and a full key's): the member masks and the fixed bits."""
    return tuple(bytes_mask(c["members"]) for c in rows), sum(1 << i for i, c in enumerate(rows) if c["fixed"])


def _items(rows: list[dict[str, Any]], message: Callable[[int], Hashable]) -> list[tuple[int, Hashable]]:
    """Cluster-layers ``(members, message)`` from rows of members and message ids."""
    return [(bytes_mask(item["members"]), message(item["message"])) for item in rows]
