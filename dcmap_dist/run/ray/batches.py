"""The batches of completions that the workers of a distributed search send each other
(and the coordinator, when it holds the link table): a list of ``(key, branch)`` as bytes,
written with :mod:`marshal` where every value is of marshal's exact types, else pickled
(the first byte says which). ``docs/distributed.md`` describes the format."""

from __future__ import annotations

import gc
import marshal
import pickle

import ray.cloudpickle

from ...cost.base import CostModel
from ...cost.dcmap import DcmapCost
from ...search.branch import Branch

__all__ = ["marshallable", "packed", "unpacked"]


def marshallable(model: CostModel) -> bool:
    """Whether a search's keys and branches hold only values of marshal's exact types:
    true for the built-in model with a plain number as ``addition`` (its messages are
    held as int codes, :mod:`~dcmap_dist.search.messages`; its costs are Python floats).
    A user model's messages and costs may be of any type, and marshal would write some of
    them silently as bytes (numpy's numbers, for one), so their batches are pickled."""
    return type(model) is DcmapCost and type(model.addition) in (int, float)


def packed(arrivals: list[tuple[tuple, Branch]], marshal_them: bool) -> bytes:
    """A batch of completions ``(key, branch)`` as bytes: each branch as the plain tuple of
    its fields, written with :mod:`marshal` when ``marshal_them`` (see
    :func:`marshallable`; a third of the time pickle took, which reduced every ``Branch``
    in Python), else pickled with Ray's cloudpickle: a message of the user's own class,
    from a module the workers cannot import, travels by value as the cost model did
    (:func:`~dcmap_dist.run.ray.driver.ship_by_value`). The first byte says which."""
    rows = [(key, branch.fields()) for key, branch in arrivals]
    if marshal_them:
        return b"M" + marshal.dumps(rows)
    return b"P" + ray.cloudpickle.dumps(rows, protocol=5)


def unpacked(batch: bytes) -> list[tuple[tuple, Branch]]:
    """The completions of a :func:`packed` batch, read with the cycle collector paused: a
    batch is thousands of small tuples, which would trigger collections that only move
    them along and slow the reading down; the data holds no cycles."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        body = memoryview(batch)[1:]
        rows = marshal.loads(body) if batch[:1] == b"M" else pickle.loads(body)
        return [(key, Branch(*fields)) for key, fields in rows]
    finally:
        if collecting:
            gc.enable()
