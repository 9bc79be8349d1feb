"""What a search is: :class:`SearchSettings`, one frozen record that flows from
:func:`~dcmap_dist.solve.solve` through the run, into a checkpoint's identity, back out
of a resumed checkpoint, and into the result.

The settings that define the search (:data:`IDENTITY`: its cost model, scheme, link key,
bound switch, alpha and seed) must agree between a checkpoint and the search that
resumes it; the others (how many workers, where the link table lives, how often a
snapshot is taken, whether components are searched by contours) may change at every
resumption.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .model.mappings import SCHEMES

__all__ = ["FIRST_BUDGET", "IDENTITY", "LINK_KEYS", "LINK_TABLES", "METHODS", "SearchSettings"]

METHODS = ("dcmap", "bfs", "brute")
LINK_KEYS = ("lean", "full")
LINK_TABLES = ("sharded", "coordinator")
# what a checkpoint records of the search and a resumption must repeat (the cost model is
# recorded by its description, which holds order and addition for the built-in model)
IDENTITY = ("cost", "order", "addition", "scheme", "link_key", "use_bound", "alpha", "seed")
# expansions the beam search of a search's first mapping may take (search/heuristics.py)
FIRST_BUDGET = 4096


@dataclass(frozen=True)
class SearchSettings:
    """The settings of a search (the parameters of :func:`~dcmap_dist.solve.solve` of the
    same names say what each means). ``cost`` is ``"dcmap"``, ``"package.module:name"``,
    a cost model or a callable; ``order`` and ``addition`` are the ``dcmap`` model's.
    Every value is checked when the record is made (a ValueError names the bad one)."""

    cost: str | Callable | Any = "dcmap"
    order: str = "cpt"
    addition: float = 0.6
    scheme: str = "merge"
    method: str = "dcmap"
    link_key: str = "lean"
    use_bound: bool = True
    alpha: float = 0.6
    seed: int = 0
    workers: int = 1
    link_table: str = "sharded"
    snapshot_every: float | None = 30.0
    first_budget: int = FIRST_BUDGET
    contours: bool = False

    def __post_init__(self) -> None:
        for name, choices in (("scheme", SCHEMES), ("method", METHODS), ("link_key", LINK_KEYS),
                              ("link_table", LINK_TABLES)):
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"unknown {name.replace('_', ' ')} {value!r}: choose one of {', '.join(choices)}")
        if not isinstance(self.use_bound, bool):
            raise ValueError(f"use_bound must be True or False, got {self.use_bound!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) or not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be a probability from 0 to 1, got {self.alpha!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        if isinstance(self.workers, bool) or not isinstance(self.workers, numbers.Integral) or self.workers < 1:
            raise ValueError(f"workers must be a positive integer, got {self.workers!r}")
        budget = self.first_budget
        if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 0:
            raise ValueError(f"first_budget must be a non-negative integer, got {budget!r}")
        if not isinstance(self.contours, bool):
            raise ValueError(f"contours must be True or False, got {self.contours!r}")
        if self.contours and self.method != "dcmap":
            raise ValueError(f"contours are a way of running the dcmap method, not {self.method}")
        every = self.snapshot_every
        if every is not None and (isinstance(every, bool) or not isinstance(every, numbers.Real)
                                  or not 0 < every < math.inf):
            raise ValueError(f"snapshot_every must be a positive number or None, got {every!r}")

    @property
    def distributed(self) -> bool:
        """Whether the search runs on Ray workers (DCMAP with two or more)."""
        return self.method == "dcmap" and self.workers > 1

    def replace(self, **changes: Any) -> SearchSettings:
        """A copy with ``changes`` (checked as a new record is)."""
        return dataclasses.replace(self, **changes)

    def of_result(self) -> dict[str, Any]:
        """The settings a result reports (SPEC section 7): the workers that ran it, and
        the link table's place only for a distributed search."""
        return {"scheme": self.scheme, "method": self.method, "alpha": self.alpha, "seed": self.seed,
                "link_key": self.link_key, "use_bound": self.use_bound,
                "workers": self.workers if self.distributed else 1,
                "link_table": self.link_table if self.distributed else None}
