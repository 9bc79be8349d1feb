"""What :func:`dcmap_dist.solve.solve` returns (SPEC section 7): the optimal mappings,
the proof's figures, and how they were computed, as a dataclass that writes itself
as JSON."""

from __future__ import annotations

import copy
import json
import math
import platform
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field, fields
from importlib.metadata import version
from typing import Any

from ._version import __version__
from .io.outputs import json_cost
from .limits import StopReason

__all__ = ["Solution", "SolveResult"]

_SOLUTIONS = "\0solutions\0"  # where json_pieces writes the solutions (no node name holds a NUL unescaped)


@dataclass
class Solution:
    """One optimal (or best found) mapping: clusters of sorted nodes, each node as the
    caller gave it (``Network.label``: the integer 7 of a networkx graph, not ``"7"``);
    its cost; the first iteration at which the search knew it."""

    clusters: list[list[Hashable]]
    cost: float
    iteration: int


@dataclass
class SolveResult:
    """The result of :func:`solve` (SPEC section 7); :meth:`to_json` writes it."""

    network: str
    network_hash: str
    cost_model: dict[str, Any]
    scheme: str
    method: str
    optimal_cost: float
    proven_optimal: bool
    lower_bound: float
    gap: float
    solution_count: int
    solutions_complete: bool
    solutions: list[Solution]
    iterations: int
    first_optimal_iteration: int | None
    first_optimal_seconds: float | None
    elapsed_seconds: float
    trace: list[dict[str, Any]]  # per improvement: iteration, seconds, cost, clusters (the mapping)
    stop_reason: StopReason
    alpha: float
    seed: int
    link_key: str
    use_bound: bool
    workers: int
    link_table: str | None
    peak_memory_mb: float
    components: list[dict[str, Any]] = field(default_factory=list)
    started_at: str = ""  # reproducibility: when (UTC), with what, and how (the CLI's command)
    environment: dict[str, str] = field(default_factory=dict)
    command: list[str] | None = None
    source: str | None = None  # the input as given (a path or a bundled example's name), if a file
    slices: int | None = None  # the slices a template was unrolled to
    observed: list[str] = field(default_factory=list)  # the observed nodes, sorted
    bounds: list[dict[str, float]] = field(default_factory=list)  # lower bound samples: iteration, seconds

    def to_dict(self, with_solutions: bool = True) -> dict[str, Any]:
        """Plain JSON data (``with_solutions`` false: an empty list of solutions). Costs have 12 significant digits (:func:`outputs.json_cost`),
        and a cost that was never found (breadth-first search stopped before completing
        a mapping) or is past the float range is None; ``gap`` has 12 decimals. Nodes are
        node names (strings), clusters sorted by them."""
        # every field copied but the solutions, which are written anew below (a deep copy
        # of 10,000 listed mappings of 300 nodes took 2.7 s)
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "solutions"}
        for name in ("optimal_cost", "lower_bound"):
            data[name] = json_cost(data[name])
        data["gap"] = round(self.gap, 12) if math.isfinite(self.gap) else None
        data["solutions"] = [_solution_data(solution) for solution in self.solutions] if with_solutions else []
        data = {f.name: data[f.name] for f in fields(self)}  # in the fields' order
        for point in data["trace"]:
            point["cost"] = json_cost(point["cost"])
            if "clusters" in point:
                point["clusters"] = sorted(sorted(map(str, c)) for c in point["clusters"])
        for point in data["bounds"]:
            point["lower_bound"] = json_cost(point["lower_bound"])
        for part in data["components"]:
            part["names"] = sorted(map(str, part["names"]))
            for name in ("optimal_cost", "lower_bound"):
                part[name] = json_cost(part[name])
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return "".join(self.json_pieces(indent))

    def json_pieces(self, indent: int | None = 1) -> Iterator[str]:
        """The JSON of :meth:`to_json` in pieces, to be written as they come (joined, a
        result of 10,000 listed mappings took 140 MiB at once). With an ``indent``, each
        solution is one line, written by json's C encoder (three times faster than the
        indented encoder, which wrote 10,000 mappings of 300 nodes in 1 s)."""
        if indent is None or not self.solutions:
            yield from json.JSONEncoder(indent=indent, allow_nan=False).iterencode(self.to_dict())
            return
        data = self.to_dict(with_solutions=False)
        data["solutions"] = _SOLUTIONS
        placeholder = json.dumps(_SOLUTIONS)
        for piece in json.JSONEncoder(indent=indent, allow_nan=False).iterencode(data):
            if piece != placeholder:
                yield piece
                continue
            inner = "\n" + " " * (2 * indent if isinstance(indent, int) else 2)
            for k, solution in enumerate(self.solutions):  # one at a time: never all of them as JSON data
                yield ("[" if k == 0 else ",") + inner + json.dumps(_solution_data(solution), allow_nan=False)
            yield "\n" + " " * (indent if isinstance(indent, int) else 1) + "]"



def _solution_data(solution: Solution) -> dict[str, Any]:
    """A solution as JSON data: its clusters as sorted lists of node names, sorted."""
    return {"clusters": sorted(sorted(map(str, c)) for c in solution.clusters), "cost": json_cost(solution.cost),
            "iteration": solution.iteration}


def environment() -> dict[str, str]:
    """The versions a result was computed with."""
    return {"dcmap_dist": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "numpy": version("numpy"), "networkx": version("networkx")}
