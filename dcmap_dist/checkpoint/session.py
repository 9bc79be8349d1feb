"""Checkpoints of a whole ``solve``: the folder they live in, when they are written,
what identifies the search they belong to, and how a solve resumes from one.

A solve searches the network's components one after another. A checkpoint holds
the network itself, the search's identity (its settings that define it, :data:`~dcmap_dist.settings.IDENTITY`:
cost model and parameters, scheme, link key, bound switch, alpha, seed), the outcomes of the components already
finished (their histories in the ``histories`` table), and the state of the
component being searched (see :mod:`dcmap_dist.checkpoint.arrow` for the files).

The folder is checked before the search starts and locked while a run uses it; a
folder that holds another search's checkpoint is refused unless the caller asks to
start afresh. A resumed checkpoint must be intact (:mod:`dcmap_dist.checkpoint.arrow`) and
must agree with itself: its network with its hash, and every cost it records with the
cost of the mapping it records it for (:meth:`Resume.verify`).
"""

from __future__ import annotations

import fcntl
import importlib
import itertools
import math
import os
import shutil
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..cost.base import CostModel
from ..cost.dcmap import DcmapCost
from ..cost.user import model_description
from ..io.outputs import OutputError, check_not_package, unwritable
from ..limits import StopReason
from ..io.plain import network_from_dict
from ..model.network import Network, NetworkError
from ..search.audit import Audit, AuditError
from ..search.histories import Histories, MissingRecord, trail_path
from ..search.messages import MessageCodes, node_set_messages
from ..search.outcome import SearchOutcome
from ..search.problem import Problem, joins_to_clusters
from ..search.state import Resumption, SearchState, plain_trace, resumption, trace_from_plain, write_size
from ..search.tolerance import within
from ..settings import SearchSettings
from .arrow import POINTER, CheckpointError, CheckpointWarning, generations
from .read import read_checkpoint
from .write import Batches, Messages, history_batches, remove_partial, state_batches, write_checkpoint

__all__ = ["CHECKPOINT_EVERY", "CheckpointFolder", "Checkpointer", "Resume", "check_checkpoint_path", "cost_spec"]

CHECKPOINT_EVERY = 600.0  # default seconds between checkpoints
# the settings a checkpoint records by name (the cost model by its description, cost_model)
SETTINGS = ("scheme", "link_key", "use_bound", "alpha", "seed")
LOCK = "LOCK"
# a first guess of a write's time per unit of state.write_size, until a write is measured
# (results/checkpoint-reserve.md: water's 109,471 units written in 0.83 s, 7.6e-6 a unit)
SECONDS_PER_UNIT = 1e-5
# the first guess by the engine that searches, per 64-bit word of a node mask: a unit's
# rows hold masks (results/checkpoint-reserve.md: water, one word, 1.64e-5 s a unit on
# the native engine, 1.05e-5 on the Python one; hepar2, two words, 3.14e-5 and 2.56e-5)
SECONDS_PER_UNIT_WORD = {"native": 1.7e-5, "python": 1.3e-5}
LEAST_SECONDS_PER_UNIT = SECONDS_PER_UNIT / 100  # a measured rate is taken down to this, no lower


def cost_spec(model: CostModel) -> str | None:
    """How to rebuild ``model`` on resume: ``dcmap``, ``module:name`` of an importable
    user cost, or None (the caller must pass the model again)."""
    if type(model) is DcmapCost:
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


def check_checkpoint_path(path: Path, output: Path | None = None) -> None:
    """Raise CheckpointError now if ``path`` cannot be a checkpoint folder: a file, a
    path under a file, a place with no permission to write, inside the installed
    package, or the result file ``output`` (or its folder). Creates nothing."""
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_dir():
        raise CheckpointError(f"--checkpoint {path}: it is a file, not a folder")
    problem = unwritable(target)
    if problem:
        raise CheckpointError(f"--checkpoint {path}: {problem}")
    try:
        check_not_package(target, f"--checkpoint {path}")
    except OutputError as exc:
        raise CheckpointError(str(exc)) from None
    if output is not None and str(output) != "-":
        result = Path(os.path.realpath(output))
        if result == target or target in result.parents:
            raise CheckpointError(f"--checkpoint {path} and --output {output} are the same place: the result "
                                  "file cannot be inside the checkpoint folder")


class CheckpointFolder:
    """A checkpoint folder opened for a run: checked, created if missing, and locked
    (another run on it is refused while this one lasts). A folder that already holds a
    checkpoint is refused unless it is the one being resumed (``continuing``) or the
    caller asks to start afresh (``fresh``: its generations are removed)."""

    def __init__(self, path: Path, continuing: bool = False, fresh: bool = False) -> None:
        if continuing and not path.is_dir():
            raise CheckpointError(f"no checkpoint at {path}: not a folder")
        check_checkpoint_path(path)
        self.path = path
        self.created = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
            self._lock = open(path / LOCK, "a+")
        except OSError as exc:
            raise CheckpointError(f"--checkpoint {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.seek(0)
            holder = self._lock.read().strip() or "unknown"
            self._lock.close()
            raise CheckpointError(f"checkpoint folder {path} is in use by another run (process {holder}); "
                                  "wait for it to end, or choose another folder") from None
        remove_partial(path)  # a write cut short (a kill, a full disk): its space back first
        try:
            self._lock.seek(0)
            self._lock.truncate()
            self._lock.write(f"{os.getpid()}\n")
            self._lock.flush()
        except OSError as exc:
            self.close()
            raise CheckpointError(f"--checkpoint {path}: {exc.strerror or exc}") from None
        held = generations(path)
        if held and not continuing:
            if not fresh:
                self.close()
                raise CheckpointError(
                    f"--checkpoint {path} already holds a checkpoint ({held[0].name}); resume it with "
                    f"'dcmap resume {path}' (solve(..., resume=...)), or give --fresh-checkpoint "
                    "(solve(..., fresh_checkpoint=True)) to discard it")
            for old in held:
                shutil.rmtree(old)
            for name in (POINTER, f".{POINTER}.tmp"):
                (path / name).unlink(missing_ok=True)

    def close(self) -> None:
        """Release the lock; remove the folder if this run made it and wrote nothing."""
        if self._lock.closed:
            return
        (self.path / LOCK).unlink(missing_ok=True)
        self._lock.close()
        if self.created and not any(self.path.iterdir()):
            self.path.rmdir()


class Checkpointer:
    """Writes a solve's checkpoints into ``folder``: every ``every`` seconds at the
    search's next pause, when a search stops unfinished, and at the end."""

    def __init__(self, folder: CheckpointFolder, every: float, network: Network, model: CostModel,
                 settings: SearchSettings) -> None:
        self.folder = folder
        self.directory = folder.path
        self.every = every
        self.identity = {
            "network_hash": network.content_hash(), "network": network.to_dict(),
            "cost_model": model_description(model),
            "cost_spec": cost_spec(model), **{name: getattr(settings, name) for name in SETTINGS},
        }
        self.link_key = settings.link_key
        self.messages = MessageCodes(network, node_set_messages(model))  # what the search holds: codes
        self.finished: list[dict[str, Any]] = []
        self.finished_histories: list[dict[int, bytes]] = []
        self.component = 0
        self.solve_trace: list[dict[str, Any]] = []  # the solve's anytime trace (shared with it)
        self.solve_bounds: list[dict[str, float]] = []  # and its lower bound samples
        self.start = time.perf_counter()  # when the solve started (moved back on resumption)
        self.next_due = time.monotonic() + every
        self.written = 0
        self.seconds = 0.0
        self.seconds_per_unit = SECONDS_PER_UNIT
        self.measured = False  # seconds_per_unit measured by a write (this run's, or the resumed one's)
        self.base: Path | None = None  # the newest intact generation: resumed from, or last written
        self.failure: str | None = None  # why a write failed (no more are tried)

    def due(self) -> bool:
        return time.monotonic() >= self.next_due

    def expect(self, engine: str, nodes: int) -> None:
        """The first guess of a write's rate, until one is measured: for a search on
        ``engine`` (``native`` or ``python``) of components of up to ``nodes`` nodes."""
        if not self.measured:
            self.seconds_per_unit = SECONDS_PER_UNIT_WORD[engine] * max(1, math.ceil(nodes / 64))

    def reserve(self, size: int) -> float:
        """Seconds to keep for writing a checkpoint of a state of ``size``
        (:func:`state.write_size`; the final one, inside the time limit): the last
        write's rate (this run's, or else the resumed checkpoint's, or else a first
        guess: :meth:`expect`), with a margin for a loaded machine (a write of water's
        state took 1.5 to 2.5 s with another build running)."""
        return 1.5 * self.seconds_per_unit * size + 0.4  # and what follows the write (the final listing)

    def save(self, parts: Iterable[SearchState], counters: dict[str, Any] | None) -> bool:
        """Write a generation: the finished components, and ``parts`` of the state of the
        component being searched (``counters`` None: no component in progress). True if
        written; False if the machine refused it (an OSError: a full disk, a read-only or
        vanished folder), said in a :class:`CheckpointWarning` naming the fault, and
        recorded in :attr:`failure`: the partial generation is removed, the older ones
        kept, and no later write is tried."""
        if self.failure is not None:
            return False
        start = time.monotonic()
        metadata = dict(self.identity, component=self.component, counters=counters, finished=self.finished,
                        solve_trace=self.solve_trace, solve_bounds=self.solve_bounds,
                        solve_elapsed=time.perf_counter() - self.start)
        if self.measured:  # a resume's final checkpoint starts from it (see reserve)
            metadata["write_seconds_per_unit"] = self.seconds_per_unit
        messages = Messages(self.messages.value)
        size = 0  # of the parts, streamed one at a time

        def part_batches(part: SearchState) -> Batches:
            nonlocal size
            size += write_size(len(part.branches) + len(part.arrivals), len(part.entries))
            return state_batches(self.component, part, self.link_key, messages)

        batches = itertools.chain(
            (batch for k, histories in enumerate(self.finished_histories) for batch in history_batches(k, histories)),
            (batch for part in parts for batch in part_batches(part)),
        )
        try:
            self.base = write_checkpoint(self.directory, metadata, batches, messages, keep=self.base)
        except OSError as exc:
            self._failed(exc)
            return False
        took = time.monotonic() - start
        self.seconds_per_unit = max(LEAST_SECONDS_PER_UNIT, took / max(1, size))
        self.measured = True
        self.written += 1
        self.seconds += took
        self.next_due = time.monotonic() + self.every
        return True

    def _failed(self, exc: OSError) -> None:
        """Record and tell of a write the machine refused."""
        fault = exc.strerror or str(exc)
        kept = generations(self.directory) if self.directory.is_dir() else []
        if kept:
            last = f"its last complete generation, {kept[0].name}, is kept"
            then = f"then go on with: dcmap resume {self.directory}"
        else:
            last, then = "it holds no complete generation", "then run the search again (there is nothing to resume)"
        self.failure = f"{fault} ({self.directory})"
        warnings.warn(f"checkpoint not written to {self.directory}: {fault}; the partial generation was removed and "
                      f"{last}; the search stops here with its best mapping so far; free space (or give another "
                      f"folder), {then}", CheckpointWarning, stacklevel=2)

    def adopt(self, resumed: Resume) -> None:
        """Go on from a resumed checkpoint: its finished components stay in every later one."""
        self.finished = list(resumed.metadata["finished"])
        self.finished_histories = [resumed.generation.state(k).histories for k in range(len(self.finished))]
        self.component = resumed.metadata["component"]
        self.base = resumed.generation.folder
        rate = resumed.metadata.get("write_seconds_per_unit")
        if isinstance(rate, float) and math.isfinite(rate) and rate > 0:  # the last run's writes, measured
            self.seconds_per_unit, self.measured = max(LEAST_SECONDS_PER_UNIT, rate), True

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
    components' outcomes and the state of the component that was being searched.
    ``trust`` allows reading messages stored as pickles (a user cost model's)."""

    def __init__(self, directory: Path, trust: bool = False) -> None:
        self.directory = directory
        self.generation = read_checkpoint(directory, trust)
        self.metadata = self.generation.metadata
        where = self.generation.folder / "metadata.json"
        try:
            self.network = network_from_dict(self.metadata["network"], self.metadata["network"].get("name", "network"))
        except (NetworkError, AttributeError, TypeError) as exc:
            raise CheckpointError(f"{where}: network: {exc}") from None
        if self.network.content_hash() != self.metadata["network_hash"]:
            raise CheckpointError(f"{where}: network_hash is not the hash of the network it holds (altered)")

    def settings(self, given: Mapping[str, Any], run: Mapping[str, Any]) -> SearchSettings:
        """The settings of the search this checkpoint holds, with the run options ``run``
        (workers, link table, snapshots: free to change) and those of its identity given
        again in ``given`` (:data:`~dcmap_dist.settings.IDENTITY`), which must agree
        with it: one that differs is refused, naming it (a cost model given as an object
        is compared by its description, in :meth:`check`)."""
        meta = self.metadata
        saved = {name: meta[name] for name in SETTINGS}
        for name, value in given.items():
            if name in saved and value != saved[name]:
                self._differs(name, saved[name], value)
        parameters = meta["cost_model"]  # the built-in model's order and addition are in its description
        model = {"cost": meta["cost_spec"], **{name: parameters[name] for name in ("order", "addition")
                                                if name in parameters}}
        if model["cost"] is None and "cost" not in given:
            raise CheckpointError(f"checkpoint {self.directory} was made with a cost model given as a Python object: "
                                  "give the same model again, from Python: solve(None, cost=MODEL, resume=DIR)")
        return SearchSettings(**{**model, **saved, **given}, **run)

    def check(self, network: Network, model: CostModel, settings: SearchSettings) -> None:
        """Refuse, naming what differs, to resume a checkpoint of another search."""
        meta = self.metadata
        mine = {"network_hash": network.content_hash(), "cost_model": model_description(model),
                **{name: getattr(settings, name) for name in SETTINGS}}
        for name, value in mine.items():
            if meta.get(name) != value:
                self._differs(name, meta.get(name), value)

    def _differs(self, name: str, saved: Any, given: Any) -> None:
        raise CheckpointError(f"checkpoint {self.directory} is of another search: its {name} is {saved!r}, this "
                              f"search's is {given!r}")

    def verify(self, problems: list[Problem]) -> None:
        """Cross-check the checkpoint against the network's components and the cost
        model: the component index and the masks of its rows in range, and every cost
        it records for a mapping (a finished component's best, the best of the one in
        progress) the cost of that mapping, re-priced from scratch. CheckpointError
        naming the field otherwise: a checkpoint that fails this is altered or made by
        a flawed search, and resuming it could prove a wrong answer."""
        meta, where = self.metadata, self.generation.folder / "metadata.json"
        if meta["component"] > len(problems) or (meta["counters"] is not None and meta["component"] == len(problems)):
            raise CheckpointError(f"{where}: component {meta['component']} does not exist (the network has "
                                  f"{len(problems)} weakly connected components)")
        for k, done in enumerate(meta["finished"]):
            histories = self.generation.state(k).histories
            self._priced(problems[k], done["trails"][0][0], histories, done["best_cost"], f"finished[{k}].best_cost")
            if done["lower_bound"] > done["best_cost"] * (1 + 1e-9) or (
                    done["proven"] and not math.isclose(done["lower_bound"], done["best_cost"], rel_tol=1e-9)):
                raise CheckpointError(f"{where}: finished[{k}].lower_bound {done['lower_bound']} does not fit its "
                                      f"best cost {done['best_cost']}")
        counters = meta["counters"]
        if counters is None:
            return
        problem = problems[meta["component"]]
        state = self.generation.state(meta["component"])
        self._in_range(problem, state)
        self._priced(problem, counters["first_trail"], {}, counters["first_cost"], "counters.first_cost")
        best, unchecked = counters["first_cost"], math.inf
        for iteration, _, cost, *trail in counters["trace"]:
            if not (trail and trail[0] is not None):
                unchecked = min(unchecked, cost)  # saved without its mapping
            elif self._priced(problem, trail[0], state.histories, cost, f"counters.trace (iteration {iteration})"):
                best = min(best, cost)
            else:
                unchecked = min(unchecked, cost)
        if not within(best, counters["g_min"]):
            if not math.isclose(unchecked, counters["g_min"], rel_tol=1e-9):
                raise CheckpointError(f"{where}: counters.g_min {counters['g_min']} is not the cost of any mapping "
                                      f"the checkpoint holds (the best is {best}): altered or damaged")
            # the best improvement's mapping was lost with a worker: prune with what can be checked
            warnings.warn(f"the mapping of the best cost so far ({counters['g_min']}) cannot be rebuilt from "
                          f"checkpoint {self.directory}; the search goes on from the best that can ({best})",
                          CheckpointWarning, stacklevel=2)
            counters["g_min"] = best
        contour = counters.get("contour")
        if contour is not None and (contour["proven"] > counters["g_min"] * (1 + 1e-9)
                                    or contour["before"] > counters["iterations"]):
            raise CheckpointError(f"{where}: counters.contour {contour} does not fit the best cost "
                                  f"{counters['g_min']} and {counters['iterations']} iterations: altered or damaged")

    def _priced(self, problem: Problem, trail: list, histories: Mapping[int, Histories], cost: float, field: str) -> bool:
        """Whether the mapping of ``trail`` costs ``cost``: True, or False when a record
        it needs is not in the checkpoint (lost with a worker); CheckpointError if it
        is infeasible or costs something else."""
        where = self.generation.folder / "metadata.json"
        try:
            joins = trail_path(tuple(trail), lambda records: {r: histories[r] for r in records if r in histories})
        except MissingRecord:
            return False
        try:
            clusters = joins_to_clusters(problem.topo, joins)
            Audit(problem.network, problem.graph, problem.model, problem.scheme, problem.topo).check(clusters, cost)
        except (AuditError, IndexError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{where}: {field} {cost}: its mapping does not check ({exc})") from None
        return True

    def _in_range(self, problem: Problem, state: SearchState) -> None:
        topo, where = problem.topo, self.generation.folder
        every = topo.all_nodes
        for branch in [*state.branches, *self.generation.arrivals.get(self.metadata["component"], [])]:
            masks = [*branch.comps, *(m for m, _ in branch.frontier), *branch.joins]
            if (not 0 <= branch.layer <= topo.l_max or any(m <= 0 or m & ~every for m in masks)
                    or branch.assigned != -1 and branch.assigned & ~topo.layer_mask[branch.layer]
                    or not (math.isfinite(branch.cost) and branch.cost >= 0)):
                raise CheckpointError(f"{where / 'branches.arrow'}: a branch outside the network's component "
                                      f"{self.metadata['component']} (layer {branch.layer}): altered or damaged")

    def finished(self) -> list[SearchOutcome]:
        """The outcomes of the components finished before the checkpoint."""
        outcomes = []
        for k, done in enumerate(self.metadata["finished"]):
            trails = [(tuple(trail), cost, iteration) for trail, cost, iteration in done["trails"]]
            outcomes.append(SearchOutcome(
                done["best_cost"], trails, done["proven"], StopReason(done["stop_reason"]), done["iterations"],
                trace_from_plain(done["trace"]), done["peak_memory_mb"], done["link_records"],
                done["lower_bound"], self.generation.state(k).histories))
        return outcomes

    def in_progress(self, problem: Problem) -> Resumption | None:
        """Where the component being searched stood, if one was; the completions in
        flight get their link keys from ``problem``."""
        counters = self.metadata["counters"]
        if counters is None:
            return None
        component = self.metadata["component"]
        state = self.generation.state(component)
        state.arrivals = [(problem.link_key(branch), branch) for branch in self.generation.arrivals.get(component, [])]
        return resumption(state, counters)
