"""What :func:`dcmap_dist.solve.solve` returns (SPEC section 7): the optimal mappings,
the proof's figures, and how they were computed, as a dataclass that writes itself
as JSON."""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from typing import Any

from ._version import __version__
from .io.outputs import json_cost
from .limits import StopReason

__all__ = ["Solution", "SolveResult"]


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

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data. Costs have 12 significant digits (:func:`outputs.json_cost`),
        and a cost that was never found (breadth-first search stopped before completing
        a mapping) or is past the float range is None; ``gap`` has 12 decimals. Nodes are
        node names (strings), clusters sorted by them."""
        data = asdict(self)
        for name in ("optimal_cost", "lower_bound"):
            data[name] = json_cost(data[name])
        data["gap"] = round(self.gap, 12) if math.isfinite(self.gap) else None
        for solution in data["solutions"]:
            solution["clusters"] = sorted(sorted(map(str, c)) for c in solution["clusters"])
            solution["cost"] = json_cost(solution["cost"])
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
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)



def environment() -> dict[str, str]:
    """The versions a result was computed with."""
    return {"dcmap_dist": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "numpy": version("numpy"), "networkx": version("networkx")}
