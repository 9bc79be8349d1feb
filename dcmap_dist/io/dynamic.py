"""Dynamic Bayesian networks: unroll 2-slice templates and recover them (SPEC section 6).

A 2-slice template (2-TBN) is the network JSON of one slice plus
``"temporal_edges"``: ``[parent, child]`` pairs with the parent in slice t-1 and
the child in slice t. Unrolling to T slices names the copies ``<node>_<t>``
(``_0`` first), lists the nodes slice by slice in template order, and gives each
slice its intra-slice edges (template order) followed by its temporal edges from
the slice before (template order); slice 0 has no temporal edges. Observed
template nodes are observed in every slice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..model.network import Network, NetworkError, TooLarge
from .plain import network_from_dict

__all__ = ["MAX_UNROLLED_NODES", "check_unrollable", "is_template", "recover_template", "unroll"]

# base, then the longest trailing run of "_<digits>" groups (the slice tag)
_SLICE_NAME = re.compile(r"(.+?)_(\d+(?:_\d+)*)")

# the keys a template adds to a network JSON: its temporal edges, and what
# recover_template writes besides (static nodes and a partial slice are refused)
TEMPLATE_KEYS = ("temporal_edges", "slices", "slice_tags", "static_nodes", "static_edges", "partial_slice")

# unrolling to more nodes than this is refused: it would exhaust memory before anything
# could be done with the network (dcmap solve refuses far fewer: cli.MAX_SOLVE_NODES)
MAX_UNROLLED_NODES = 1_000_000


def is_template(data: Mapping[str, Any]) -> bool:
    """Whether a network JSON object is a 2-slice template (it has ``temporal_edges``)."""
    return "temporal_edges" in data


def _temporal_edges(template: Mapping[str, Any], base: Network) -> list[tuple[str, str]]:
    """The template's temporal edges, checked to be pairs of template nodes."""
    raw = template.get("temporal_edges", [])
    if not isinstance(raw, list):
        raise NetworkError("'temporal_edges' must be a list of [parent, child] pairs")
    edges = []
    for edge in raw:
        if not isinstance(edge, (list, tuple)) or len(edge) != 2:
            raise NetworkError(f"a temporal edge must be a [parent, child] pair, got {edge!r}")
        u, v = edge
        for end in (u, v):
            if not isinstance(end, str) or end not in base.index:
                raise NetworkError(f"temporal edge {u!r} -> {v!r} refers to unknown node {end!r}")
        if (u, v) in edges:
            raise NetworkError(f"duplicate temporal edge {u!r} -> {v!r}")
        edges.append((u, v))
    return edges


def check_unrollable(template: Mapping[str, Any]) -> None:
    """Raise a NetworkError when a template holds what unrolling would drop silently:
    the static nodes or the partial slice of a recovered template."""
    for key, what in (("static_nodes", "static nodes"), ("partial_slice", "a partial slice")):
        if template.get(key):
            raise NetworkError(
                f"the template has {what} ({key!r}), which unrolling a 2-slice template would drop: "
                f"load the original network, or delete {key!r} to unroll the template without them"
            )


def unroll(template: Mapping[str, Any], slices: int, max_nodes: int | None = MAX_UNROLLED_NODES) -> Network:
    """Unroll a 2-slice template to ``slices`` slices, named ``<template name>x<slices>``.

    A template recovered with static nodes or a partial slice (see
    :func:`recover_template`) unrolls without them; :func:`check_unrollable` refuses it.
    An unrolled network of more than ``max_nodes`` nodes (None: no limit) is refused
    before it is built, with the size it would have.
    """
    if isinstance(slices, bool) or not isinstance(slices, int) or slices < 1:
        raise NetworkError(f"the number of slices must be an integer >= 1, got {slices!r}")
    base = network_from_dict(template, "template", TEMPLATE_KEYS)
    temporal = _temporal_edges(template, base)
    size = slices * len(base.nodes)
    if max_nodes is not None and size > max_nodes:
        arcs = slices * len(base.edges) + (slices - 1) * len(temporal)
        raise TooLarge(f"unrolling {base.name!r} to {slices} slices gives {size:,} nodes and {arcs:,} arcs, "
                       f"more than the {max_nodes:,} nodes allowed")
    nodes, states, edges, observed = [], {}, [], []
    for t in range(slices):
        for x in base.nodes:
            nodes.append(f"{x}_{t}")
            states[f"{x}_{t}"] = base.states[x]
        edges += [(f"{u}_{t}", f"{v}_{t}") for u, v in base.edges]
        if t > 0:
            edges += [(f"{u}_{t - 1}", f"{v}_{t}") for u, v in temporal]
        observed += [f"{x}_{t}" for x in base.observed]
    return Network(f"{base.name}x{slices}", nodes, states, edges, observed)


def _check_same(
    kind: str,
    tag: str,
    reference: list[tuple[str, str]],
    ref_tag: str,
    edges: list[tuple[str, str]],
    base: dict[str, str],
) -> None:
    """Raise a NetworkError naming an edge into slice ``tag`` that differs from the reference."""
    want = {(base[u], base[v]) for u, v in reference}
    have = {(base[u], base[v]) for u, v in edges}
    for u, v in edges:
        if (base[u], base[v]) not in want:
            raise NetworkError(
                f"slice {tag!r} has {kind} edge {u} -> {v} but slice {ref_tag!r} has no such edge"
            )
    for u, v in reference:
        if (base[u], base[v]) not in have:
            raise NetworkError(
                f"slice {tag!r} lacks {kind} edge {base[u]} -> {base[v]} "
                f"(slice {ref_tag!r} has {u} -> {v})"
            )


def recover_template(network: Network) -> dict[str, Any]:
    """Recover the 2-slice template of an unrolled network whose names carry a slice tag.

    A name splits into base and tag, the tag being the longest trailing run of
    ``_<digits>`` groups (``C_NI_12_15`` -> ``C_NI``, ``12_15``); slices are the
    tags ordered as tuples of ints, nodes without a tag are static. The bases
    are all bases seen in any slice. Every slice must hold all of them, with the
    same states and the same intra-slice edges, every pair of consecutive slices
    the same temporal edges, and no edge may skip a slice or go back in time; a
    slice other than the last that lacks a base is a NetworkError naming the
    missing node.

    Only the last slice (in tag order) may be incomplete: if it holds a strict
    subset of the bases it is a partial slice (as in diabetes, whose slice
    ``24`` holds only ``meal_24``, ``cho_24`` and ``bg_24``). It is not used to
    build the template, and then at least 2 full slices are needed. Its nodes
    must have the template's states, its intra-slice edges must be template
    intra-slice edges and its edges from the slice before must be template
    temporal edges (compared by base), else a NetworkError names the node or
    edge; it need not hold every template edge among its nodes. Edges between
    it and static nodes are not checked, like all static edges.

    The result is the template JSON plus ``slices`` and ``slice_tags`` (the full
    slices only), ``static_nodes`` / ``static_edges`` (the edges touching a
    static node, with the network's names), which a 2-TBN cannot express, and
    ``partial_slice``: ``None`` when every slice is full, else
    ``{"tag": tag, "nodes": [...], "edges": [[parent, child], ...]}`` with the
    partial slice's nodes and every edge touching them (network names and
    order), so nothing is dropped silently; an edge between a static node and a
    partial-slice node is listed there and not in ``static_edges``. ``observed``
    holds the bases observed in every full slice.
    A base that itself ends in ``_<digits>`` is read as part of the tag, so such
    template names do not survive ``unroll`` followed by this function.
    """
    parts = {x: m.groups() for x in network.nodes if (m := _SLICE_NAME.fullmatch(x))}
    static = [x for x in network.nodes if x not in parts]
    tags = sorted(
        {tag for _, tag in parts.values()},
        key=lambda tag: (tuple(int(p) for p in tag.split("_")), tag),
    )
    if len(tags) < 2:
        raise NetworkError(
            f"no slice suffix was found in {network.name!r}: need names <base>_<digits> "
            "in at least 2 slices"
        )
    position = {tag: i for i, tag in enumerate(tags)}
    slice_of = {x: position[tag] for x, (_, tag) in parts.items()}
    base = {x: b for x, (b, _) in parts.items()}
    members: list[dict[str, str]] = [{} for _ in tags]  # per slice: base -> node name
    for x, (b, _) in parts.items():
        members[slice_of[x]][b] = x
    copy: dict[str, str] = {}  # base -> its node in the first slice holding it
    for group in members:
        for b, x in group.items():
            copy.setdefault(b, x)
    is_partial = len(members[-1]) < len(copy)
    full = members[:-1] if is_partial else members
    full_tags = tags[: len(full)]
    for tag, group in zip(full_tags, full):
        for b, x in copy.items():
            if b not in group:
                raise NetworkError(f"slice {tag!r} has no node {b}_{tag} (the copy of {x})")
    first = full[0]
    for group in members[1:]:
        for b, x in group.items():
            if network.states[x] != network.states[first[b]]:
                raise NetworkError(
                    f"node {x} has {network.states[x]} states but {first[b]} has "
                    f"{network.states[first[b]]}"
                )
    if is_partial and len(full) < 2:
        raise NetworkError(
            f"{network.name!r} has only 1 full slice ({tags[0]!r}) before the partial slice "
            f"{tags[-1]!r}: need at least 2 full slices"
        )

    intra: list[list[tuple[str, str]]] = [[] for _ in tags]
    temporal: list[list[tuple[str, str]]] = [[] for _ in tags]
    static_edges = []
    partial_edges = []
    last = len(tags) - 1
    for u, v in network.edges:
        touches_partial = is_partial and (slice_of.get(u) == last or slice_of.get(v) == last)
        if u not in base or v not in base:
            (partial_edges if touches_partial else static_edges).append([u, v])
            continue
        su, sv = slice_of[u], slice_of[v]
        if sv == su:
            intra[sv].append((u, v))
        elif sv == su + 1:
            temporal[sv].append((u, v))
        else:
            why = "a higher-order model" if sv > su else "an edge back in time"
            raise NetworkError(
                f"edge {u} -> {v} goes from slice {tags[su]!r} to slice {tags[sv]!r} ({why}): "
                "a 2-slice template only has edges within a slice or to the next slice"
            )
        if touches_partial:
            partial_edges.append([u, v])
    for t in range(1, len(full)):
        _check_same("intra-slice", tags[t], intra[0], tags[0], intra[t], base)
    for t in range(2, len(full)):
        _check_same("temporal", tags[t], temporal[1], tags[1], temporal[t], base)

    partial_slice = None
    if is_partial:
        tag = tags[-1]
        for kind, reference, edges in (
            ("intra-slice", intra[0], intra[last]),
            ("temporal", temporal[1], temporal[last]),
        ):
            want = {(base[u], base[v]) for u, v in reference}
            for u, v in edges:
                if (base[u], base[v]) not in want:
                    raise NetworkError(
                        f"partial slice {tag!r} has {kind} edge {u} -> {v} but the template "
                        f"(from the full slices) has no {kind} edge {base[u]} -> {base[v]}"
                    )
        partial_slice = {
            "tag": tag,
            "nodes": [x for x in network.nodes if slice_of.get(x) == last],
            "edges": partial_edges,
        }

    observed = [b for b in first if all(g[b] in network.observed for g in full)]
    return {
        "name": network.name,
        "nodes": [{"id": b, "states": network.states[x]} for b, x in first.items()],
        "edges": [[base[u], base[v]] for u, v in intra[0]],
        "temporal_edges": [[base[u], base[v]] for u, v in temporal[1]],
        "observed": observed,
        "slices": len(full),
        "slice_tags": full_tags,
        "static_nodes": static,
        "static_edges": static_edges,
        "partial_slice": partial_slice,
    }
