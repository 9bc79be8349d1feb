"""Counting and listing optimal mappings: the count is exact, the list can be capped."""

from __future__ import annotations

import pytest

from dcmap_dist import load_network, solve
from dcmap_dist.cost.user import FunctionCost
from search_costs import random_network


def test_count_equals_the_full_list_on_random_graphs():
    tie_heavy = FunctionCost(lambda ctx: 1 + len(ctx.nodes) % 2, "parity")
    for seed in range(40):
        network = random_network(500 + seed)
        for model in ("dcmap", tie_heavy):
            result = solve(network, model, max_solutions=None)
            assert result.solutions_complete
            assert result.solution_count == len(result.solutions) == len(
                {frozenset(map(frozenset, s.clusters)) for s in result.solutions})
            brute = solve(network, model, method="brute", max_solutions=None)
            assert brute.solution_count == result.solution_count


def test_a_capped_list_keeps_the_exact_count():
    child = load_network("child")
    everything = solve(child, max_solutions=None)
    capped = solve(child, max_solutions=100)
    assert everything.solutions_complete and everything.solution_count == len(everything.solutions) > 100
    assert len(capped.solutions) == 100 and not capped.solutions_complete
    assert capped.solution_count == everything.solution_count
    listed = {frozenset(map(frozenset, s.clusters)) for s in everything.solutions}
    assert {frozenset(map(frozenset, s.clusters)) for s in capped.solutions} <= listed
    assert capped.first_optimal_iteration == everything.first_optimal_iteration


def test_disconnected_counts_multiply():
    sachs = load_network("sachs")
    whole = solve(sachs, max_solutions=None)
    parts = [solve(part, max_solutions=None) for part in sachs.components()]
    assert whole.solution_count == parts[0].solution_count * parts[1].solution_count
    assert len(whole.solutions) == whole.solution_count


def test_max_solutions_must_be_positive():
    with pytest.raises(ValueError, match="max_solutions"):
        solve(load_network("paper-example"), max_solutions=0)


# -- the Python API checks its arguments as the command line does (issue 30) -------------------


@pytest.mark.parametrize("argument,value,message", [
    ("time_limit", -1, "time_limit must be a positive number"),
    ("time_limit", 0, "time_limit must be a positive number"),
    ("max_iterations", 0, "max_iterations must be a positive integer"),
    ("max_iterations", 2.5, "max_iterations must be a positive integer"),
    ("memory_limit_mb", float("nan"), "memory_limit_mb must be a positive number"),
    ("checkpoint_every", -5, "checkpoint_every must be a positive number"),
    ("alpha", 1.5, "alpha must be a probability"),
    ("seed", "x", "seed must be an integer"),
    ("workers", 0, "workers must be a positive integer"),
    ("checkpoint", "/dev/null", "it is a file, not a folder"),
    ("address", "auto", "address 'auto' is used only by a search on Ray workers"),
])
def test_solve_refuses_bad_arguments_before_any_work(argument, value, message):
    from dcmap_dist.solve import solve

    with pytest.raises(ValueError, match=message):
        solve("asia", **{argument: value})
