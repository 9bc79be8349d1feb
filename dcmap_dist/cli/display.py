"""The live progress of a search on the terminal (standard error)."""

from __future__ import annotations

import math
import shutil
import sys
from typing import Any

from ..progress import Progress

__all__ = ["ProgressDisplay"]


class ProgressDisplay:
    """Live progress on stderr: a rewritten line on a terminal, a line every 10 s otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.calls = 0
        self.shown = False

    def improved(self, cost: float, iteration: int, seconds: float, _clusters: Any = None) -> None:
        if self.enabled:
            self._clear()
            print(f"improved: cost {cost:.1f} at iteration {iteration} ({seconds:.1f} s)", file=sys.stderr)

    def update(self, progress: Progress) -> None:
        self.calls += 1
        if not self.enabled or (not self.tty and self.calls % 10):
            return
        lower = math.nan if progress.lower_bound is None else progress.lower_bound
        workers = f"  {progress.workers} workers" if progress.workers > 1 else ""
        if progress.listed is not None:
            line = (f"listing the optimal mappings (cost {progress.best_cost:.1f}): {progress.listed} listed  "
                    f"{progress.elapsed_seconds:.0f} s  {progress.peak_memory_mb:.0f} MiB")
        else:
            line = (f"iterations {progress.iterations:>10}  best {progress.best_cost:.1f}  bound {lower:.1f}  "
                    f"gap {100 * progress.gap:.2f}%  open {progress.open_branches:>8}{workers}  "
                    f"{progress.rate:.0f} it/s  {progress.elapsed_seconds:.0f} s  {progress.peak_memory_mb:.0f} MiB")
        if self.tty:  # one terminal line, rewritten in place: cut to the width, rest cleared
            width = shutil.get_terminal_size().columns
            print("\r\033[K" + line[: width - 1], end="", file=sys.stderr, flush=True)
            self.shown = True
        else:
            print(line, file=sys.stderr, flush=True)

    def _clear(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr)
            self.shown = False

    def close(self) -> None:
        self._clear()
