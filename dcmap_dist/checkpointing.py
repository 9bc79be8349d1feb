"""Checkpoints of a whole ``solve``: when they are written, what identifies the search
they belong to, and how a solve resumes from one.

A solve searches the network's components one after another. A checkpoint holds
the network itself, the search's identity (cost model and parameters, scheme,
link key, bound switch, alpha, seed), the outcomes of the components already
finished (their histories in the ``histories`` table), and the state of the
component being searched (see :mod:`dcmap_dist.checkpoint` for the files).
"""

from __future__ import annotations

import importlib
import itertools
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .checkpoint import (CheckpointError, history_rows, read_checkpoint, state_rows, table_histories, table_state,
                         write_checkpoint)
from .cost import CostModel, model_params
from .network import Network, network_from_dict
from .search import SearchOutcome
from .state import Resumption, SearchState, plain_trace, resumption, trace_from_plain

CHECKPOINT_EVERY = 600.0  # default seconds between checkpoints
# what must agree between a checkpoint and the search resuming it
IDENTITY = ("network_hash", "cost_model", "scheme", "link_key", "use_bound")


def cost_spec(model: CostModel) -> str | None:
    """How to rebuild ``model`` on resume: ``dcmap``, ``module:name`` of an importable
    user cost, or None (the caller must pass the model again)."""
    if getattr(model, "name", None) == "dcmap" and type(model).__module__ == "dcmap_dist.cost":
        return "dcmap"
    name = getattr(model, "name", "")
    if isinstance(name, str) and ":" in name:
        return name
    target = model
    while hasattr(target, "model") or hasattr(target, "function"):
        target = getattr(target, "model", None) or getattr(target, "function")
    owner = target if callable(target) and hasattr(target, "__qualname__") else type(target)
    module, qualname = getattr(owner, "__module__", None), getattr(owner, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return f"{module}:{qualname}"


class Checkpointer:
    """Writes a solve's checkpoints into ``directory``: every ``every`` seconds at the
    search's next pause, when a search stops unfinished, and at the end."""

    def __init__(self, directory: Path, every: float, network: Network, model: CostModel,
                 settings: dict[str, Any]) -> None:
        self.directory = directory
        self.every = every
        self.identity = {
            "network_hash": network.content_hash(), "network": network.to_dict(),
            "cost_model": {"name": getattr(model, "name", "user"), **model_params(model)},
            "cost_spec": cost_spec(model), **settings,
        }
        self.finished: list[dict[str, Any]] = []
        self.finished_histories: list[dict[int, list]] = []
        self.component = 0
        self.solve_trace: list[dict[str, Any]] = []  # the solve's anytime trace (shared with it)
        self.solve_bounds: list[dict[str, float]] = []  # and its lower bound samples
        self.start = time.perf_counter()  # when the solve started (moved back on resumption)
        self.next_due = time.monotonic() + every
        self.written = 0
        self.seconds = 0.0

    def due(self) -> bool:
        return time.monotonic() >= self.next_due

    def save(self, parts: Iterable[SearchState], counters: dict[str, Any] | None) -> None:
        """Write a generation: the finished components, and ``parts`` of the state of the
        component being searched (``counters`` None: no component in progress)."""
        start = time.monotonic()
        metadata = dict(self.identity, component=self.component, counters=counters, finished=self.finished,
                        solve_trace=self.solve_trace, solve_bounds=self.solve_bounds,
                        solve_elapsed=time.perf_counter() - self.start)
        rows = itertools.chain(
            (row for k, histories in enumerate(self.finished_histories) for row in history_rows(k, histories)),
            (row for part in parts for row in state_rows(self.component, part)),
        )
        write_checkpoint(self.directory, metadata, rows)
        self.written += 1
        self.seconds += time.monotonic() - start
        self.next_due = time.monotonic() + self.every

    def adopt(self, resumed: Resume) -> None:
        """Go on from a resumed checkpoint: its finished components stay in every later one."""
        self.finished = list(resumed.metadata["finished"])
        self.finished_histories = [table_histories(resumed.tables, k) for k in range(len(self.finished))]
        self.component = resumed.metadata["component"]

    def finish_component(self, outcome: SearchOutcome) -> None:
        """Record a component's outcome; the next checkpoint is of the one after it."""
        self.finished.append({
            "best_cost": outcome.best_cost, "proven": outcome.proven, "stop_reason": outcome.stop_reason,
            "iterations": outcome.iterations, "lower_bound": outcome.lower_bound,
            "link_records": outcome.link_records, "peak_memory_mb": outcome.peak_memory_mb,
            "trace": plain_trace(outcome.trace),
            "trails": [[list(trail), cost, iteration] for trail, cost, iteration in outcome.trails],
        })
        self.finished_histories.append(outcome.histories)
        self.component += 1


class Resume:
    """A checkpoint read for resuming: the network, the identity, the finished
    components' outcomes and the state of the component that was being searched."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.metadata, self.tables = read_checkpoint(directory)
        self.network = network_from_dict(self.metadata["network"], self.metadata["network"]["name"])

    def check(self, network: Network, model: CostModel, settings: dict[str, Any]) -> None:
        """Refuse, naming what differs, to resume a checkpoint of another search."""
        mine = {"network_hash": network.content_hash(),
                "cost_model": {"name": getattr(model, "name", "user"), **model_params(model)}, **settings}
        for name in IDENTITY:
            if self.metadata.get(name) != mine.get(name):
                raise CheckpointError(
                    f"checkpoint {self.directory} is of another search: its {name} is "
                    f"{self.metadata.get(name)!r}, this search's is {mine.get(name)!r}")

    def finished(self) -> list[SearchOutcome]:
        """The outcomes of the components finished before the checkpoint."""
        outcomes = []
        for k, done in enumerate(self.metadata["finished"]):
            trails = [(tuple(trail), cost, iteration) for trail, cost, iteration in done["trails"]]
            outcomes.append(SearchOutcome(
                done["best_cost"], trails, done["proven"], done["stop_reason"], done["iterations"],
                trace_from_plain(done["trace"]), done["peak_memory_mb"], done["link_records"],
                done["lower_bound"], table_histories(self.tables, k)))
        return outcomes

    def in_progress(self) -> Resumption | None:
        """Where the component being searched stood, if one was."""
        counters = self.metadata["counters"]
        if counters is None:
            return None
        return resumption(table_state(self.tables, self.metadata["component"]), counters)
