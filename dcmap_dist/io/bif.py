"""Read network structures from BIF files (the dialect of the bnlearn repository).

Only the structure is read: each ``variable`` block gives a node and its number
of states, and each ``probability ( X | P1, P2 )`` block gives the arcs
``P1 -> X`` and ``P2 -> X``. The CPT numbers are skipped.

``//`` starts a line comment and ``/* ... */`` is a block comment, anywhere in
the text. Names are runs of characters other than whitespace and
``{ } ( ) [ ] | , ; "``; state names are the comma-separated items of the
state list, so they may also hold characters such as ``<``, ``+`` or ``/``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model.network import Network, NetworkError
from .files import read_text

__all__ = ["parse_bif", "read_bif"]

_NAME = r'[^\s{}()\[\]|,;"]+'
_NAME_RE = re.compile(_NAME)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_SPACE = re.compile(r"\s*")
_NETWORK = re.compile(rf"network(?:\s+({_NAME}))?\s*\{{")
_VARIABLE = re.compile(rf"variable\s+({_NAME})\s*\{{")
_TYPE = re.compile(r"type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^{}]*)\}\s*;")
_PROPERTY = re.compile(r"property\b[^;{}]*;")
_PROBABILITY = re.compile(r"probability\s*\(([^(){}]*)\)\s*\{")


def _line(text: str, pos: int) -> int:
    """The 1-based line number of position ``pos``."""
    return text.count("\n", 0, pos) + 1


def _expected(text: str, pos: int, what: str) -> NetworkError:
    """An error saying that ``what`` was expected at ``pos``, and what was found there."""
    found = "the end of the text"
    if pos < len(text):
        found = repr(text[pos : pos + 40].partition("\n")[0])
    return NetworkError(f"line {_line(text, pos)}: expected {what}, found {found}")


def _skip_body(text: str, pos: int, start: int, what: str) -> int:
    """The position after the ``}`` that closes the block body starting at ``pos``."""
    end = text.find("}", pos)
    if end < 0:
        raise NetworkError(f"line {_line(text, start)}: the {what} is not closed: expected '}}'")
    return end + 1


def _variable_body(text: str, pos: int, start: int, var: str) -> tuple[int, int]:
    """Parse the body of variable ``var`` from ``pos``: its number of states and end position."""
    count: int | None = None
    while True:
        pos = _SPACE.match(text, pos).end()
        if text.startswith("}", pos):
            break
        if m := _PROPERTY.match(text, pos):
            pos = m.end()
            continue
        m = _TYPE.match(text, pos)
        if m is None:
            what = f"'type discrete [ N ] {{ ... }};', 'property ...;' or '}}' in variable {var!r}"
            raise _expected(text, pos, what)
        if count is not None:
            raise NetworkError(f"line {_line(text, pos)}: variable {var!r} declares its type twice")
        count = int(m.group(1))
        labels = [s for s in (x.strip() for x in m.group(2).split(",")) if s]
        if len(labels) != count:
            raise NetworkError(
                f"line {_line(text, pos)}: variable {var!r} declares {count} states"
                f" but lists {len(labels)} state names"
            )
        pos = m.end()
    if count is None:
        raise NetworkError(
            f"line {_line(text, start)}: variable {var!r} has no"
            " 'type discrete [ N ] { ... };' line"
        )
    return count, pos + 1


def _probability_head(text: str, start: int, head: str) -> tuple[str, list[str]]:
    """Split the ``X | P1, P2`` head of a probability block into the variable and its parents."""
    child_part, bar, parent_part = head.partition("|")
    child = child_part.strip()
    parents = [p.strip() for p in parent_part.split(",")] if bar else []
    if not all(_NAME_RE.fullmatch(x) for x in [child, *parents]):
        raise NetworkError(
            f"line {_line(text, start)}: malformed probability block head ( {head.strip()} ):"
            " expected ( NAME ) or ( NAME | PARENT, PARENT, ... )"
        )
    if len(set(parents)) != len(parents):
        raise NetworkError(
            f"line {_line(text, start)}: the probability block for {child!r} lists a parent twice"
        )
    return child, parents


def parse_bif(text: str, name: str = "network") -> Network:
    """Parse the structure of a BIF network.

    The network is named by its ``network NAME`` line, or ``name`` when that
    is ``unknown`` or missing. Nodes keep the order of the ``variable``
    declarations; arcs are listed block by block, each block's parents in
    listed order. Raises :class:`NetworkError` naming the problem and its line.
    """
    text = _COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
    if not text.strip():
        raise NetworkError("the BIF text is empty: it declares no network")
    pos = _SPACE.match(text).end()
    m = _NETWORK.match(text, pos)
    if m is None:
        raise _expected(text, pos, "'network NAME {'")
    net_name = m.group(1) if m.group(1) not in (None, "unknown") else name
    pos = _skip_body(text, m.end(), pos, "network block")

    states: dict[str, int] = {}  # in declaration order
    declared_at: dict[str, int] = {}
    blocks: dict[str, tuple[list[str], int]] = {}  # in file order
    while (pos := _SPACE.match(text, pos).end()) < len(text):
        if m := _VARIABLE.match(text, pos):
            var = m.group(1)
            if var in states:
                raise NetworkError(
                    f"line {_line(text, pos)}: variable {var!r} is declared twice"
                    f" (first at line {_line(text, declared_at[var])})"
                )
            declared_at[var] = pos
            states[var], pos = _variable_body(text, m.end(), pos, var)
        elif m := _PROBABILITY.match(text, pos):
            child, parents = _probability_head(text, pos, m.group(1))
            if child in blocks:
                raise NetworkError(
                    f"line {_line(text, pos)}: a second probability block for {child!r}"
                    f" (first at line {_line(text, blocks[child][1])})"
                )
            blocks[child] = (parents, pos)
            pos = _skip_body(text, m.end(), pos, f"probability block for {child!r}")
        else:
            raise _expected(text, pos, "'variable NAME {' or 'probability ( NAME | PARENTS ) {'")

    for child, (parents, at) in blocks.items():
        if child not in states:
            raise NetworkError(
                f"line {_line(text, at)}: probability block for undeclared variable {child!r}"
            )
        for parent in parents:
            if parent not in states:
                raise NetworkError(
                    f"line {_line(text, at)}: parent {parent!r} of {child!r}"
                    " is not a declared variable"
                )
    for var, at in declared_at.items():
        if var not in blocks:
            raise NetworkError(f"line {_line(text, at)}: variable {var!r} has no probability block")
    edges = [(parent, child) for child, (parents, _) in blocks.items() for parent in parents]
    return Network(net_name, states, states, edges)


def read_bif(path: str | Path) -> Network:
    """Read the structure of a ``.bif`` or ``.bif.gz`` file, named by the file name by default.

    The text is UTF-8, or else read as Latin-1."""
    path = Path(path)
    name = path.name.removesuffix(".gz").removesuffix(".bif")
    text = read_text(path, ("utf-8", "latin-1"))  # some tools write Latin-1
    try:
        return parse_bif(text, name)
    except NetworkError as exc:
        raise NetworkError(f"{path}: {exc}") from None
