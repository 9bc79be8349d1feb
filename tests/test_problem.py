"""Tests of search/problem.py: the expansion tree generates every feasible mapping once,
and expansion makes no reference cycles (the search runs with the collector paused)."""

from __future__ import annotations

import gc
from collections import Counter

import pytest
from search_costs import hash_cost, random_network, same_cluster_cost
from search_helpers import SCHEMES, close, leaf_clusters, total_cost, walk_tree

from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import load_cost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.model.mappings import enumerate_mappings
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.problem import Problem


@pytest.mark.parametrize("scheme", SCHEMES)
def test_expansion_tree_generates_every_mapping_once(scheme):
    problems = []
    for seed in range(500, 540):
        network = random_network(seed, 5, 9)
        problem = Problem(network, hash_cost_model(), scheme)
        _, leaves = walk_tree(problem)
        got = Counter(leaf_clusters(problem, leaf) for leaf in leaves)
        expected = {tuple(sorted(m)) for m in enumerate_mappings(network, scheme)}
        dupes = [c for c, k in got.items() if k > 1]
        if dupes or set(got) != expected:
            problems.append(f"seed {seed}: {len(got)} distinct leaves ({len(dupes)} repeated), "
                            f"{len(expected)} feasible mappings")
            continue
        # the incremental cost of each leaf is the cost of its mapping
        topo = problem.topo
        for leaf in leaves:
            clusters = [topo.names(c) for c in leaf_clusters(problem, leaf)]
            evaluated = total_cost(network, clusters, hash_cost)
            if not close(evaluated, leaf.cost):
                problems.append(f"seed {seed}: leaf cost {leaf.cost} != evaluated {evaluated}")
    assert not problems, "\n".join(problems[:20])


def hash_cost_model():
    from dcmap_dist.cost.user import FunctionCost
    return FunctionCost(hash_cost)


def one_step(problem: Problem, iterations: int) -> None:
    """One step of the serial loop from the root, of at most ``iterations`` expansions."""
    explorer = Explorer(problem, 0.6, 0, owner=1)
    root = problem.root()
    explorer.receive([(problem.link_key(root), root)])
    explorer.step(Stopwatch(Limits()), max_iterations=iterations)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_expansion_makes_no_reference_cycles(child, scheme):
    # with the built-in model a step pauses the garbage collector and freezes what it
    # made (Explorer.step): sound only if the search itself makes no cyclic garbage,
    # which would otherwise be frozen for good (a recursive closure in the combination
    # enumeration made one cycle per expansion)
    networks = [child] + [random_network(seed, 8, 12) for seed in range(20)]
    gc.collect()
    gc.disable()
    try:
        for network in networks:
            one_step(Problem(network, DcmapCost(), scheme), 3000)
            assert gc.collect() == 0, network.name
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_user_models_cycles_are_left_to_the_collector(child):
    # a user model may make cycles: its steps keep the collector running and freeze
    # nothing at their end, so the cycles are still found
    made = []

    def cyclic(ctx):
        loop = []
        loop.append(loop)
        made.append(1)
        return same_cluster_cost(ctx)

    problem = Problem(child, load_cost(cyclic), "merge")
    collected = []

    def count(phase, info):
        if phase == "stop":
            collected.append(info["collected"])

    gc.callbacks.append(count)
    try:
        one_step(problem, 300)
        gc.collect()
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
    assert made and sum(collected) > 0  # (cycles made before the step are frozen at its start)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_children_at_one_point_hold_one_frontier_object_of_shared_items_and_masks(scheme):
    # most open branches repeat a frontier another branch holds: the children of every
    # expansion take the first frontier met at their point from the bound's memo, so equal
    # frontiers are one object (docs/search.md, "The search's state in memory")
    for seed in range(600, 615):
        problem = Problem(random_network(seed, 9, 11), DcmapCost(), scheme)
        records, _ = walk_tree(problem)
        objects: dict[tuple, set[int]] = {}
        for branch, _, _ in records:
            if branch.layer > 0 and branch.assigned != 0:  # made by an expansion (not the root, not advanced)
                objects.setdefault((branch.layer, branch.assigned, branch.frontier), set()).add(id(branch.frontier))
        assert objects and all(len(ids) == 1 for ids in objects.values()), seed
        assert len(objects) < sum(1 for branch, _, _ in records if branch.layer > 0 and branch.assigned != 0)
        # and a frontier item (members, message) is one object per value, in every branch
        items: dict[tuple, set[int]] = {}
        for branch, _, _ in records:
            for item in branch.frontier:
                items.setdefault(item, set()).add(id(item))
        assert all(len(ids) == 1 for ids in items.values()), seed
        # and so is every mask a branch holds (a component, its placed nodes, its fixed
        # set, a history's anchors), where Python does not share small ints itself
        masks: dict[int, set[int]] = {}
        for branch, _, _ in records:
            for mask in (*branch.comps, branch.assigned, branch.fixed, *branch.joins):
                if mask > 256:
                    masks.setdefault(mask, set()).add(id(mask))
        assert masks and all(len(ids) == 1 for ids in masks.values()), seed
