"""Names shown to a user, made safe: a node or network name comes from an input file and
may hold a newline, a NUL or a terminal escape sequence, which printed raw would break
lines or drive the terminal. :func:`printable` escapes them as a Python literal does."""

from __future__ import annotations

__all__ = ["printable"]


def printable(text: object) -> str:
    """``str(text)`` with every character that is not printable (control and format
    characters, line and paragraph separators; not the space) escaped as in a Python
    literal: a newline as ``\\n``, ESC as ``\\x1b``, U+202E as ``\\u202e``."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
