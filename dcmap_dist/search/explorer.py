"""The DCMAP loop over one actor's open branches: the single engine of the serial
and the distributed searches.

An :class:`Explorer` owns a set of open branches (a queue, :mod:`.branch_queue`, and the active branch)
and, optionally, one shard of the link table. It pops or activates a branch (the
cheapest ``g_hat`` with probability ``alpha``, else one at the lowest layer),
prunes it if its last link record was dominated or its bound cannot beat
``G_min``, expands it, and hands every child that completes a layer to the owner
of its dominance key: itself when it holds that key's shard (the branch is
settled at once and, if it goes on, stays here), else an outbox that the
distributed search delivers in batches. A child still inside its layer is settled
in this explorer's own shard, where linking there pays (:meth:`Explorer._link_inside`).
The first (cheapest) surviving child stays active; the others wait in the queue.

Serially one explorer holds the whole table, so every key is settled at once:
this is the paper's loop with the two corrections of SPEC section 5.
"""

from __future__ import annotations

import contextlib
import gc
import math
import pickle
import random
import time
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter

from ..cost.dcmap import leaves_no_cycles
from ..limits import SearchInterrupted, StepEnd, StopReason, Stopwatch
from . import batches
from .branch import Branch
from .branch_queue import BranchQueue
from .histories import Histories, HistoryTable
from .linking import CHEAPER, NEW, Entry, LinkShard, route
from .problem import Problem
from .state import Improvement, SearchState
from .tolerance import within
from .worklog import WorkLog

__all__ = ["Explorer"]

ESTIMATE = attrgetter("estimate")  # a branch's g_hat
SENT_MEMORY = 1 << 18  # foreign keys whose best sent cost is remembered (a filter only)
# linking inside a layer (see Explorer._link_inside)
INSIDE_WINDOW = 256  # settles per trial at one point of a layer
INSIDE_YIELD = 4  # a trial pays when at least one in INSIDE_YIELD of its branches stops
INSIDE_REST = 16  # after a trial that does not, skip INSIDE_REST trials' worth of branches,
INSIDE_REST_MOST = 1024  # twice as many after each further such trial, up to this


class Explorer:
    """One actor's share of a DCMAP search (all of it when serial): the Python engine,
    the reference of :class:`~dcmap_dist.search.engine.Engine`.

    With an ``owner`` number it owns a shard of the link table (shard ``shard_index`` of
    ``shards``; its records are numbered as that owner's, :func:`histories.record_id`);
    with None, another actor owns the whole table. With ``notify``, the records its
    shard dominates are also listed for :meth:`take_notices`, for the actors that hold
    the branches below them (only when the table's owner does not hold the branches: a
    sharded worker and the serial search keep every branch with the owner of its last
    record, so their own dominated set is enough).
    """

    def __init__(self, problem: Problem, alpha: float = 0.6, seed: int = 0, owner: int | None = None,
                 shard_index: int = 0, shards: int = 1, notify: bool = False) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.problem = problem
        self.alpha = alpha
        self.rng = random.Random(seed)
        self.queue = BranchQueue()
        self.active: Branch | None = None
        self.shard = LinkShard(owner) if owner is not None else None
        self.shard_index = shard_index
        self.shards = shards
        self.final_key = problem.keys.final
        self._g_min = math.inf
        self.dominated: set[int] = set()  # records known to be dominated
        self.notify = notify
        self.notices: list[int] = []  # records this shard dominated, for other actors (notify)
        self.outbox: dict[int, list[tuple[tuple, Branch]]] = {}
        self._sent: dict[tuple, float] = {}
        self._gates: dict[int, list[int]] = {}  # see _link_inside
        self._iterations = 0
        self.iteration_offset = 0  # added to local counts in histories and the trace
        self.time_offset = 0.0  # seconds of the whole search when this step's clock started
        self.improvements: list[Improvement] = []
        self.watch: Stopwatch | None = None
        self.acyclic = leaves_no_cycles(problem.model)  # the collector can pause in steps
        self.log: WorkLog | None = None  # see keep_log
        self._arriving = False  # settling arrivals from another actor (the log tells them apart)

    # -- arrivals -------------------------------------------------------------
    def offer(self, key: tuple, branch: Branch) -> Branch | None:
        """Settle a branch at ``key`` in this explorer's shard; the branch linked (advanced
        to its next layer if it completed one) if it goes on, else None (tied, worse, or
        complete)."""
        outcome, record, dominated = self.shard.settle(key, branch.cost, branch.trail, self.stamp(), self.dominated)
        for old in dominated:
            self.dominated.add(old)
            if self.notify:
                self.notices.append(old)
            if self.log is not None:
                self.log.superseded(old, self._arriving)
        if outcome not in (NEW, CHEAPER):
            return None
        if key == self.final_key:
            self.improve(branch.cost, branch.trail)
            return None
        return branch.linked(record)

    def receive(self, arrivals: list[tuple[tuple, Branch]]) -> None:
        """Settle a batch of completions sent by other explorers; keep the survivors
        (their messages as this process holds them: :meth:`MessageCodes.adopted`)."""
        self._arriving = True
        try:
            for key, branch in arrivals:
                survivor = self.offer(key, branch)  # a complete one improves G_min there
                if survivor is not None and within(survivor.bound, self._g_min):
                    survivor.frontier = self.problem.messages.adopted(survivor.frontier)
                    self.queue.push(survivor)
        finally:
            self._arriving = False

    def adopt(self, branches: list[Branch]) -> None:
        """Take over open branches (handed out by the coordinator, or restored)."""
        for branch in branches:
            branch = Branch(*branch.fields())  # the queue's own (BranchQueue.push)
            branch.frontier = self.problem.messages.adopted(branch.frontier)
            self.queue.push(branch)

    def improve(self, cost: float, trail: tuple) -> None:
        """A complete mapping of ``cost`` reached by ``trail`` exists: lower ``G_min``
        and record it."""
        if not within(self._g_min, cost):
            self._g_min = cost
            self.improvements.append(Improvement(self.stamp(), self.seconds(), cost, trail))

    def stamp(self) -> int:
        """The search's iteration count now (this explorer's own, placed by :meth:`place`)."""
        return self.iteration_offset + self._iterations

    def seconds(self) -> float:
        """The search's seconds now (placed by :meth:`place`)."""
        return self.time_offset + (self.watch.elapsed() if self.watch else 0.0)

    # -- beginning, resuming, and what other actors tell ----------------------------
    def start(self, first: Branch, watch: Stopwatch) -> None:
        """Begin a search at its root, ``first`` (a complete mapping) bounding it from the
        start; ``watch`` is the search's clock."""
        self.watch = watch
        self.improve(first.cost, first.trail)
        root = self.problem.root()
        self.active = self.offer(self.problem.link_key(root), root)

    def restore(self, state: SearchState, iterations: int = 0, g_min: float = math.inf,
                random_state: tuple | None = None, seconds: float = 0.0) -> None:
        """Go on from where a search stood: its counters (this explorer's own iteration
        count, ``G_min``, the random generator's state, the seconds searched), then its
        ``state`` (:meth:`load`)."""
        self._iterations = iterations
        self._g_min = g_min
        self.time_offset = seconds
        if random_state is not None:
            self.rng.setstate(random_state)
        self.load(state)

    def hear(self, g_min: float, dominated: Iterable[int] = ()) -> None:
        """News from the other actors: a ``G_min`` found elsewhere, records dominated elsewhere."""
        self._g_min = min(self._g_min, g_min)
        self.dominated.update(dominated)

    def place(self, iterations: int, seconds: float, watch: Stopwatch | None = None) -> None:
        """Where this explorer stands in the whole search: from now on its stamps (in
        improvements and histories) count ``iterations`` plus its own count, and its
        seconds ``seconds`` plus ``watch``'s (if any)."""
        self.iteration_offset = iterations
        self.time_offset = seconds
        self.watch = watch

    def random_state(self) -> tuple:
        """The state of its random generator (the alpha activations), for :meth:`restore`."""
        return self.rng.getstate()

    # -- counters -----------------------------------------------------------------
    @property
    def iterations(self) -> int:
        """Expansions made by this explorer (with those before a :meth:`restore`)."""
        return self._iterations

    @property
    def g_min(self) -> float:
        """The cost of the best complete mapping known here (inf: none)."""
        return self._g_min

    @property
    def link_records(self) -> int:
        """Keys in this explorer's shard of the link table (0 without one)."""
        return len(self.shard.entries) if self.shard is not None else 0

    # -- the loop -------------------------------------------------------------
    def step(self, watch: Stopwatch, until: float | None = None,
             max_iterations: int | None = None) -> StopReason | StepEnd:
        """Run the loop until the open set is empty (``idle``), the clock passes ``until``
        (``budget``), this explorer's iterations reach ``max_iterations``, or a limit of
        ``watch`` is reached (its name). The garbage collector is handled as
        :meth:`collector_paused` says."""
        self.watch = watch
        with self.collector_paused():
            return self._loop(watch, until, max_iterations)

    @contextlib.contextmanager
    def collector_paused(self) -> Iterator[None]:
        """Every object alive on entry (the open branches, the link table, the memos: all
        acyclic) is moved to the garbage collector's permanent generation, so its full
        collections scan only what is made inside (otherwise each would scan the whole
        search's state again). With a model that leaves no reference cycles
        (:func:`~dcmap_dist.cost.dcmap.leaves_no_cycles`; the expansion itself makes none)
        the collector is also paused inside and what was made there is frozen on exit:
        there is nothing for it to find. Nested uses pause once."""
        gc.freeze()
        pause = self.acyclic and gc.isenabled()
        if pause:
            gc.disable()
        try:
            yield
        finally:
            if pause:
                gc.freeze()
                gc.enable()

    def _loop(self, watch: Stopwatch, until: float | None, max_iterations: int | None) -> StopReason | StepEnd:
        problem = self.problem
        queue = self.queue
        rng = self.rng
        branch: Branch | None
        while True:
            if max_iterations is not None and self._iterations >= max_iterations:
                return StopReason.MAX_ITERATIONS
            reason = watch.check(self._iterations)
            if reason:
                return reason
            if until is not None and time.perf_counter() >= until:
                return StepEnd.BUDGET
            branch = self.active
            if branch is not None:
                self.active = None
            else:
                branch = queue.pop(rng.random() < self.alpha)
                if branch is None:
                    return StepEnd.IDLE
            if branch.link in self.dominated or not within(branch.bound, self._g_min):
                continue
            self._iterations += 1
            try:
                children = problem.expand(branch, problem.next_proposal(branch), self._g_min, watch)
            except SearchInterrupted as stop:
                self._iterations -= 1
                queue.push(branch)  # not expanded: it still stands for its mappings
                return stop.args[0]
            if self.log is not None:
                self.log.expanded(branch.cost, branch.bound, branch.link)
            survivors = []
            for child in children:
                if child.assigned == -1:  # it completed its layer
                    child = self._complete(child)
                elif self.shard is not None:
                    child = self._link_inside(child)
                if child is not None:
                    survivors.append(child)
            if survivors:
                survivors.sort(key=ESTIMATE)
                self.active = survivors[0]
                for child in survivors[1:]:
                    queue.push(child)

    def _link_inside(self, branch: Branch) -> Branch | None:
        """Settle a branch inside its layer, in this explorer's own shard whoever owns the
        key, when linking pays at its point (its layer and how many nodes of it are
        placed); the branch (linked, or as it was) if it goes on, else None. Such keys
        never travel: two explorers may each hold a record of one key, which only links
        less (docs/distributed.md).

        Each point links by trials of INSIDE_WINDOW settles; a trial that stops fewer
        than one in INSIDE_YIELD of them (tied or worse) turns the point off for
        INSIDE_REST trials' worth of branches, twice as long after each further such
        trial (up to INSIDE_REST_MOST), then it tries again. Which branches are linked
        changes only the work, never the result."""
        # the point as one int: the layer and how many of its nodes are placed
        point = (branch.layer << 20) | branch.assigned.bit_count()
        gate = self._gates.get(point)
        if gate is None:
            # settled and stopped in this trial, branches left to skip, trials to skip next
            gate = self._gates[point] = [0, 0, 0, INSIDE_REST]
        if gate[2]:
            gate[2] -= 1
            return branch
        survivor = self.offer(self.problem.link_key(branch), branch)
        gate[0] += 1
        if survivor is None:
            gate[1] += 1
        if gate[0] == INSIDE_WINDOW:
            if gate[1] * INSIDE_YIELD < INSIDE_WINDOW:
                gate[2] = INSIDE_WINDOW * gate[3]
                gate[3] = min(2 * gate[3], INSIDE_REST_MOST)
            else:
                gate[3] = INSIDE_REST
            gate[0] = gate[1] = 0
        return survivor

    def _complete(self, branch: Branch) -> Branch | None:
        """Hand a branch that completed a layer to its key's owner: settled here if this
        explorer owns the key, else put in the outbox unless a branch at least as cheap
        was already sent there (bests only fall, so a worse one would be refused)."""
        key = self.problem.link_key(branch)
        if self.problem.is_complete(branch):
            self.improve(branch.cost, branch.trail)
        owner = route(key, self.shards)
        if self.shard is not None and owner == self.shard_index:
            return self.offer(key, branch)
        sent = self._sent.get(key)
        if sent is not None and not within(branch.cost, sent):
            return None
        if len(self._sent) >= SENT_MEMORY:
            self._sent.clear()
        self._sent[key] = branch.cost if sent is None else min(sent, branch.cost)
        self.outbox.setdefault(owner, []).append((key, branch))
        return None

    # -- the log of its work ----------------------------------------------------------
    def keep_log(self) -> None:
        """From now on, log every expansion and every record dominated here (:class:`WorkLog`)."""
        self.log = WorkLog()

    def take_log(self) -> WorkLog:
        """The log since :meth:`keep_log` or the last call (emptied; logging goes on)."""
        if self.log is None:
            raise ValueError("no log is kept: call keep_log first")
        found, self.log = self.log, WorkLog()
        return found

    # -- figures ----------------------------------------------------------------
    def open_count(self) -> int:
        """Open branches held here (queue and active), not counting the outbox."""
        return self.queue.size + (self.active is not None)

    def least_bound(self) -> float:
        """The least bound over every branch held here, outbox included (inf if none)."""
        bounds = [self.queue.least_bound()]
        if self.active is not None:
            bounds.append(self.active.bound)
        bounds.extend(branch.bound for batch in self.outbox.values() for _, branch in batch)
        return min(bounds)

    def take_batches(self, destinations: int, dumps: Callable[[object], bytes] = pickle.dumps) -> list[bytes]:
        """The outbox as one batch per destination (b"" where none; :mod:`.batches`), emptied;
        a model's messages pickled with ``dumps`` (the built-in model's codes written as masks)."""
        outbox = self.take_outbox()
        if any(not 0 <= owner < destinations for owner in outbox):
            raise ValueError(f"a completion for an actor past the {destinations} given")
        n, coded = self.problem.topo.n, batches.codes_fit(self.problem)
        return [batches.encode(outbox[j], n, coded, dumps) if outbox.get(j) else b""
                for j in range(destinations)]

    def receive_batch(self, batch: bytes) -> int:
        """Settle a batch's completions (:mod:`.batches`, from either engine); how many it held."""
        if not len(batch):
            return 0
        arrivals = batches.decode(batch, self.problem.topo.n)
        self.receive(arrivals)
        return len(arrivals)

    def take_outbox(self) -> dict[int, list[tuple[tuple, Branch]]]:
        """The completions waiting to be sent, by owner; the outbox is emptied."""
        outbox, self.outbox = self.outbox, {}
        return outbox

    def take_improvements(self) -> list[Improvement]:
        """The improvements found since the last call."""
        found, self.improvements = self.improvements, []
        return found

    def take_notices(self) -> list[int]:
        """The records this shard dominated since the last call (with ``notify``)."""
        found, self.notices = self.notices, []
        return found

    def take_open(self) -> list[Branch]:
        """Every queued branch still worth expanding (not dominated, its bound within
        ``G_min``), cheapest first, taken out of this explorer; the others are dropped."""
        taken = []
        while (branch := self.queue.pop(True)) is not None:
            if within(branch.bound, self._g_min) and branch.link not in self.dominated:
                taken.append(branch)
        return taken

    def final_entry(self) -> Entry | None:
        """The link table's entry of the complete mappings, if this explorer's shard holds it."""
        return self.shard.entries.get(self.final_key) if self.shard is not None else None

    def lookup(self, records: Iterable[int]) -> dict[int, Histories]:
        """The histories of those of ``records`` that this explorer's shard holds."""
        return self.shard.lookup(records) if self.shard is not None else {}

    def open_branches(self) -> list[Branch]:
        """Every open branch held here (the active one first), without removing them."""
        return ([self.active] if self.active is not None else []) + self.queue.branches()

    def load(self, state: SearchState) -> None:
        """Take over ``state`` (a resumed search's, or this explorer's share of it): its
        link records into this explorer's shard (if it has one), its dominated records,
        its open branches, then its completions in flight, settled against those records."""
        if self.shard is not None:
            self.shard.load(state.entries, HistoryTable.of(state.histories))
        self.dominated = state.dominated
        self.adopt(state.branches)
        self.receive(state.arrivals)

    def export(self) -> SearchState:
        """This explorer's share of the search as plain data (what :meth:`load` takes)."""
        shard = self.shard
        return SearchState(self.open_branches(), [], shard.entries if shard is not None else {},
                           shard.histories if shard is not None else {}, self.dominated)

    def take_share(self, dumps: Callable[[object], bytes] = pickle.dumps) -> bytes:
        """This explorer's share (:meth:`export`) pickled with ``dumps`` (the native engine's
        is its core's own buffer)."""
        return dumps(self.export())

    def load_share(self, share: bytes) -> None:
        """Take over a :meth:`take_share` buffer (:meth:`load`)."""
        if bytes(share[:4]) == batches.MAGIC:
            raise ValueError("a share written by the native engine: this process runs the Python engine")
        self.load(pickle.loads(share))
