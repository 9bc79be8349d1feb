"""The link key of a branch: what the rest of the search can read of it, so that branches
with equal keys have identical futures (SPEC section 5; docs/search.md, "Correction 1",
"Linking inside a layer" and "The search's state in memory").

:class:`LinkKeys` makes the keys of one problem's branches from the branch and the
problem's node-set memos; :func:`key_parts` reads a ``lean`` key's parts and
:func:`frame_and_limits` splits it into what its futures are made of and what limits them.
"""

from __future__ import annotations

from typing import Any

from ..model.topology import Memo, Topology, union_of

__all__ = ["LinkKeys", "frame_and_limits", "key_parts"]


class LinkKeys:
    """The link keys (``kind``: ``lean`` or ``full``) of the branches of one problem:
    :meth:`of`; ``final``, the key of every complete mapping (the last layer done,
    nothing left open). ``parents_of`` and ``closures`` are the problem's memos. A branch
    is a :class:`~dcmap_dist.search.branch.Branch`."""

    def __init__(self, topo: Topology, kind: str, parents_of: Memo, closures: Memo) -> None:
        self.topo = topo
        self.kind = kind
        self.parents_of = parents_of
        self.closures = closures
        # descendants of the unplaced nodes: the only placed nodes a future contiguity
        # check can reach
        self._reach = Memo(lambda rest: union_of(topo.desc, rest))
        # each mask (a union, an outside, the blocked pairs) and each tuple (a shape; inside a
        # layer, a head and a group of cluster-layers) a key holds, as its first object: the
        # keys of a search repeat few distinct values of each
        self._masks: dict[int, int] = {}
        self._tuples: dict[tuple, tuple] = {}
        self.final = (topo.l_max, (), ()) if kind == "full" else (topo.l_max, (), (), 0)

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

        The key is a few tuples of ints, messages and frontier cluster-layers ``(members,
        message)`` (docs/search.md, "The search's state in memory"): ``lean`` is ``(head,
        items, shape, blocked)``: ``items`` the cluster-layers (of a completed layer, the
        branch's sorted frontier itself; inside a layer, the parts' cluster-layers part
        after part), ``shape`` per part ``union, outside`` (``union`` its cluster-layers'
        members; :func:`key_parts` reads the parts) and ``blocked`` one int, bit
        ``i * parts + j`` for a pair of parts ``i < j`` that can never merge; ``full`` is
        ``(head, component masks, items)``, its head ``(layer, assigned, fixed)`` inside a
        layer (``fixed``: bit ``i`` for component ``i``). In a ``lean`` key the shape, its
        masks and ``blocked``, and inside a layer the head and ``items``, are one object
        per value.
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
                        fixed |= 1 << len(kept_comps)
                    kept_comps.append(members)
            comps = tuple(kept_comps)
            frontier = tuple([item for item in branch.frontier if parents_of[item[0]] & rest])
        if self.kind == "full":
            return self._full(branch, comps, fixed, frontier)
        known = self.closures
        parts = []
        for index, members in enumerate(comps):
            items = []  # its frontier cluster-layers
            union = 0  # their members
            for item in frontier:
                if item[0] & members:
                    items.append(item)
                    union |= item[0]
            # headed by its first cluster-layer's mask: the parts' items are disjoint, so
            # this orders them as their items would, comparing ints only
            parts.append((items[0][0], items, members, known[members], fixed >> index & 1, union))
        parts.sort()
        count = len(parts)
        placed = ~rest
        outside = [part[3][0] & placed & ~part[2] for part in parts]
        blocked = 0
        for i, (_, _, _, (_, descendants_i, touch_i, layers_i), _, _) in enumerate(parts):
            outside_i = outside[i]
            for j in range(i + 1, count):
                _, _, members_j, (_, descendants_j, _, layers_j), _, _ = parts[j]
                if (layers_i & layers_j or touch_i & members_j
                        or descendants_i & outside[j] or descendants_j & outside_i):
                    blocked |= 1 << (i * count + j)
        reach = self._reach[rest]
        shape = []
        for part, out in zip(parts, outside):
            shape.append(part[5])
            shape.append(out & reach)
        shape = tuple(shape)
        kept = self._tuples
        masks = self._masks
        known_shape = kept.get(shape)
        if known_shape is None:  # kept once, as its own key, of masks kept once
            known_shape = tuple([masks.setdefault(mask, mask) for mask in shape])
            kept[known_shape] = known_shape
        blocked = masks.setdefault(blocked, blocked)
        if branch.layer_done:  # the frontier itself, sorted, and shared with the branch
            return layer, frontier, known_shape, blocked
        grouped = []  # the parts' cluster-layers, part after part
        fixed = held = 0  # now over the sorted parts
        for i, (_, items, _, (_, _, _, layers_i), fixed_i, _) in enumerate(parts):
            grouped.extend(items)
            if fixed_i:
                fixed |= 1 << i
                if layers_i >> layer & 1:  # only a fixed component holds a node of this layer
                    held |= 1 << i
        head = (layer, branch.assigned, fixed, held)
        items = tuple(grouped)
        return kept.setdefault(head, head), kept.setdefault(items, items), known_shape, blocked

    def _full(self, branch: Any, comps: tuple, fixed: int, frontier: tuple) -> tuple:
        """The ``full`` key of :meth:`of`, from the components (``fixed``: which are
        fixed) and frontier an unplaced node still reads."""
        if branch.layer_done:
            return branch.layer, comps, frontier
        return (branch.layer, branch.assigned, fixed), comps, frontier


def key_parts(key: tuple) -> list[tuple[int, tuple]]:
    """The parts of a ``lean`` key (:meth:`LinkKeys.of`), each as ``(outside, cluster-layers
    (members, message))``: its cluster-layers are the key's that lie in its ``union``."""
    items, shape = key[1], key[2]
    return [(shape[k + 1], tuple([item for item in items if item[0] & shape[k]])) for k in range(0, len(shape), 2)]


def frame_and_limits(key: tuple) -> tuple[tuple, tuple, int] | None:
    """A ``lean`` key split in two (docs/search.md, "Dominance by fewer limits"): its
    *frame* ``(head, cluster-layers, unions)``, what a future's costs and proposals read,
    and its *limits*: each part's ``outside`` (the placed nodes a joiner may not descend
    to) and the blocked pairs. Of two keys with one frame, the one whose limits are each
    a subset of the other's can complete in every way the other can, at the same costs.
    None for a ``full`` key, which has no limits apart."""
    if len(key) != 4:
        return None
    head, items, shape, blocked = key
    return (head, items, shape[0::2]), shape[1::2], blocked
