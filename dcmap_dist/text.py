"""Text shown to a user. Names made safe: a node or network name comes from an input
file and may hold a newline, a NUL or a terminal escape sequence, which printed raw
would break lines or drive the terminal; :func:`printable` escapes them as a Python
literal does. Numbers kept readable: :func:`readable` writes a count past 10^15 (the
optimal mappings of a long chain number 5.1e89) in scientific notation."""

from __future__ import annotations

import math
from decimal import Decimal

__all__ = ["LARGE", "printable", "readable"]

LARGE = 10**15  # a number from here on is shown in scientific notation


def printable(text: object) -> str:
    """``str(text)`` with every character that is not printable (control and format
    characters, line and paragraph separators; not the space) escaped as in a Python
    literal: a newline as ``\\n``, ESC as ``\\x1b``, U+202E as ``\\u202e``."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def readable(number: int | float) -> str:
    """An integer in digits, up to :data:`LARGE`; past it (or a float past it), in
    scientific notation with four significant digits: ``5.093e+89``."""
    if abs(number) < LARGE or isinstance(number, float) and not math.isfinite(number):
        return str(number)
    return format(Decimal(number), ".4g").replace("E", "e")  # a Decimal: an int past a float's range too
