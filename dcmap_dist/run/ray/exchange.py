"""What the coordinator passes between the workers (see :mod:`dcmap_dist.run.ray.driver` for
the design), beside the batches and notices of the steps themselves (:func:`.rules.take_in`,
:func:`.rules.notify`, applied as the steps are taken in: :mod:`.turns`): completions
handed to the owners of their keys, a resumed state shared out among the workers, and
with the link table on the coordinator, the batches the steps send it settled there and
its surviving branches dealt out."""

from __future__ import annotations

from typing import Any

from ...search.branch import Branch
from ...search.linking import route
from ...search.state import SearchState
from .protocol import StepReport
from .rules import deliver, notify
from .search import Search
from .steps import deal
from .worker import by_value

__all__ = ["Exchange"]


class Exchange:
    """The exchange between the workers of a ``search``, through its coordinator."""

    def __init__(self, search: Search) -> None:
        self.search = search

    def deliver(self, arrivals: list[tuple[tuple, Branch]]) -> None:
        """Send completions to the owners of their keys (settled in their next step)."""
        search = self.search
        if not search.sharded:
            search.engine.receive(arrivals)
            return
        deliver(search.slots, arrivals, search.engine.problem, by_value)

    def distribute(self, state: SearchState) -> None:
        """Share a resumed state among the workers: each key to its owner, each branch to
        the owner of its last link's key (where its dominance is decided), arrivals to
        be settled in their first step. With the table on the coordinator, it keeps the
        table and deals the branches out."""
        search = self.search
        if not search.sharded:
            search.engine.load(state)  # the records first, then the arrivals settled against them
            return
        self.deliver(state.arrivals)
        size = search.crew.size
        parts = [SearchState(dominated=state.dominated) for _ in range(size)]
        holder = {}
        for key, entry in state.entries.items():
            holder[entry.record] = owner = route(key, size)
            parts[owner].entries[key] = entry
        for record, histories in state.histories.items():
            parts[holder.get(record, record % size)].histories[record] = histories
        for k, branch in enumerate(state.branches):
            parts[holder.get(branch.link, k % size)].branches.append(branch)
        search.crew.save_get([slot.actor.take_part.remote(part) for slot, part in zip(search.slots, parts)])
        for slot, part in zip(search.slots, parts):  # so that each worker holding branches gets a step
            slot.report = StepReport(open_branches=len(part.branches))

    def settle(self, arrivals: list[Any]) -> None:
        """The batches a step sent to the coordinator's table (Ray references) settled
        there: its improvements into the trace, the records it found dominated for every
        worker's next step."""
        search = self.search
        search.engine.place(search.iterations, search.elapsed())
        for batch in search.crew.get(arrivals):
            search.engine.receive_batch(batch)
        search.trace.extend(search.engine.take_improvements())
        notify(search.slots, search.engine.take_notices())

    def deal_out(self) -> None:
        """With the table on the coordinator, its open branches dealt out to the workers
        (each takes its hand with its next step)."""
        search = self.search
        if not search.sharded and search.engine.open_count():
            deal(search.engine.take_open(), search.slots)
