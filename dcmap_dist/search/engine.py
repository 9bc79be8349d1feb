"""The engine's boundary: :class:`Engine`, all that the drivers (:mod:`dcmap_dist.run`), the
checkpoints and :func:`~dcmap_dist.solve.solve` may use of the search engine that expands
one actor's branches. :class:`~dcmap_dist.search.explorer.Explorer` is the Python engine,
the reference; :class:`~dcmap_dist.search.native_engine.NativeEngine`, the native one,
answers the same calls with the same results (docs/engine.md). Nothing outside :mod:`dcmap_dist.search` assigns an engine's attributes
(``tests/test_layers.py`` holds that).

The data that crosses the boundary is plain: :class:`~dcmap_dist.search.branch.Branch`
records, link keys (tuples of ints and the cost model's messages),
:class:`~dcmap_dist.search.state.SearchState` for a whole share of the search,
:class:`~dcmap_dist.search.state.Improvement` records, link record ids (ints) and
histories (bytes).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Protocol

from ..compiled import native_wanted
from ..limits import StepEnd, StopReason, Stopwatch
from .batches import MAGIC
from .branch import Branch
from .core import NATIVE_NODES
from .explorer import Explorer
from .histories import Histories
from .linking import Entry
from .problem import Problem
from .state import Improvement, SearchState
from .worklog import WorkLog

__all__ = ["Arrival", "Engine", "NATIVE_NODES", "new_engine", "runs_natively", "share_state"]

Arrival = tuple[tuple, Branch]  # a completion sent to the owner of its key: (link key, branch)


class Engine(Protocol):
    """One actor's share of a DCMAP search (all of it when serial): its open branches
    and, when it owns one, its shard of the link table."""

    # -- counters
    @property
    def iterations(self) -> int:
        """Expansions made here (with those before a :meth:`restore`)."""

    @property
    def g_min(self) -> float:
        """The cost of the best complete mapping known here (inf: none)."""

    @property
    def link_records(self) -> int:
        """Keys in this engine's shard of the link table (0 without one)."""

    # -- beginning, resuming, what other actors tell
    def start(self, first: Branch, watch: Stopwatch) -> None:
        """Begin a search at its root, the complete mapping ``first`` bounding it."""

    def restore(self, state: SearchState, iterations: int = 0, g_min: float = float("inf"),
                random_state: tuple | None = None, seconds: float = 0.0) -> None:
        """Go on from where a search stood: its counters, then its ``state``."""

    def hear(self, g_min: float, dominated: Iterable[int] = ()) -> None:
        """A ``G_min`` found elsewhere, records dominated elsewhere."""

    def place(self, iterations: int, seconds: float, watch: Stopwatch | None = None) -> None:
        """Stamp what is found from now on as the search's ``iterations`` and ``seconds``
        plus this engine's own count and ``watch``'s time."""

    def random_state(self) -> tuple:
        """The random generator's state, for :meth:`restore`."""

    # -- the search
    def step(self, watch: Stopwatch, until: float | None = None,
             max_iterations: int | None = None) -> StopReason | StepEnd:
        """Expand branches until none is open (``idle``), the clock passes ``until``
        (``budget``), the own count reaches ``max_iterations``, or a limit of ``watch``
        is reached (its name)."""

    def collector_paused(self) -> AbstractContextManager[None]:
        """A context in which many branches can be taken in cheaply (the Python engine
        pauses the cycle collector)."""

    def offer(self, key: tuple, branch: Branch) -> Branch | None:
        """Settle ``branch`` at ``key`` in this engine's shard; the branch, linked, if it goes on."""

    def receive(self, arrivals: list[Arrival]) -> None:
        """Settle completions sent by other actors; keep the survivors."""

    def receive_batch(self, batch: bytes) -> int:
        """Settle a batch of completions (:mod:`.batches`' format, from either engine);
        how many it held. ValueError naming the damage for one that is not this search's."""

    def adopt(self, branches: list[Branch]) -> None:
        """Take over open branches."""

    def load(self, state: SearchState) -> None:
        """Take over a share of the search: link records, dominated records, open
        branches, then completions in flight, settled against those records."""

    def export(self) -> SearchState:
        """This engine's share of the search as plain data (what :meth:`load` takes)."""

    def take_share(self, dumps: Callable[[object], bytes] = pickle.dumps) -> bytes:
        """This engine's share (what :meth:`export` gives) as one buffer, quick to take and
        to send (a worker's snapshot): the native core's own (a batch of the share's kind,
        :mod:`.batches`), the Python engine's pickled export; a model's messages pickled
        with ``dumps``. :func:`share_state` reads it as plain data."""

    def load_share(self, share: bytes) -> None:
        """Take over a :meth:`take_share` buffer of an engine of this kind."""

    # -- what it hands out
    def take_outbox(self) -> dict[int, list[Arrival]]:
        """Completions for other actors, by owner; emptied."""

    def take_batches(self, destinations: int, dumps: Callable[[object], bytes] = pickle.dumps) -> list[bytes]:
        """The outbox as one batch per actor ``0 .. destinations - 1`` (b"" where none;
        :mod:`.batches`), emptied; a model's messages pickled with ``dumps``."""

    def take_improvements(self) -> list[Improvement]:
        """Improvements found since the last call."""

    def take_notices(self) -> list[int]:
        """Records this shard dominated since the last call (with ``notify``)."""

    def take_open(self) -> list[Branch]:
        """Every queued branch still worth expanding, cheapest first, taken out."""

    def keep_log(self) -> None:
        """From now on, log every expansion and every record dominated here
        (:class:`~dcmap_dist.search.worklog.WorkLog`; a measurement's, not a search's)."""

    def take_log(self) -> WorkLog:
        """The log since :meth:`keep_log` or the last call, emptied (logging goes on)."""

    def least_bound(self) -> float:
        """The least bound over every branch held here (inf: none)."""

    def open_count(self) -> int:
        """Open branches held here, not counting the outbox."""

    def open_branches(self) -> list[Branch]:
        """Every open branch held here, without removing them."""

    def final_entry(self) -> Entry | None:
        """The link table's entry of the complete mappings, if this shard holds it."""

    def lookup(self, records: Iterable[int]) -> dict[int, Histories]:
        """The histories of those of ``records`` that this shard holds."""


def new_engine(problem: Problem, alpha: float = 0.6, seed: int = 0, owner: int | None = None,
               shard_index: int = 0, shards: int = 1, notify: bool = False) -> Engine:
    """The engine of one actor's share of a search of ``problem`` (the arguments are
    :class:`~dcmap_dist.search.explorer.Explorer`'s), the one place the drivers make an
    engine: the native one where it is built and wanted (:func:`~dcmap_dist.compiled.native_wanted`)
    and the network fits its masks (:func:`runs_natively`), else the Python one."""
    if runs_natively(problem):
        from .native_engine import NativeEngine

        return NativeEngine(problem, alpha, seed, owner, shard_index, shards, notify)
    return Explorer(problem, alpha, seed, owner, shard_index, shards, notify)


def runs_natively(problem: Problem) -> bool:
    """Whether :func:`new_engine` makes a native engine for ``problem``: built, wanted,
    and the network no wider than its masks (:data:`NATIVE_NODES`)."""
    return native_wanted() and problem.topo.n <= NATIVE_NODES


def share_state(problem: Problem, share: bytes) -> SearchState:
    """A :meth:`Engine.take_share` buffer as plain data (what a checkpoint writes, what a
    recovery on fewer workers shares out anew), read by an engine of the kind that wrote
    it, made here with a shard for its link entries."""
    if bytes(share[:4]) == MAGIC:
        from .native_engine import NativeEngine

        engine: Engine = NativeEngine(problem, owner=0)
    else:
        engine = Explorer(problem, owner=0)
    engine.load_share(share)
    return engine.export()
