"""The search by contours (run/contours.py): the ordinary search's answer exactly (its
optimum, count and set of optimal partitions) on random graphs, both schemes, tied
costs, both engines; every proven bound at most the optimum and rising; a stopped
search that reports its proven bound and resumes from its checkpoint into its contour;
and the schedule of the contours' values."""

from __future__ import annotations

import math

import pytest

from dcmap_dist.compiled import native_built
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import FunctionCost
from dcmap_dist.io.load import load_network
from dcmap_dist.limits import Limits
from dcmap_dist.run.contours import BUDGET, FEW, FIRST_STEP, FLOOR, GROWTH, ContourSearch, budget, next_value
from dcmap_dist.search.problem import Problem
from dcmap_dist.search.state import Contour
from dcmap_dist.settings import SearchSettings
from dcmap_dist.solve import solve

from search_costs import partition, random_network, tie_cost, wide_network

MODELS = (DcmapCost("paper"), DcmapCost("cpt"), FunctionCost(tie_cost))
ENGINES = ["python", pytest.param("native", marks=pytest.mark.skipif(not native_built(),
                                                                      reason="the native engine is not built"))]


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    """Each test runs on either engine."""
    monkeypatch.setenv("DCMAP_ENGINE", request.param)
    return request.param


def answer(result) -> tuple[float, int, frozenset]:
    """A solve's optimum (rounded), count and set of optimal partitions."""
    assert result.proven_optimal and result.solutions_complete
    return (round(result.optimal_cost, 6), result.solution_count,
            frozenset(partition(s.clusters) for s in result.solutions))


def proven_bounds(problem: Problem) -> tuple[list[float], ContourSearch]:
    """Run a search by contours to its end, one turn at a time (a turn ends with each
    exhausted contour), and the proven bound after every turn."""
    search = ContourSearch(problem, 0.6, 0, None, None, None, reports=False)
    bounds = [search.contour.proven]
    while not search.advance(None).stopped:
        bounds.append(search.contour.proven)
    return bounds, search


def cases(seeds) -> list[tuple[str, object, object, str]]:
    """(label, network, model, scheme): random graphs, plain and wide, each model in
    turn (the third ties many mappings), both schemes."""
    found = []
    for seed in seeds:
        network = wide_network(seed) if seed % 2 else random_network(seed, 7, 11)
        for scheme in ("merge", "single"):
            found.append((f"seed {seed} {scheme}", network, MODELS[seed % 3], scheme))
    return found


@pytest.mark.parametrize("seeds", [range(12), pytest.param(range(12, 60), marks=pytest.mark.slow)],
                         ids=["12-graphs", "48-graphs"])
def test_contours_give_the_ordinary_answer(engine, seeds):
    wrong = []
    for label, network, model, scheme in cases(seeds):
        ordinary = solve(network, model, scheme, max_solutions=None)
        by_contours = solve(network, model, scheme, max_solutions=None, contours=True)
        if answer(by_contours) != answer(ordinary):
            wrong.append(f"{label}: {answer(by_contours)[:2]} by contours, {answer(ordinary)[:2]} ordinary")
        assert math.isclose(by_contours.trace[-1]["cost"], by_contours.optimal_cost, rel_tol=1e-9), label
        assert by_contours.lower_bound == by_contours.optimal_cost
    assert not wrong, "\n".join(wrong)


def test_every_proven_bound_is_below_the_optimum_and_they_rise(engine):
    rose = 0
    for label, network, model, scheme in [*cases(range(12)), ("child", load_network("child"), MODELS[1], "merge")]:
        problem = Problem(network.components()[0], model, scheme, graph=network)
        bounds, search = proven_bounds(problem)
        optimum = search.finish().outcome.best_cost
        assert bounds == sorted(bounds), label
        assert bounds[0] == search.root_bound <= optimum * (1 + 1e-9), label
        assert all(bound < optimum for bound in bounds[1:]), label  # optimum > every exhausted contour's value
        rose += len(set(bounds)) > 1
    assert rose >= 6  # most searches went through several contours


def test_a_stopped_search_reports_its_proven_bound_and_resumes_into_its_contour(engine, tmp_path):
    """child by contours: 200 expansions prove that no mapping costs 608.8 or less (its
    root bound is 566.4, where the ordinary search's bound still is after 200); stopped
    there, it says so, and resumed from its checkpoint it ends with the ordinary answer."""
    network = load_network("child")
    ordinary = solve(network, max_solutions=None)
    stopped_ordinary = solve(network, max_solutions=None, max_iterations=200)
    stopped = solve(network, max_solutions=None, max_iterations=200, contours=True, checkpoint=tmp_path / "ck")
    assert not stopped.proven_optimal and stopped.stop_reason == "max_iterations"
    assert stopped.lower_bound > 608 > stopped_ordinary.lower_bound
    assert stopped.lower_bound < ordinary.optimal_cost
    assert stopped.bounds[-1]["lower_bound"] == stopped.lower_bound
    resumed = solve(None, max_solutions=None, resume=tmp_path / "ck")
    assert answer(resumed) == answer(ordinary)
    assert resumed.iterations > stopped.iterations
    assert resumed.bounds[-1]["lower_bound"] == resumed.optimal_cost


def test_a_search_stopped_in_its_last_contour_resumes_to_the_same_answer(engine, tmp_path):
    """Stopped after the contour that reaches the optimum began (the ordinary search
    from then on), in small steps, each resumed from the checkpoint."""
    network = load_network("child")
    ordinary = solve(network, max_solutions=None)
    result = solve(network, max_solutions=None, max_iterations=800, contours=True, checkpoint=tmp_path / "ck")
    rounds = 0
    while not result.proven_optimal:
        rounds += 1
        result = solve(None, max_solutions=None, max_iterations=800, resume=tmp_path / "ck")
    assert rounds >= 3 and answer(result) == answer(ordinary)


def test_the_next_contour_doubles_the_work():
    root, incumbent = 1000.0, 2000.0
    assert next_value(root, [], incumbent) == pytest.approx(root * (1 + FIRST_STEP))
    assert next_value(0.0, [], incumbent) == pytest.approx(incumbent * FIRST_STEP)  # no bound: a share of the incumbent
    # too few expansions to tell the growth: the step doubles
    assert next_value(root, [(1005.0, FEW - 1)], incumbent) == pytest.approx(1015.0)
    # work e^(G / 10): the step that doubles it is 10 ln 2
    done = [(g, round(math.exp(g / 10))) for g in (130.0, 135.0, 140.0)]
    assert next_value(100.0, done, incumbent) == pytest.approx(140 + 10 * math.log(GROWTH), rel=1e-3)
    # slow growth: twice the last step at most; never past the incumbent
    assert next_value(root, [(1005.0, 5000), (1010.0, 5001)], incumbent) == pytest.approx(1020.0)
    assert next_value(root, [(1500.0, 5000), (1990.0, 5001)], incumbent) == incumbent


def test_contours_are_refused_for_the_baselines():
    with pytest.raises(ValueError, match="dcmap method"):
        SearchSettings(contours=True, method="bfs")


def test_the_limits_hold_over_every_contour(engine):
    """The iteration limit counts every contour's expansions."""
    result = solve(load_network("child"), max_iterations=300, contours=True)
    assert result.stop_reason == "max_iterations" and result.iterations == 300


@pytest.mark.parametrize("shift", [0.0, -5e-10, 5e-10], ids=["at", "just-below", "just-above"])
def test_a_contour_at_the_optimum_within_the_tolerance_keeps_it_and_its_ties(engine, monkeypatch, shift):
    """A contour whose value is the optimum to the tolerance reaches the optimal mappings
    but ``G_min`` held there does not count them as an improvement (SPEC section 3): it is
    searched again just above, and the answer and the trace are the ordinary search's."""
    network = random_network(3, 7, 11)
    model = MODELS[2]  # integer costs, many ties
    ordinary = solve(network, model, max_solutions=None, first_budget=0)
    optimum = ordinary.optimal_cost
    monkeypatch.setattr("dcmap_dist.run.contours.next_value", lambda *_: optimum * (1 + shift))
    by_contours = solve(network, model, max_solutions=None, contours=True, first_budget=0)
    assert by_contours.trace[0]["cost"] > optimum  # the dive's first mapping: the contour is below it
    assert answer(by_contours) == answer(ordinary)
    assert by_contours.trace[-1]["cost"] == pytest.approx(optimum, rel=1e-9)


def test_a_contour_over_its_budget_is_given_up_for_a_lower_one(engine, monkeypatch):
    """With budgets of a few expansions, contours are given up and searched again
    halfway down, and the answer is still the ordinary search's."""
    monkeypatch.setattr("dcmap_dist.run.contours.FLOOR", 20)
    monkeypatch.setattr("dcmap_dist.run.contours.BUDGET", 1)
    gave_up = 0
    for label, network, model, scheme in [*cases(range(4)), ("child", load_network("child"), MODELS[1], "merge")]:
        ordinary = solve(network, model, scheme, max_solutions=None)
        by_contours = solve(network, model, scheme, max_solutions=None, contours=True)
        assert answer(by_contours) == answer(ordinary), label
        contours = by_contours.components[0]["contours"]
        assert [value for value, _ in contours] == sorted(value for value, _ in contours), label
        gave_up += sum(expansions for _, expansions in contours) < by_contours.iterations
    assert gave_up >= 2


def test_a_contour_may_take_a_few_times_its_expected_work_and_more_after_each_given_up():
    assert budget(Contour(1.0, 0.0)) == FLOOR
    done = [(1.0, 10), (2.0, 10 * FLOOR)]
    assert budget(Contour(3.0, 2.0, done=done)) == BUDGET * GROWTH * 10 * FLOOR
    assert budget(Contour(2.5, 2.0, done=done, given_up=2)) == 4 * BUDGET * GROWTH * 10 * FLOOR


def test_the_bound_reported_never_falls_when_a_contour_is_given_up(engine, monkeypatch):
    """Reported after every few expansions (turns of 20 µs), the bound never falls, also
    when a contour is given up for a lower one that starts again at the root."""
    monkeypatch.setattr("dcmap_dist.run.contours.FLOOR", 20)
    monkeypatch.setattr("dcmap_dist.run.contours.BUDGET", 1)
    monkeypatch.setattr("dcmap_dist.run.contours.TURN_SECONDS", 2e-5)
    network = load_network("child")
    search = ContourSearch(Problem(network, DcmapCost("cpt"), "merge"), 0.6, 0, None, None, None, reports=False)
    reported, given_up = [], 0
    while True:
        before = search.contour
        turn = search.advance(None)
        given_up += search.contour.given_up > before.given_up
        reported.append(search._report(search.engine.least_bound()).lower_bound)
        if turn.stopped:
            break
    assert given_up >= 1 and reported == sorted(reported)
    assert reported[-1] == pytest.approx(search.finish().outcome.best_cost)
