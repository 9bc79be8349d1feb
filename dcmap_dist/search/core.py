"""The seam between the two engines: what the native core takes, and what it asks back.

The C++ core (``search/native/``, bound by ``search/native_engine.pyx``) replays the
Python engine step for step (docs/engine.md). It takes one record, :class:`CoreInput`:
the network's topology as node masks, the search's options, and the built-in cost
model's tables (:class:`ModelTables`) when the core runs that model itself, else none.
During a step it asks the Python side, through a :class:`Reference` (which
:class:`~dcmap_dist.search.problem.Problem` is), for what it does not compute: the cost
of a cluster-layer under any other model, the bound of a frontier, the model's estimate
of the nodes still to place. The binding reads nothing else of the Python engine but the
records that cross :class:`~dcmap_dist.search.engine.Engine` (branches, link entries,
histories, the search state, the batch format); ``tests/test_layers.py`` holds that.

A field added here is added to the C++ struct of the same name (``native/engine.hpp``
for :class:`CoreInput`'s parts, ``native/model_tables.hpp`` for :class:`ModelTables`)
and filled in the binding: docs/engine.md, "The seam", works one through.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

from ..cost import dcmap as dcmap_cost
from ..cost.dcmap import DcmapCost
from ..limits import Stopwatch
from ..model.network import Network
from .bounds import MOST_ADDED
from .branch import Branch
from .problem import Problem

__all__ = ["CoreInput", "CoreOptions", "CoreTopology", "Definition", "ModelTables", "NATIVE_NODES", "Reference",
           "core_input", "definition", "model_tables", "rebuilt"]

NATIVE_NODES = 512  # the core's widest masks: 8 words of 64 nodes
EXACT = 1 << 53  # the core's counts are doubles: a node of this many states stays in Python


class Reference(Protocol):
    """What the core asks back of the Python engine during a step (a
    :class:`~dcmap_dist.search.problem.Problem` answers it). Frontier items are
    ``(members, message)``, masks are Python ints, messages the values the search holds."""

    def root(self) -> Branch:
        """The search's root branch: layer 0 placed, every leaf its own cluster-layer."""

    def cluster_layer(self, key: tuple, watch: Stopwatch | None) -> tuple[float, Hashable]:
        """The cost and the message of the cluster-layer a cost key names, ``(nodes, same,
        members, message, members, message, ...)``: its nodes, the union of its children in
        its cluster, and its children; the limits of ``watch`` checked after a slow call."""

    def frontier_bound(self, layer: int, assigned: int, frontier: tuple[tuple[int, Hashable], ...]) -> float:
        """The admissible bound on the cost still to come from ``layer`` with the nodes
        ``assigned`` of it placed (-1: all) and the frontier ``frontier``."""

    def rest_estimate(self, rest: int) -> float:
        """The model's estimate of the cost of placing the nodes ``rest`` (a mask)."""


@dataclass(frozen=True)
class CoreTopology:
    """``model/topology.py``'s tables the core reads: per node its layer and masks, per
    layer its mask and the mask of the layers above it (masks as Python ints)."""

    n: int
    l_max: int
    layer: tuple[int, ...]
    parents: tuple[int, ...]
    children: tuple[int, ...]
    neighbours: tuple[int, ...]
    anc: tuple[int, ...]
    desc: tuple[int, ...]
    layer_mask: tuple[int, ...]
    above: tuple[int, ...]


@dataclass(frozen=True)
class CoreOptions:
    """How the core searches: the scheme, the link keys, whether the model estimates, and
    the actor's place (the :class:`~dcmap_dist.search.explorer.Explorer`'s arguments)."""

    single_scheme: bool
    full_keys: bool
    has_estimator: bool
    alpha: float
    owner: int | None  # numbers the records of its shard of the link table; None: no shard
    shard_index: int
    shards: int
    notify: bool


@dataclass(frozen=True)
class ModelTables:
    """The built-in model (:class:`~dcmap_dist.cost.dcmap.DcmapCost`) and the parts of its
    bound (:class:`~dcmap_dist.search.bounds.LowerBound`), by node index: what the core
    needs to price cluster-layers and bound frontiers without asking Python."""

    cards: tuple[int, ...]  # the states a node counts
    name_rank: tuple[int, ...]  # DcmapCost.ranks
    eliminate_rank: tuple[int, ...]
    naive_rank: tuple[int, ...]
    canonical: bool
    addition: float
    bounds: bool  # the search prunes with the bound
    above: tuple[float, ...]  # LowerBound.above, .own, .absorbed, .absorbing
    own: tuple[float, ...]
    absorbed: tuple[float, ...]
    absorbing: tuple[tuple[tuple[int, float], ...], ...]
    additive: tuple[float, ...]  # LowerBound.additive, .spread, and bounds.MOST_ADDED
    spread: tuple[int, ...]
    most_added: int
    most_grouped: int  # cost/dcmap.py's MOST_GROUPED_PARENTS, MOST_ORDERED_ABSORPTIONS, MOST_PARTITIONED
    most_ordered: int
    most_partitioned: int


@dataclass(frozen=True)
class CoreInput:
    """All the core takes: built once per engine by :func:`core_input`."""

    topology: CoreTopology
    options: CoreOptions
    model: ModelTables | None  # None: the core asks the Reference for costs and bounds


def core_input(problem: Problem, alpha: float = 0.6, owner: int | None = None, shard_index: int = 0,
               shards: int = 1, notify: bool = False) -> CoreInput:
    """The record the core of one actor's share of a search of ``problem`` takes (a
    ValueError for a network wider than :data:`NATIVE_NODES` or an ``alpha`` outside [0, 1])."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    topo = problem.topo
    if topo.n > NATIVE_NODES:
        raise ValueError(f"the native engine takes networks of up to {NATIVE_NODES} nodes, not {topo.n}")
    topology = CoreTopology(topo.n, topo.l_max, tuple(topo.layer), tuple(topo.parents), tuple(topo.children),
                            tuple(topo.neighbours), tuple(topo.anc), tuple(topo.desc), tuple(topo.layer_mask),
                            tuple(topo.above))
    options = CoreOptions(problem.scheme == "single", problem.keys.kind == "full", problem.has_estimator, alpha,
                          owner, shard_index, shards, notify)
    return CoreInput(topology, options, model_tables(problem))


def model_tables(problem: Problem) -> ModelTables | None:
    """The built-in model's tables for the core, or None where the model stays in Python:
    another model, an addition that is not a plain number, a network of several
    components (the messages' codes follow the whole network's nodes), a node of 2^53
    states or more."""
    model, graph, network = problem.model, problem.graph, problem.network
    if (type(model) is not DcmapCost or type(model.addition) not in (int, float)
            or tuple(network.nodes) != tuple(graph.nodes) or any(graph.card(x) >= EXACT for x in graph.nodes)):
        return None
    name_rank, eliminate_rank, naive_rank = model.ranks(graph)
    bound = problem.bound
    return ModelTables(tuple(graph.card(x) for x in graph.nodes), name_rank, eliminate_rank, naive_rank,
                       model.order == "canonical", float(model.addition), problem.use_bound,
                       tuple(float(v) for v in bound.above), tuple(float(v) for v in bound.own),
                       tuple(float(v) for v in bound.absorbed),
                       tuple(tuple((mask, float(charge)) for mask, charge in layer) for layer in bound.absorbing),
                       tuple(float(v) for v in bound.additive), tuple(bound.spread), MOST_ADDED,
                       dcmap_cost.MOST_GROUPED_PARENTS, dcmap_cost.MOST_ORDERED_ABSORPTIONS,
                       dcmap_cost.MOST_PARTITIONED)


Definition = tuple[Network, object, str, Network, str, bool]  # what rebuilds a problem: rebuilt()


def definition(problem: Problem) -> Definition:
    """What rebuilds ``problem`` in another process: its network, model, scheme, graph,
    link keys and whether it bounds."""
    return (problem.network, problem.model, problem.scheme, problem.graph, problem.keys.kind, problem.use_bound)


def rebuilt(definition: Definition) -> Problem:
    """The problem :func:`definition` describes."""
    network, model, scheme, graph, link_key, use_bound = definition
    return Problem(network, model, scheme, graph=graph, link_key=link_key, use_bound=use_bound)
