"""Read network structures from BIF files (bnlearn's dialect and the Interchange Format 0.15).

The search needs the structure only: each ``variable`` block gives a node and its
number of states, and each ``probability ( X | P1, P2 )`` block (or BIF 0.15's
``probability ( X P1 P2 )``) gives the arcs ``P1 -> X`` and ``P2 -> X``. The
probability tables are checked all the same (:func:`_check_table`): every number
finite and non-negative, each distribution summing to 1 within :data:`TOLERANCE`,
a row for every parent configuration (or a ``default``), no row for states that do
not exist. Their forms: ``table v, v, ...;`` (the child's state varying slowest),
rows ``(s1, s2) v, v, ...;``, and ``default v, v, ...;``. A problem found is a
warning naming the variable and the row (an error with ``strict``).

``//`` starts a line comment and ``/* ... */`` is a block comment, anywhere in
the text. Names are runs of characters other than whitespace and
``{ } ( ) [ ] | , ; "``, or anything but a quote between double quotes (BIF 0.15:
``network "Dog-Problem"``); state names are the comma-separated items of the
state list (the space-separated ones when it has no comma), so they may also hold
characters such as ``<``, ``+`` or ``/``.
"""

from __future__ import annotations

import math
import re
import warnings
from itertools import product
from pathlib import Path

from ..model.network import Network, NetworkError
from .files import read_text

__all__ = ["BifWarning", "TOLERANCE", "parse_bif", "read_bif"]

TOLERANCE = 1e-3  # how far a distribution's sum may be from 1 (bnlearn prints 4 to 6 decimals)
SHOWN_PROBLEMS = 3  # table problems named in a warning or error (and how many more)

_NAME = r'"[^"\n]*"|[^\s{}()\[\]|,;"]+'
_NAME_RE = re.compile(_NAME)
_VALUES = re.compile(r"[^;{}()]*;")  # numbers up to the ';' of a table entry
_ROW = re.compile(r"\(([^(){};]*)\)")  # the parent states of a row


class BifWarning(UserWarning):
    """A BIF file whose probability tables are not what the format asks (the structure,
    all the search reads, is used anyway)."""

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_SPACE = re.compile(r"\s*")
_NETWORK = re.compile(rf"network(?:\s+({_NAME}))?\s*\{{")
_VARIABLE = re.compile(rf"variable\s+({_NAME})\s*\{{")
_TYPE = re.compile(r"type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^{}]*)\}\s*;")
_STATE = re.compile(r'"[^"]*"|[^\s"]+')
_PROPERTY = re.compile(r"property\b[^;{}]*;")
_PROBABILITY = re.compile(r"probability\s*\(([^(){}]*)\)\s*\{")


def _unquoted(name: str) -> str:
    """A name without its double quotes (BIF 0.15 quotes names that hold spaces or dashes)."""
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name


def _some(items: list[str], separator: str) -> str:
    """The first :data:`SHOWN_PROBLEMS` of ``items``, joined, and how many more there are."""
    more = f" (and {len(items) - SHOWN_PROBLEMS} more)" if len(items) > SHOWN_PROBLEMS else ""
    return separator.join(items[:SHOWN_PROBLEMS]) + more


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


def _state_names(listed: str) -> list[str]:
    """The state names of a ``{ ... }`` state list: comma-separated, or (BIF 0.15, no
    comma) separated by spaces; quotes removed."""
    if "," in listed:
        names = (x.strip() for x in listed.split(","))
    else:
        names = _STATE.findall(listed)
    return [_unquoted(x) for x in names if x]


def _variable_body(text: str, pos: int, start: int, var: str) -> tuple[list[str], int]:
    """Parse the body of variable ``var`` from ``pos``: its state names and end position."""
    count: int | None = None
    labels: list[str] = []
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
        labels = _state_names(m.group(2))
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
    return labels, pos + 1


def _probability_head(text: str, start: int, head: str) -> tuple[str, list[str]]:
    """Split the ``X | P1, P2`` head of a probability block into the variable and its parents."""
    child_part, bar, parent_part = head.partition("|")
    if bar:
        names = [child_part.strip(), *(p.strip() for p in parent_part.split(","))]
    else:  # ( NAME ), or BIF 0.15's ( NAME PARENT PARENT ... )
        names = re.split(r"[\s,]+", head.strip()) if '"' not in head else _NAME_RE.findall(head)
        names = names or [""]
    if not all(_NAME_RE.fullmatch(x) for x in names):
        raise NetworkError(
            f"line {_line(text, start)}: malformed probability block head ( {head.strip()} ):"
            " expected ( NAME ), ( NAME | PARENT, PARENT, ... ) or ( NAME PARENT PARENT ... )"
        )
    child, *parents = map(_unquoted, names)
    if len(set(parents)) != len(parents):
        raise NetworkError(
            f"line {_line(text, start)}: the probability block for {child!r} lists a parent twice"
        )
    return child, parents


def parse_bif(text: str, name: str = "network", problems: list[str] | None = None) -> Network:
    """Parse the structure of a BIF network.

    The network is named by its ``network NAME`` line, or ``name`` when that
    is ``unknown`` or missing. Nodes keep the order of the ``variable``
    declarations; arcs are listed block by block, each block's parents in
    listed order. Raises :class:`NetworkError` naming the problem and its line.
    The problems found in the probability tables (:func:`_check_table`) are added
    to ``problems``, one line each.
    """
    text = _COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
    if not text.strip():
        raise NetworkError("the BIF text is empty: it declares no network")
    pos = _SPACE.match(text).end()
    m = _NETWORK.match(text, pos)
    if m is None:
        raise _expected(text, pos, "'network NAME {'")
    declared = _unquoted(m.group(1)) if m.group(1) else None
    net_name = declared if declared not in (None, "unknown", "") else name
    pos = _skip_body(text, m.end(), pos, "network block")

    labels: dict[str, list[str]] = {}  # state names, in declaration order
    declared_at: dict[str, int] = {}
    blocks: dict[str, tuple[list[str], int, int, int]] = {}  # parents, where, body start and end; file order
    while (pos := _SPACE.match(text, pos).end()) < len(text):
        if m := _VARIABLE.match(text, pos):
            var = _unquoted(m.group(1))
            if var in labels:
                raise NetworkError(
                    f"line {_line(text, pos)}: variable {var!r} is declared twice"
                    f" (first at line {_line(text, declared_at[var])})"
                )
            declared_at[var] = pos
            labels[var], pos = _variable_body(text, m.end(), pos, var)
        elif m := _PROBABILITY.match(text, pos):
            child, parents = _probability_head(text, pos, m.group(1))
            if child in blocks:
                raise NetworkError(
                    f"line {_line(text, pos)}: a second probability block for {child!r}"
                    f" (first at line {_line(text, blocks[child][1])})"
                )
            end = _skip_body(text, m.end(), pos, f"probability block for {child!r}")
            blocks[child] = (parents, pos, m.end(), end - 1)
            pos = end
        else:
            raise _expected(text, pos, "'variable NAME {' or 'probability ( NAME | PARENTS ) {'")

    for child, (parents, at, _, _) in blocks.items():
        if child not in labels:
            raise NetworkError(
                f"line {_line(text, at)}: probability block for undeclared variable {child!r}"
            )
        for parent in parents:
            if parent not in labels:
                raise NetworkError(
                    f"line {_line(text, at)}: parent {parent!r} of {child!r}"
                    " is not a declared variable"
                )
    for var, at in declared_at.items():
        if var not in blocks:
            raise NetworkError(f"line {_line(text, at)}: variable {var!r} has no probability block")
    if problems is not None:
        for child, (parents, _, start, end) in blocks.items():
            problems += _check_table(text, start, end, child, parents, labels)
    edges = [(parent, child) for child, (parents, _, _, _) in blocks.items() for parent in parents]
    states = {var: len(names) for var, names in labels.items()}
    return Network(net_name, states, states, edges)


def _numbers(text: str, start: int, values: str, where: str, problems: list[str]) -> list[float] | None:
    """The numbers of a table entry (comma- or space-separated), or None with a problem
    named when one is not a number or is negative, infinite or NaN."""
    got = []
    for item in (x for x in re.split(r"[\s,]+", values.strip()) if x):
        try:
            value = float(item)
        except ValueError:
            problems.append(f"line {_line(text, start)}: {where}: {item!r} is not a number")
            return None
        if not (math.isfinite(value) and value >= 0):
            problems.append(f"line {_line(text, start)}: {where}: probability {item} is not a finite number >= 0")
            return None
        got.append(value)
    return got


def _check_table(text: str, start: int, end: int, child: str, parents: list[str],
                 labels: dict[str, list[str]]) -> list[str]:
    """The problems of the probability block of ``child`` (its body ``text[start:end]``),
    one line each, naming the variable and the row."""
    problems: list[str] = []
    card = len(labels[child])
    configurations = list(product(*(labels[p] for p in parents)))
    rows: dict[tuple[str, ...], list[float]] = {}
    table = default = None
    what = f"probability block for {child!r}"
    pos = start
    while (pos := _SPACE.match(text, pos).end()) < end:
        if m := _PROPERTY.match(text, pos):
            pos = m.end()
        elif text.startswith("table", pos) and (m := _VALUES.match(text, pos + 5)):
            table, pos = _numbers(text, pos, m.group()[:-1], f"{what}, table", problems), m.end()
        elif text.startswith("default", pos) and (m := _VALUES.match(text, pos + 7)):
            default, pos = _numbers(text, pos, m.group()[:-1], f"{what}, default row", problems), m.end()
        elif (m := _ROW.match(text, pos)) and (v := _VALUES.match(text, m.end())):
            row = tuple(_state_names(m.group(1)))
            named = f"{what}, row ({', '.join(row)})"
            if len(row) != len(parents) or any(s not in labels[p] for p, s in zip(parents, row)):
                problems.append(f"line {_line(text, pos)}: {named}: not a configuration of its parents "
                                f"({', '.join(parents) or 'none'}): a state that does not exist, or too few or "
                                "too many")
            elif row in rows:
                problems.append(f"line {_line(text, pos)}: {named}: given twice")
            else:
                values = _numbers(text, pos, v.group()[:-1], named, problems)
                if values is not None:
                    rows[row] = values
                    _check_distribution(text, pos, named, values, card, problems)
            pos = v.end()
        else:
            problems.append(f"line {_line(text, pos)}: {what}: expected 'table ...;', "
                            f"'(STATES) ...;', 'default ...;' or 'property ...;', found "
                            f"{text[pos:pos + 30].partition(chr(10))[0]!r}")
            break
    if table is not None:
        if len(table) != card * len(configurations):
            problems.append(f"line {_line(text, start)}: {what}: the table holds "
                            f"{len(table)} numbers, not {card * len(configurations)} ({card} states x "
                            f"{len(configurations)} parent configurations)")
        else:  # the child's state varies slowest
            for j, configuration in enumerate(configurations):
                column = table[j::len(configurations)]
                named = what + (f", parents ({', '.join(configuration)})" if parents else "")
                _check_distribution(text, start, f"{named} in its table", column, card, problems)
    elif default is not None:
        _check_distribution(text, start, f"{what}, default row", default, card, problems)
    elif not problems:
        missing = [f"({', '.join(c)})" for c in configurations if c not in rows]
        if missing:
            problems.append(f"line {_line(text, start)}: {what}: no row for the parent "
                            f"configuration(s) {_some(missing, ', ')}, and no default")
    return problems


def _check_distribution(text: str, pos: int, where: str, values: list[float], card: int,
                        problems: list[str]) -> None:
    """A problem unless ``values`` are ``card`` probabilities that sum to 1 (within :data:`TOLERANCE`)."""
    if len(values) != card:
        problems.append(f"line {_line(text, pos)}: {where}: {len(values)} probabilities for {card} states")
    elif abs(sum(values) - 1.0) > TOLERANCE:
        problems.append(f"line {_line(text, pos)}: {where}: the probabilities sum to {sum(values):.6g}, not 1")


def read_bif(path: str | Path, strict: bool = False) -> Network:
    """Read the structure of a ``.bif`` or ``.bif.gz`` file, named by the file name by default.

    The text is UTF-8, or else read as Latin-1. Problems in its probability tables
    are a :class:`BifWarning` naming the first of them and how many there are, or
    with ``strict`` a :class:`NetworkError`."""
    path = Path(path)
    name = path.name.removesuffix(".gz").removesuffix(".bif")
    text = read_text(path, ("utf-8", "latin-1"))  # some tools write Latin-1
    problems: list[str] = []
    try:
        network = parse_bif(text, name, problems)
    except NetworkError as exc:
        raise NetworkError(f"{path}: {exc}") from None
    if problems:
        if strict:
            raise NetworkError(f"{path}: {_some(problems, '; ')}")
        warnings.warn(f"{path}: {len(problems)} problem(s) in its probability tables, which the search does not "
                      f"read (the structure and state counts are used; --strict refuses such a file): "
                      f"{_some(problems, '; ')}", BifWarning, stacklevel=2)
    return network
