"""2-slice templates for scaling studies: seeded random templates, and the study's
real ones (seagrass, and the templates recovered from water and diabetes).

A template is the JSON object :func:`dcmap_dist.io.dynamic.unroll` reads: the network
JSON of one slice plus ``"temporal_edges"`` (see :mod:`dcmap_dist.io.dynamic`).
"""

from __future__ import annotations

import numbers
import random
from pathlib import Path
from typing import Any

from ..io.dynamic import recover_template
from ..io.load import load_network
from ..io.files import read_json

__all__ = ["STUDY_TEMPLATES", "random_template", "study_template"]

STUDY_TEMPLATES = ("seagrass", "water", "diabetes")

# what a recovered template holds that a 2-slice template cannot unroll (dynamic.check_unrollable)
_UNROLLABLE_KEYS = ("static_nodes", "static_edges", "partial_slice")


def _check_fraction(value: Any, what: str) -> float:
    """``value`` as a float if it is a number from 0 to 1, else a ValueError naming ``what``."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not 0 <= value <= 1:
        raise ValueError(f"{what} must be a number from 0 to 1, got {value!r}")
    return float(value)


def _check_count(value: Any, what: str, least: int) -> int:
    """``value`` if it is an integer >= ``least``, else a ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
    return int(value)


def random_template(
    slice_nodes: int,
    intra_density: float,
    temporal_density: float,
    max_states: int = 4,
    seed: int = 0,
    observed_fraction: float = 0.0,
) -> dict[str, Any]:
    """A seeded random 2-slice template; the same arguments give the same JSON, byte for byte.

    The slice has ``slice_nodes`` nodes ``X0, X1, ...``, each with a number of states
    drawn uniformly from 1 to ``max_states``. Intra-slice arcs form a random DAG: the
    nodes are put in a random order and each pair ``i < j`` of that order gets the arc
    ``i -> j`` with probability ``intra_density``. The slice is then made weakly
    connected: taking its components in order of their first node, each component
    after the first gets one arc to or from a node of the earlier ones (both ends drawn
    uniformly, oriented along the random order, so the slice stays acyclic); a slice of
    ``n`` nodes thus has at least ``n - 1`` arcs, and more than ``intra_density``
    alone would give when that is low. Temporal arcs: each ordered pair ``(parent,
    child)`` of template nodes, ``X -> X`` included, with probability
    ``temporal_density`` (there may be none: the unrolled slices are then separate
    components). ``round(observed_fraction * slice_nodes)`` nodes, drawn uniformly,
    are observed.

    Everything is drawn from ``random.Random(seed)`` in a fixed order (states, node
    order, intra-slice pairs, temporal pairs, observed nodes, then the connecting
    arcs), one draw per pair whatever the densities: with the same seed, a higher
    density gives a superset of the drawn arcs. Edges are listed by node number.
    The name encodes the arguments, e.g. ``rand-n6-d0.35-t0.2-s4-seed7`` (``-o0.2``
    before ``-seed`` when nodes are observed). Raises a ValueError naming a bad argument.
    """
    n = _check_count(slice_nodes, "slice_nodes", 1)
    intra = _check_fraction(intra_density, "intra_density")
    temporal = _check_fraction(temporal_density, "temporal_density")
    most = _check_count(max_states, "max_states", 1)
    observed_share = _check_fraction(observed_fraction, "observed_fraction")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    rng = random.Random(int(seed))
    names = [f"X{i}" for i in range(n)]
    states = [rng.randint(1, most) for _ in range(n)]
    order = rng.sample(range(n), n)
    rank = {node: position for position, node in enumerate(order)}
    arcs = {(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < intra}
    temporal_arcs = [(p, c) for p in range(n) for c in range(n) if rng.random() < temporal]
    observed = sorted(rng.sample(range(n), round(observed_share * n)))
    for u, v in _connecting_arcs(n, arcs, rng):
        arcs.add((u, v) if rank[u] < rank[v] else (v, u))
    observed_tag = f"-o{observed_share:g}" if observed else ""
    name = f"rand-n{n}-d{intra:g}-t{temporal:g}-s{most}{observed_tag}-seed{seed}"
    return {
        "name": name,
        "description": (f"random_template(slice_nodes={n}, intra_density={intra:g}, temporal_density="
                        f"{temporal:g}, max_states={most}, seed={seed}, observed_fraction={observed_share:g})"),
        "nodes": [{"id": x, "states": s} for x, s in zip(names, states)],
        "edges": [[names[u], names[v]] for u, v in sorted(arcs)],
        "temporal_edges": [[names[u], names[v]] for u, v in temporal_arcs],
        "observed": [names[i] for i in observed],
    }


def _connecting_arcs(n: int, arcs: set[tuple[int, int]], rng: random.Random) -> list[tuple[int, int]]:
    """Unoriented pairs joining the weakly connected components of ``arcs`` over nodes
    ``0 .. n-1``: each component after the first (by first node) to a uniformly drawn
    node of the earlier ones."""
    group = list(range(n))  # union-find

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for u, v in arcs:
        group[root(u)] = root(v)
    components: dict[int, list[int]] = {}
    for i in range(n):
        components.setdefault(root(i), []).append(i)
    parts = list(components.values())  # ordered by first node
    joined = list(parts[0])
    pairs = []
    for part in parts[1:]:
        pairs.append((rng.choice(joined), rng.choice(part)))
        joined += part
    return pairs


def study_template(name: str, networks_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The 2-slice template of a real network of the scaling study, and the options
    its solves use (keyword arguments of :func:`dcmap_dist.solve.solve` and of
    :func:`dcmap_dist.study.replication.mapping_cost`).

    * ``seagrass``: ``seagrass-2tbn.json``, the paper's case study, with its own
      observed nodes; options ``{"order": "paper"}`` (``dcmap solve seagrass-2tbn
      --order paper``, as the paper's figures are computed).
    * ``water``, ``diabetes``: the templates :func:`dcmap_dist.io.dynamic.recover_template`
      recovers from ``water.bif.gz`` and ``diabetes.bif.gz``; options ``{}`` (order
      ``cpt``). Diabetes has 2 static nodes and a partial last slice, which a
      2-slice template cannot express: they are dropped (the keys ``static_nodes``,
      ``static_edges`` and ``partial_slice`` deleted).

    The template's ``description`` says where it comes from and what was dropped.
    ``networks_dir`` is the folder of the network files (``../shared/networks``).
    """
    if name not in STUDY_TEMPLATES:
        raise ValueError(f"unknown study template {name!r}: choose one of {', '.join(STUDY_TEMPLATES)}")
    if name == "seagrass":
        path = Path(networks_dir) / "seagrass-2tbn.json"
        template = read_json(path)
        template["description"] = (f"{path.name}, the DCMAP paper's case study; observes "
                                   f"{', '.join(template.get('observed', [])) or 'nothing'}; order paper")
        return template, {"order": "paper"}
    path = Path(networks_dir) / f"{name}.bif.gz"
    template = recover_template(load_network(path))
    dropped = _dropped(template)
    for key in _UNROLLABLE_KEYS:
        del template[key]
    template["description"] = (f"recovered from {path.name} ({template['slices']} full slices of "
                               f"{len(template['nodes'])} nodes); dropped: {dropped or 'nothing'}")
    return template, {}


def _dropped(template: dict[str, Any]) -> str:
    """What a recovered template holds that unrolling it cannot keep, in words."""
    parts = []
    if template["static_nodes"]:
        parts.append(f"static nodes {', '.join(template['static_nodes'])} and their "
                     f"{len(template['static_edges'])} arcs")
    partial = template["partial_slice"]
    if partial:
        parts.append(f"partial slice {partial['tag']!r} ({', '.join(partial['nodes'])}) and its "
                     f"{len(partial['edges'])} arcs")
    return "; ".join(parts)
