"""The driver loop (dcmap_dist/run/loop.py) with a fake backend and a fake saver: turns,
progress, checkpoints when due and at an unproven end, an interrupt, a stop at a limit,
and a search that must go on after it stopped (a worker lost after the proof)."""

from __future__ import annotations

import pytest

from dcmap_dist.limits import INTERRUPT, StopReason
from dcmap_dist.progress import Progress
from dcmap_dist.run.loop import Ending, Turn, drive
from dcmap_dist.search.outcome import SearchOutcome
from dcmap_dist.search.state import SearchState


def progress(turn: int) -> Progress:
    return Progress(iterations=turn, best_cost=10.0, lower_bound=5.0, open_branches=1, elapsed_seconds=turn,
                    rate=1.0, peak_memory_mb=1.0)


class FakeSearch:
    """Stops by itself after ``stop_after`` turns (``reason``: FINISHED proves it), or when
    halted; ``lost`` times, its finish says it must go on (one more turn each)."""

    def __init__(self, stop_after: int, reason: StopReason = StopReason.FINISHED, lost: int = 0) -> None:
        self.stop_after, self.reason, self.lost = stop_after, reason, lost
        self.turns = 0
        self.halted: list[StopReason] = []
        self.cuts = 0

    def advance(self, saver) -> Turn:
        self.turns += 1
        stopped = bool(self.halted) or self.turns >= self.stop_after
        return Turn(stopped, None if stopped else progress(self.turns))

    def halt(self, reason: StopReason) -> None:
        self.halted.append(reason)

    def cut(self):
        self.cuts += 1
        return [SearchState()], {"turn": self.turns}

    def finish(self) -> Ending | None:
        if self.lost:
            self.lost -= 1
            self.stop_after = self.turns + 1
            return None
        reason = self.halted[0] if self.halted else self.reason
        proven = reason == StopReason.FINISHED
        return Ending(SearchOutcome(10.0, [], proven, reason, self.turns), progress(self.turns))


class FakeSaver:
    """Due every ``every`` calls of :meth:`due`; records what it saved."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.calls = 0
        self.saved: list[dict] = []

    def due(self) -> bool:
        self.calls += 1
        return self.calls % self.every == 0

    def reserve(self, size: int) -> float:
        return 0.0

    def save(self, parts, counters) -> bool:
        self.saved.append(counters)
        return True


@pytest.fixture(autouse=True)
def no_interrupt():
    INTERRUPT.clear()
    yield
    INTERRUPT.clear()


def test_a_proven_search_reports_every_turn_and_ends_without_a_final_checkpoint():
    search, saver, heard = FakeSearch(stop_after=7), FakeSaver(every=3), []
    outcome = drive(search, saver, heard.append)
    assert outcome.proven and outcome.iterations == 7
    assert [p.iterations for p in heard] == [1, 2, 3, 4, 5, 6, 7]  # six turns, then the ending's
    assert saver.saved == [{"turn": 3}, {"turn": 6}]  # when due only: a proven search needs no more


def test_a_search_stopped_at_a_limit_writes_its_final_checkpoint():
    search, saver = FakeSearch(stop_after=4, reason=StopReason.TIME_LIMIT), FakeSaver(every=100)
    outcome = drive(search, saver)
    assert not outcome.proven and outcome.stop_reason == StopReason.TIME_LIMIT
    assert saver.saved == [{"turn": 4}] and search.cuts == 1


def test_an_interrupt_halts_the_search_which_then_writes_its_checkpoint():
    search, saver = FakeSearch(stop_after=100), FakeSaver(every=100)

    def interrupt_at_the_third(report: Progress) -> None:
        if report.iterations == 3:
            INTERRUPT.set()

    outcome = drive(search, saver, interrupt_at_the_third)
    assert search.halted == [StopReason.INTERRUPTED] and search.turns == 4
    assert outcome.stop_reason == StopReason.INTERRUPTED and not outcome.proven
    assert saver.saved == [{"turn": 4}]


def test_no_checkpoint_is_written_in_a_turn_that_was_interrupted():
    search, saver = FakeSearch(stop_after=100), FakeSaver(every=1)
    INTERRUPT.set()
    drive(search, saver)
    assert search.halted == [StopReason.INTERRUPTED]
    assert saver.saved == [{"turn": 2}]  # the final one only: the due one gave way to the halt


def test_a_search_that_must_go_on_after_it_stopped_is_driven_on():
    search = FakeSearch(stop_after=2, lost=2)
    outcome = drive(search, None)
    assert outcome.proven and search.turns == 4  # each loss after the proof costs a turn more
