"""Where a search's expansions went: an engine's log of its work (:class:`WorkLog`,
kept on request by both engines, ``Engine.keep_log``) and the breakdown of a
distributed search's expansions against the serial search's (:func:`breakdown`).

An expansion is named by its branch's cost and bound: a partial mapping's two sums,
computed by the same operations in every search that reaches it, so that equal pairs
name the same partial mapping (or one of its ties) in the serial and the distributed
searches; each branch's last link record (a number of its own search) tells whether a
cheaper completion of that key came later. A record dominated is logged with whether
a cheaper arrival from another actor dominated it (a batch), or one of the actor's own
completions."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .tolerance import within

__all__ = ["KINDS", "WorkLog", "breakdown"]

# the kinds of an expansion, in the order they are told apart (each is the first that fits)
KINDS = ("serial", "above", "arrived", "local", "other")


@dataclass(eq=True)
class WorkLog:
    """An engine's work since ``keep_log``: for each expansion, in order, its branch's
    cost, bound and last link record; for each record its shard dominated, in order,
    the record and whether an arrival (a completion sent by another actor) did it."""

    costs: array = field(default_factory=lambda: array("d"))
    bounds: array = field(default_factory=lambda: array("d"))
    links: array = field(default_factory=lambda: array("q"))
    dominated: array = field(default_factory=lambda: array("q"))
    arrived: array = field(default_factory=lambda: array("b"))

    def expanded(self, cost: float, bound: float, link: int) -> None:
        """An expansion of the branch of this ``cost``, ``bound`` and last ``link`` record."""
        self.costs.append(cost)
        self.bounds.append(bound)
        self.links.append(link)

    def superseded(self, record: int, arrived: bool) -> None:
        """``record`` dominated, by an arrival from another actor or not."""
        self.dominated.append(record)
        self.arrived.append(arrived)


def breakdown(serial: WorkLog, logs: Iterable[WorkLog], optimum: float) -> dict[str, int]:
    """The expansions of a distributed search (one log per worker) by kind (:data:`KINDS`),
    each counted under the first kind that fits it:

    * ``serial``: the serial search (its log ``serial``) also expands that branch (an
      equal cost and bound; each of the serial search's expansions matches once);
    * ``above``: its bound is above ``optimum`` (the final ``G_min``): a search that
      knew the optimum from the start would prune it;
    * ``arrived``: its last link record was dominated later by a cheaper completion
      sent by another worker (the worker settled a record before a cheaper one arrived);
    * ``local``: that record was dominated later by the worker's own completion;
    * ``other``: the rest (below a record dominated on an earlier layer, or a branch
      the serial search's dominance or order never let it reach).

    With ``total``: every expansion; ``above_any``: every expansion above ``optimum``,
    whatever its kind (the serial search's own too)."""
    left = Counter(zip(serial.costs, serial.bounds))
    counts = dict.fromkeys((*KINDS, "total", "above_any"), 0)
    for log in logs:
        by_arrival = {record: bool(flag) for record, flag in zip(log.dominated, log.arrived)}
        for cost, bound, link in zip(log.costs, log.bounds, log.links):
            counts["total"] += 1
            pair = (cost, bound)
            beyond = not within(bound, optimum)
            counts["above_any"] += beyond
            if left[pair] > 0:
                left[pair] -= 1
                kind = "serial"
            elif beyond:
                kind = "above"
            elif link in by_arrival:
                kind = "arrived" if by_arrival[link] else "local"
            else:
                kind = "other"
            counts[kind] += 1
    return counts
