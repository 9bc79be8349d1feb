"""The state of a search as plain data: a consistent cut that does not depend on how
many actors held it, and the counters that go with it. Checkpoints write it
(:mod:`dcmap_dist.checkpoint.arrow`); the serial and distributed searches resume from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .branch import Branch, link_of
from .histories import Histories
from .linking import Entry

__all__ = ["Contour", "Improvement", "Resumption", "SearchState", "counters", "plain_trace", "resumption",
           "trace_from_plain", "write_size"]


class Improvement(NamedTuple):
    """A search found a complete mapping cheaper than any before: when (the search's
    iteration and seconds), its cost, and the trail that rebuilds it (None: saved
    without it, or lost with a worker)."""

    iteration: int
    seconds: float
    cost: float
    trail: tuple | None


@dataclass
class SearchState:
    """A consistent cut of one component's search, whoever held its parts.

    ``arrivals`` are completions sent to a key's owner and not yet settled."""

    branches: list[Branch] = field(default_factory=list)
    arrivals: list[tuple[tuple, Branch]] = field(default_factory=list)
    entries: dict[tuple, Entry] = field(default_factory=dict)
    histories: Mapping[int, Histories] = field(default_factory=dict)  # a dict, or a shard's HistoryTable
    dominated: set[int] = field(default_factory=set)


def write_size(open_branches: int, link_records: int) -> int:
    """How big a checkpoint of a state is reckoned, to foresee its write time: open
    branches (with completions in flight) and twice the link records; the records'
    histories ride along in the rate measured per unit of this size."""
    return open_branches + 2 * link_records


@dataclass
class Contour:
    """Where a search by contours stands (:mod:`dcmap_dist.run.contours`): the contour
    being searched (``G_min`` held at ``value``), the proven lower bound (no mapping
    costs less than ``proven``), the iterations of the contours before this one, each
    exhausted contour's value and expansions, in order, and how many contours were
    given up since the last was exhausted."""

    value: float
    proven: float
    before: int = 0
    done: list[tuple[float, int]] = field(default_factory=list)
    given_up: int = 0

    def plain(self) -> dict[str, Any]:
        """As JSON values (a checkpoint's ``counters.contour``)."""
        return {"value": self.value, "proven": self.proven, "before": self.before,
                "done": [[value, expansions] for value, expansions in self.done], "given_up": self.given_up}

    @classmethod
    def from_plain(cls, saved: dict[str, Any]) -> Contour:
        """The inverse of :meth:`plain`."""
        return cls(saved["value"], saved["proven"], saved["before"], [(v, e) for v, e in saved["done"]],
                   saved["given_up"])


@dataclass
class Resumption:
    """Where a component's interrupted search stood (see :mod:`dcmap_dist.checkpoint.arrow`)."""

    state: SearchState
    iterations: int
    elapsed: float
    g_min: float
    trace: list[Improvement]
    first: Branch  # the incumbent the search started from
    next_owner: int  # link shards made from now on take owner numbers from here
    contour: Contour | None = None  # the contour it was searching (None: the ordinary search)


def counters(iterations: int, elapsed: float, g_min: float, trace: list, first: Branch,
             next_owner: int, contour: Contour | None = None) -> dict[str, Any]:
    """The counters a checkpoint keeps beside the state (plain JSON values); ``contour``
    only for a search by contours (a checkpoint without it is of the ordinary search)."""
    saved = {"iterations": iterations, "elapsed": elapsed, "g_min": g_min, "trace": plain_trace(trace),
             "first_cost": first.cost, "first_trail": list(first.trail), "next_owner": next_owner}
    if contour is not None:
        saved["contour"] = contour.plain()
    return saved


def resumption(state: SearchState, saved: dict[str, Any]) -> Resumption:
    """The inverse of :func:`counters`, with the state."""
    link, *joins = saved["first_trail"]
    first = Branch(0, -1, (), (), saved["first_cost"], tuple(joins), link_of(link))
    contour = saved.get("contour")
    return Resumption(state, saved["iterations"], saved["elapsed"], saved["g_min"],
                      trace_from_plain(saved["trace"]), first, saved["next_owner"],
                      None if contour is None else Contour.from_plain(contour))


def plain_trace(trace: list[Improvement]) -> list[list]:
    """Improvements as JSON values (a trail becomes a list)."""
    return [[found.iteration, found.seconds, found.cost, None if found.trail is None else list(found.trail)]
            for found in trace]


def trace_from_plain(saved: list[list]) -> list[Improvement]:
    """The inverse of :func:`plain_trace`; an improvement saved without a trail gets None."""
    return [Improvement(iteration, seconds, cost, tuple(rest[0]) if rest and rest[0] is not None else None)
            for iteration, seconds, cost, *rest in saved]
