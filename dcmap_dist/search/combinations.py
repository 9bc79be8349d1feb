"""The feasible combinations of one expansion: which nodes of the layer join the
proposed component, and which other open components merge with it.

The paper proposes, for a component, every subset of the layer's candidate nodes
(:func:`generatecombos`); the ``single`` scheme keeps those whose union with the
component is contiguous. The ``merge`` scheme also merges other unfixed components
through the joining nodes: :func:`combinations` enumerates every connected set of
layer nodes and components containing the proposal once (extension-set enumeration).

Plain functions over masks (ints over node positions) and the problem's memos; the
search's expansion (:meth:`dcmap_dist.search.problem.Problem.expand`) calls
:func:`combinations`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from ..limits import Stopwatch
from ..model.topology import Memo, Topology, bits

__all__ = ["combinations", "generatecombos", "iter_combos", "violators"]


def generatecombos(z: list[Any], z1: set[Any], z3: set[Any]) -> list[frozenset[Any]]:
    """The paper's ``generatecombos``: nodes ``z`` proposed for one cluster, of which
    ``z1`` can go nowhere else and ``z3`` are already mapped elsewhere. Every
    combination is ``z1`` plus a subset of ``z2 = z - z1 - z3`` (``z1`` alone included)."""
    return list(iter_combos(z, z1, z3))


def iter_combos(z: list[Any], z1: set[Any], z3: set[Any]) -> Iterator[frozenset[Any]]:
    """:func:`generatecombos` one combination at a time (there are ``2^|z2|``)."""
    z2 = [x for x in z if x not in z1 and x not in z3]
    for size in range(len(z2) + 1):
        for subset in itertools.combinations(z2, size):
            yield frozenset(z1) | frozenset(subset)


def combinations(comps: tuple[int, ...], fixed: int, proposal: int, free: int, scheme: str,
                 topo: Topology, parents_of: Memo, closures: Memo, watch: Stopwatch | None = None,
                 most: int | None = None) -> list[tuple[int, int]]:
    """Feasible ``(K, S)`` for the open components ``comps`` (member masks; bit ``i`` of
    ``fixed`` set for those fixed at this layer) and the unplaced layer nodes ``free``:
    layer nodes ``K`` joining component ``proposal`` (an index), and the set ``S``
    (bitmask over component indices, the proposal included) merged with it; the first
    ``most`` of them if given. ``parents_of`` and ``closures`` are the problem's memos
    of a node set's parents and of its ancestors, descendants, neighbours and layers.
    With a ``watch``, every step checks the limits (raising SearchInterrupted)."""
    if most == 0:
        return []
    members = comps[proposal]
    if scheme == "single":
        up, down = closures[members][:2]
        found = []
        for subset in iter_combos(bits(parents_of[members] & free), set(), set()):
            if watch is not None:
                watch.check_within()
            joined = sum(1 << i for i in subset)
            if not joined or not violators(topo, joined | members, down, up, joined):
                found.append((joined, 1 << proposal))
                if len(found) == most:
                    break
        return found
    return _merge_combos(comps, fixed, proposal, free, topo, parents_of, closures, watch, most)


def _merge_combos(comps: tuple[int, ...], fixed: int, proposal: int, free: int, topo: Topology,
                  parents_of: Memo, closures: Memo, watch: Stopwatch | None,
                  most: int | None) -> list[tuple[int, int]]:
    """Connected sets of layer nodes and unfixed components containing the proposal,
    in which the components have no arc and no layer in common and the union is
    contiguous (the first ``most`` if given). Each set is generated once; the lone
    proposal, with no joiner, is the "not extended" combination."""
    open_idx = [i for i in range(len(comps)) if not fixed >> i & 1]
    known = {i: closures[comps[i]] for i in open_idx}
    found: list[tuple[int, int]] = []
    # what every step of the enumeration reads, passed down (a nested function calling
    # itself would be a reference cycle, left to the garbage collector at every expansion)
    context = (comps, open_idx, known, free, watch, topo, topo.children, parents_of, found, most)
    members = comps[proposal]
    up, down, _, layers_used = known[proposal]
    _grow(context, 0, 1 << proposal, members, layers_used, down, up, parents_of[members] & free, 0, 0,
          1 << proposal)
    return found


def _grow(context: tuple, joined: int, merged: int, union: int, layers_used: int, down: int, up: int,
          cand_nodes: int, cand_comps: int, banned_nodes: int, banned_comps: int) -> bool:
    """One step of :func:`_merge_combos`: the combination ``(joined, merged)`` if it is
    contiguous, then its extensions by the candidates not banned, added to the list
    ``found``; True once it holds ``most``. ``down``, ``up``: the descendants and
    ancestors of the merged components (not of ``joined``)."""
    comps, open_idx, known, free, watch, topo, children, parents_of, found, most = context
    if watch is not None:
        watch.check_within()
    breaking = violators(topo, joined | union, down, up, joined)
    if breaking:
        # a violator lies below layer l: only merging its component can mend
        # it; if that component can no longer be merged, nothing here can
        mendable = 0
        for j in open_idx:
            if not (merged | banned_comps) >> j & 1:
                mendable |= comps[j]
        if breaking & ~mendable:
            return False
    else:
        found.append((joined, merged))
        if len(found) == most:
            return True
    while cand_nodes or cand_comps:
        if cand_nodes:
            low = cand_nodes & -cand_nodes
            cand_nodes ^= low
            i = low.bit_length() - 1
            new_comps = 0
            for j in open_idx:
                bit = 1 << j
                if not (merged | cand_comps | banned_comps) & bit and children[i] & comps[j]:
                    new_comps |= bit
            if _grow(context, joined | low, merged, union, layers_used, down, up,
                     cand_nodes, cand_comps | new_comps, banned_nodes, banned_comps):
                return True
            banned_nodes |= low
        else:
            bit = cand_comps & -cand_comps
            cand_comps ^= bit
            banned_comps |= bit
            j = bit.bit_length() - 1
            m = comps[j]
            up_j, down_j, touch_j, layers_j = known[j]
            if touch_j & union or layers_j & layers_used:
                continue
            new_nodes = parents_of[m] & free & ~(joined | cand_nodes | banned_nodes)
            if _grow(context, joined, merged | bit, union | m, layers_used | layers_j,
                     down | down_j, up | up_j, cand_nodes | new_nodes, cand_comps,
                     banned_nodes, banned_comps):
                return True
    return False


def violators(topo: Topology, union: int, down: int, up: int, joined: int) -> int:
    """The nodes that break the contiguity of ``union`` (outside it, with an ancestor
    and a descendant inside), given the closures ``down``/``up`` of all of it but
    the layer nodes ``joined`` (a few, added here). Closures may leave out members:
    members are never violators."""
    for i in bits(joined):
        down |= topo.desc[i]
        up |= topo.anc[i]
    return down & up & ~union
