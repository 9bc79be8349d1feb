# cython: annotation_typing=False
"""The link key of a branch: what the rest of the search can read of it, so that branches
with equal keys have identical futures (SPEC section 5; docs/search.md, "Correction 1",
"Linking inside a layer" and "The search's state in memory").

:class:`LinkKeys` makes the keys of one problem's branches from the branch and the
problem's node-set memos; :func:`key_parts` reads a ``lean`` key's parts back.
"""

from __future__ import annotations

from typing import Any

from ..model.topology import ONE, Memo, Topology, union_of

LINK_KEYS = ("lean", "full")


class LinkKeys:
    """The link keys (``kind``: ``lean`` or ``full``) of the branches of one problem:
    :meth:`of`; ``final``, the key of every complete mapping (the last layer done,
    nothing left open). ``parents_of`` and ``closures`` are the problem's memos. A branch
    is a :class:`~dcmap_dist.search.problem.Branch`, which this module reads but does not
    import: :mod:`~dcmap_dist.search.problem` imports this one."""

    def __init__(self, topo: Topology, kind: str, parents_of: Memo, closures: Memo) -> None:
        self.topo = topo
        self.kind = kind
        self.parents_of = parents_of
        self.closures = closures
        # descendants of the unplaced nodes: the only placed nodes a future contiguity
        # check can reach
        self._reach = Memo(lambda rest: union_of(topo.desc, rest))
        self.final = (topo.l_max, (), ()) if kind == "full" else (topo.l_max, (), 0)

    def of(self, branch: Any) -> tuple:
        """Dominance key of a branch: what any future cost or feasibility check can read,
        so branches with equal keys have identical futures (docs/search.md, "Why equal
        keys mean equal futures", gives the argument; tests compare both keys with brute
        force and an independent dynamic programme).

        Of a completed layer, ``full`` is SPEC 5's key: the open components' membership
        and the frontier cluster-layers with their messages. ``lean`` (default) keeps,
        per open component, its frontier cluster-layers with their messages and the
        placed nodes outside it that are both its ancestors and reachable from an
        unplaced node, plus which pairs of open components can never be merged. Inside a
        layer the key is the same over what an unplaced node still reads, headed by
        ``(layer, assigned)`` and, for ``lean``, the masks of the components fixed at
        this layer and of those that hold a node of it.

        The key is flat tuples of ints and messages (docs/search.md, "The search's state
        in memory"): ``lean`` is ``(head, parts, blocked)``, ``parts`` one tuple holding,
        part after part, ``count, outside, members, message, ...`` (``count`` cluster-layers;
        :func:`key_parts` reads it) and ``blocked`` one int, bit ``i * parts + j`` for a
        pair of parts ``i < j`` that can never merge; ``full`` is ``(head, component masks,
        (members, message, ...))``, its head ``(layer, assigned, fixed)`` inside a layer
        (``fixed``: bit ``i`` for component ``i``).
        """
        topo = self.topo
        layer = branch.layer
        fixed = 0  # bit i: comps[i] is fixed at this layer
        if branch.layer_done:
            rest = topo.above[layer]
            comps, frontier = branch.comps, branch.frontier
        else:
            rest = topo.above[layer] | (topo.layer_mask[layer] & ~branch.assigned)
            parents_of = self.parents_of
            kept_comps = []
            for j, members in enumerate(branch.comps):
                if parents_of[members] & rest:
                    if branch.fixed >> j & 1:
                        fixed |= ONE << len(kept_comps)
                    kept_comps.append(members)
            comps = tuple(kept_comps)
            frontier = tuple([item for item in branch.frontier if parents_of[item[0]] & rest])
        if self.kind == "full":
            return self._full(branch, comps, fixed, frontier)
        known = self.closures
        parts = []
        for index, members in enumerate(comps):
            items = []  # its frontier cluster-layers: members, message, ...
            for item in frontier:
                if item[0] & members:
                    items.append(item[0])
                    items.append(item[1])
            # headed by its first cluster-layer's mask: the parts' items are disjoint, so
            # this orders them as their items would, comparing ints only
            parts.append((items[0], items, members, known[members], fixed >> index & 1))
        parts.sort()
        count = len(parts)
        placed = ~rest
        outside = [closure[0] & placed & ~members for _, _, members, closure, _ in parts]
        blocked = 0
        for i, (_, _, _, (_, descendants_i, touch_i, layers_i), _) in enumerate(parts):
            outside_i = outside[i]
            for j in range(i + 1, count):
                _, _, members_j, (_, descendants_j, _, layers_j), _ = parts[j]
                if (layers_i & layers_j or touch_i & members_j
                        or descendants_i & outside[j] or descendants_j & outside_i):
                    blocked |= 1 << (i * count + j)
        reach = self._reach[rest]
        flat = []
        for part, out in zip(parts, outside):
            items = part[1]
            flat.append(len(items) >> 1)
            flat.append(out & reach)
            flat.extend(items)
        kept = tuple(flat)
        if branch.layer_done:
            return layer, kept, blocked
        fixed = held = 0  # now over the sorted parts
        for i, (_, _, _, (_, _, _, layers_i), fixed_i) in enumerate(parts):
            if fixed_i:
                fixed |= 1 << i
                if layers_i >> layer & 1:  # only a fixed component holds a node of this layer
                    held |= 1 << i
        return (layer, branch.assigned, fixed, held), kept, blocked

    def _full(self, branch: Any, comps: tuple, fixed: int, frontier: tuple) -> tuple:
        """The ``full`` key of :meth:`of`, from the components (``fixed``: which are
        fixed) and frontier an unplaced node still reads."""
        flat = []
        for item in frontier:
            flat.append(item[0])
            flat.append(item[1])
        if branch.layer_done:
            return branch.layer, comps, tuple(flat)
        return (branch.layer, branch.assigned, fixed), comps, tuple(flat)


def key_parts(parts: tuple) -> list[tuple[int, tuple]]:
    """The parts of a ``lean`` key's flat ``parts`` (:meth:`LinkKeys.of`), each as
    ``(outside, (members, message, ...))``."""
    found = []
    start = 0
    while start < len(parts):
        end = start + 2 + 2 * parts[start]
        found.append((parts[start + 1], parts[start + 2:end]))
        start = end
    return found
