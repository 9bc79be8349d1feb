"""Tests of the search's first mapping (search/heuristics.py, search/beam.py; issue 57):
the beam search's mapping is feasible, costs what the cost model says and never more
than the greedy dive's; a limit that stops it keeps what was found before; and the
search's results are the same from the old first mapping and the new one."""

from __future__ import annotations

import math

import pytest
from search_costs import partition, random_network, wide_network
from search_helpers import REL, leaf_clusters, total_cost

from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.io.load import load_network
from dcmap_dist.limits import Limits, SearchInterrupted, StopReason, Stopwatch
from dcmap_dist.model.mappings import check_mapping, mapping_names
from dcmap_dist.search.beam import beam_search, dive_from
from dcmap_dist.search.heuristics import all_singletons, greedy_dive, incumbent
from dcmap_dist.search.problem import Problem
from dcmap_dist.settings import SearchSettings
from dcmap_dist.solve import solve

PAPER, CPT = DcmapCost("paper"), DcmapCost("cpt")
GRAPHS = [random_network(seed, 12, 18) for seed in range(6)] + [wide_network(seed) for seed in range(6)]


def problem_of(network, model=CPT, scheme: str = "merge") -> Problem:
    return Problem(network, model, scheme)


class StopsAfter(Stopwatch):
    """A stopwatch whose limit is reached at the ``calls``-th check inside an expansion."""

    def __init__(self, calls: int) -> None:
        super().__init__(Limits())
        self.calls = calls

    def check_within(self) -> None:
        self.calls -= 1
        if self.calls < 0:
            raise SearchInterrupted(StopReason.TIME_LIMIT)


def counted(problem: Problem, run) -> int:
    """How many checks of the limits ``run(watch)`` makes."""
    watch = StopsAfter(10 ** 12)
    run(watch)
    return 10 ** 12 - watch.calls


@pytest.mark.parametrize("scheme", ["merge", "single"])
@pytest.mark.parametrize("index", range(len(GRAPHS)))
def test_the_first_mapping_is_feasible_priced_and_no_worse_than_the_dive(index, scheme):
    network = GRAPHS[index]
    model = PAPER if index % 2 else CPT
    problem = problem_of(network, model, scheme)
    first = incumbent(problem, Stopwatch(Limits()))
    clusters = mapping_names(problem.topo, leaf_clusters(problem, first))
    check_mapping(network, clusters, scheme)  # raises if infeasible
    assert total_cost(network, clusters, model) == pytest.approx(first.cost, rel=REL)
    assert first.cost <= min(greedy_dive(problem).cost, all_singletons(problem).cost) * (1 + REL)


def test_the_beam_finds_better_than_the_dive_on_water():
    """The point of it (results/early-incumbent.md): water's greedy dive costs 838,762.6
    and all singletons 42,999.2; the beam finds the optimum, 34,967.4."""
    problem = problem_of(load_network("water"))
    assert incumbent(problem, Stopwatch(Limits())).cost == pytest.approx(34967.4, rel=REL)
    assert incumbent(problem, Stopwatch(Limits()), budget=0).cost == pytest.approx(42999.2, rel=REL)


def test_budget_zero_is_the_old_first_mapping():
    for network in GRAPHS:
        problem = problem_of(network)
        old = min(greedy_dive(problem), all_singletons(problem), key=lambda b: b.cost)
        assert incumbent(problem, Stopwatch(Limits()), budget=0) == old


def test_the_beam_keeps_to_its_budget():
    problem = problem_of(load_network("water"))
    dive, depth = dive_from(problem, problem.root())
    for budget in (0, 1, 10, 100):
        found, used = beam_search(problem, dive, 8, budget)
        assert used <= budget + 8 + depth  # the last step's beam, then one dive to finish
        assert found.cost <= dive.cost


def test_a_beam_out_of_time_finishes_its_best_branch_by_the_dive():
    problem = problem_of(load_network("water"))
    singletons = all_singletons(problem)
    found, used = beam_search(problem, singletons, 8, 10 ** 6, seconds=0.0)
    dive, depth = dive_from(problem, problem.root())
    assert used == depth
    assert found.cost == min(dive.cost, singletons.cost)


def test_a_limit_in_the_dive_gives_all_singletons():
    problem = problem_of(load_network("water"))
    assert incumbent(problem, StopsAfter(0)) == all_singletons(problem)


@pytest.mark.parametrize("index", [0, 3, 7])
def test_a_limit_in_the_beam_keeps_the_old_first_mapping(index):
    network = GRAPHS[index]
    problem = problem_of(network)
    old = incumbent(problem, Stopwatch(Limits()), budget=0)
    dive_checks = counted(problem, lambda watch: dive_from(problem, problem.root(), watch))
    whole = counted(problem, lambda watch: incumbent(problem, watch))
    assert whole > dive_checks  # the beam checks the limits too
    for calls in sorted({dive_checks, (dive_checks + whole) // 2, whole - 1}):
        assert incumbent(problem, StopsAfter(calls)) == old


@pytest.mark.parametrize("index", range(len(GRAPHS)))
def test_the_search_is_the_same_from_either_first_mapping(index):
    """Only G_min's start changes: the optimum, the count and the set of optimal
    mappings are those of the search from the old first mapping."""
    network = GRAPHS[index]
    model = PAPER if index % 2 else CPT
    answers = []
    for budget in (0, 4096):
        result = solve(network, model, max_solutions=None, first_budget=budget)
        assert result.proven_optimal and result.solutions_complete
        answers.append((round(result.optimal_cost, 6), result.solution_count,
                        frozenset(partition(s.clusters) for s in result.solutions)))
    assert answers[0] == answers[1]


def test_the_first_mapping_is_the_trace_s_first_improvement():
    old = solve("water", first_budget=0, max_iterations=1)
    new = solve("water", max_iterations=1)
    assert old.trace[0]["iteration"] == new.trace[0]["iteration"] == 0
    assert old.trace[0]["cost"] == pytest.approx(42999.2, rel=REL)
    assert new.trace[0]["cost"] == pytest.approx(34967.4, rel=REL)
    assert new.trace[0]["seconds"] > 0  # when the heuristic had found it


@pytest.mark.parametrize("budget", [-1, 1.5, True])
def test_a_bad_budget_is_refused(budget):
    with pytest.raises(ValueError, match="first_budget"):
        SearchSettings(first_budget=budget)
