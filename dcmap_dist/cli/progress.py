"""The live progress of a search on the terminal (standard error)."""

from __future__ import annotations

import math
import shutil
import sys
from typing import Any


class Progress:
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

    def update(self, stats: dict[str, Any]) -> None:
        self.calls += 1
        if not self.enabled or (not self.tty and self.calls % 10):
            return
        best, lower = stats["best"], stats.get("lower_bound", math.nan)
        gap = (best - lower) / best if best > 0 and math.isfinite(best) and math.isfinite(lower) else math.nan
        workers = f"  {stats['workers']} workers" if "workers" in stats else ""
        line = (f"iterations {stats['iterations']:>10}  best {best:.1f}  bound {lower:.1f}  gap {100 * gap:.2f}%  "
                f"open {stats['open']:>8}{workers}  {stats['rate']:.0f} it/s  {stats['elapsed']:.0f} s  "
                f"{stats['memory_mb']:.0f} MiB")
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
