"""The driver loop, written once for the serial and the distributed search: turn after
turn the search runs for a while (stopping itself at a limit, in time for its final
checkpoint: the limits are its stopwatch's, :class:`limits.Stopwatch`), progress
is reported, a checkpoint is written when due, and the search is halted when
interrupted or when a checkpoint cannot be written (a full disk: stop reason
``checkpoint_failed``); then its outcome, with a final checkpoint if it is not proven.

A backend is the search being driven: :class:`run.serial.SerialSearch` (one engine,
:mod:`dcmap_dist.search.engine`, in this process) or :class:`run.ray.driver.RaySearch` (a
coordinator actor and its workers). Improvements are announced by the backend as it
hears of them. A :class:`Saver` is where the checkpoints go
(:class:`~dcmap_dist.checkpoint.session.Checkpointer`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..limits import INTERRUPT, StopReason
from ..progress import Progress
from ..search.outcome import SearchOutcome
from ..search.state import SearchState

__all__ = ["Backend", "Ending", "Saver", "Turn", "drive", "drive_serially"]


@dataclass
class Turn:
    """What a turn of the search brought: whether it has stopped (proven, or a limit
    reached), and its progress if a report is due."""

    stopped: bool
    progress: Progress | None = None


@dataclass
class Ending:
    """A stopped search's outcome, and its last progress."""

    outcome: SearchOutcome
    progress: Progress


class Saver(Protocol):
    """Where a search sends its checkpoints (see :class:`~dcmap_dist.checkpoint.session.Checkpointer`)."""

    def due(self) -> bool:
        """True when the checkpoint interval has passed."""

    def reserve(self, size: int) -> float:
        """Seconds to keep for writing a checkpoint of a state of ``size``
        (:func:`~dcmap_dist.search.state.write_size`)."""

    def save(self, parts: Iterable[SearchState], counters: dict[str, Any] | None) -> bool:
        """Write a checkpoint of the component being searched (``counters`` None: none
        is); False if it could not be written (the search then stops)."""


class Backend(Protocol):
    """A search the driver loop runs (see the module docstring)."""

    def advance(self, saver: Saver | None) -> Turn:
        """Run the search for a turn; with ``saver``, stop it in time for its final checkpoint."""

    def halt(self, reason: StopReason) -> None:
        """Stop the search before its next turn."""

    def cut(self) -> tuple[Iterable[SearchState], dict[str, Any]]:
        """A consistent cut of the search for a checkpoint: its parts and its counters."""

    def finish(self) -> Ending | None:
        """The stopped search's ending; None if it must go on (a lost worker was
        recovered after the proof)."""


def drive(search: Backend, saver: Saver | None = None,
          on_progress: Callable[[Progress], None] | None = None) -> SearchOutcome:
    """Run ``search`` to its end (see the module docstring), checkpointing to ``saver``."""
    while True:
        turn = search.advance(saver)
        if turn.stopped:
            ending = search.finish()
            if ending is not None:
                break
            continue
        if on_progress and turn.progress is not None:
            on_progress(turn.progress)
        if INTERRUPT.is_set():
            search.halt(StopReason.INTERRUPTED)
        elif saver is not None and saver.due() and not saver.save(*search.cut()):
            search.halt(StopReason.CHECKPOINT_FAILED)  # a full disk: stop with the best so far
    if saver is not None and not ending.outcome.proven and not saver.save(*search.cut()):
        ending.outcome.stop_reason = StopReason.CHECKPOINT_FAILED  # the state it stopped in is not saved
    if on_progress:
        on_progress(ending.progress)
    return ending.outcome


def drive_serially(make: Callable[[], Backend], saver: Saver | None = None,
                   on_progress: Callable[[Progress], None] | None = None) -> SearchOutcome:
    """Run the serial search ``make()`` gives (:class:`run.serial.SerialSearch` or
    :class:`run.contours.ContourSearch`) to its end with :func:`drive`, and give the garbage
    collector back what its engine's steps froze (``Explorer.step``), whatever happens."""
    try:
        return drive(make(), saver, on_progress)
    finally:
        gc.unfreeze()
