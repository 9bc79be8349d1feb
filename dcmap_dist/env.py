"""The environment variables dcmap reads at run time, parsed in one place: a value is
checked, and a bad one refused with an error that names the variable and the values it
accepts (docs/inputs.md lists them).

* ``DCMAP_DEBUG``: a flag (:func:`flag`): tracebacks with errors, and where warnings came from;
* ``DCMAP_ENGINE``: ``native`` or ``python`` (:func:`choice`): the engine that searches;
* ``DCMAP_MAX_INPUT_MB``: a number of MiB (:func:`number`): the largest input file read.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

__all__ = ["EnvironmentValueError", "FALSE", "TRUE", "choice", "flag", "number"]

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off", "")


class EnvironmentValueError(ValueError):
    """An environment variable holds a value it does not accept."""


def _value(name: str) -> str | None:
    text = os.environ.get(name)
    return None if text is None else text.strip()


def flag(name: str, default: bool = False) -> bool:
    """A yes/no variable: ``1/true/yes/on`` or ``0/false/no/off`` (any case; empty is
    no); ``default`` when unset."""
    text = _value(name)
    if text is None:
        return default
    if text.lower() in TRUE:
        return True
    if text.lower() in FALSE:
        return False
    raise EnvironmentValueError(f"{name}={text!r}: expected one of {', '.join(TRUE)} (on) or "
                                f"{', '.join(f for f in FALSE if f)} (off)")


def choice(name: str, choices: Sequence[str], default: str) -> str:
    """One of ``choices`` (any case), or ``default`` when unset or empty."""
    text = (_value(name) or default).lower()
    if text not in choices:
        raise EnvironmentValueError(f"{name}={text!r}: expected {' or '.join(choices)}")
    return text


def number(name: str, default: float, most: float, unit: str) -> float:
    """A positive finite number of ``unit`` of at most ``most``, or ``default`` when
    unset or empty."""
    text = _value(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value <= most):
        raise EnvironmentValueError(f"{name}={text!r}: expected a positive number of {unit}, at most {most:,.0f}")
    return value
