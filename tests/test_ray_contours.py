"""The search by contours on Ray workers (run/ray/contours.py): the serial search's
answer exactly (optimum, count, set of optimal partitions) on random graphs, both
schemes, tied costs, either link table; proven bounds that rise and stay below the
optimum; contours given up and searched lower; a contour at the optimum to the
tolerance; and a stopped search whose checkpoint keeps its contour and resumes into
it on another number of workers or serially (and a serial one's on workers)."""

from __future__ import annotations

import math

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.io.load import load_network
from dcmap_dist.limits import Limits, StepEnd, StopReason, Stopwatch
from dcmap_dist.progress import Progress
from dcmap_dist.run.loop import Turn
from dcmap_dist.run.ray.contours import RayContourSearch
from dcmap_dist.search.heuristics import incumbent
from dcmap_dist.search.problem import Problem
from dcmap_dist.search.state import Improvement
from dcmap_dist.solve import solve

from search_costs import random_network
from test_contours import MODELS, answer, cases


def rising(result) -> bool:
    """Whether the bounds a search reported rose, each at most its optimum."""
    bounds = [sample["lower_bound"] for sample in result.bounds]
    return bounds == sorted(bounds) and bounds[-1] <= result.optimal_cost * (1 + 1e-9)


def test_contours_on_workers_give_the_serial_answer(ray_session):
    wrong = []
    for k, (label, network, model, scheme) in enumerate(cases(range(4))):
        serial = solve(network, model, scheme, max_solutions=None)
        table = "coordinator" if k % 3 == 2 else "sharded"
        on_workers = solve(network, model, scheme, max_solutions=None, contours=True, workers=2 + k % 2,
                           link_table=table)
        if answer(on_workers) != answer(serial):
            wrong.append(f"{label} ({table}): {answer(on_workers)[:2]} on workers, {answer(serial)[:2]} serially")
        assert on_workers.trace[-1]["cost"] == pytest.approx(on_workers.optimal_cost, rel=1e-9), label
        assert on_workers.lower_bound == on_workers.optimal_cost and rising(on_workers), label
    assert not wrong, "\n".join(wrong)


def test_contours_on_workers_prove_bounds_that_rise(ray_session):
    """water's contours prove a dozen bounds, each below the optimum, in order."""
    result = solve(load_network("water"), contours=True, workers=2)
    contours = result.components[0]["contours"]
    values = [value for value, _ in contours]
    assert len(contours) >= 8 and values == sorted(values) and values[-2] < result.optimal_cost
    assert rising(result) and len({sample["lower_bound"] for sample in result.bounds}) >= 4
    assert sum(result.components[0]["distributed"]["worker_iterations"]) == result.iterations  # every contour's


def test_contours_on_workers_are_given_up_and_searched_lower(ray_session, monkeypatch):
    """With budgets of twice the last contour's expansions and turns of 20 ms, insurance's
    contours are given up and searched again halfway down (about 170,000 expansions'
    worth in the runs measured; how many depends on the turns, so it is not asserted:
    the scripted test below is the deterministic one), and the answer is still the
    serial search's. (child's contours are too small to give up between two turns.)"""
    monkeypatch.setattr("dcmap_dist.run.contours.FLOOR", 20)
    monkeypatch.setattr("dcmap_dist.run.contours.BUDGET", 1)
    monkeypatch.setattr("dcmap_dist.run.ray.driver.PROGRESS_SECONDS", 0.02)
    path = Path(__file__).parents[2] / "shared" / "networks" / "insurance.bif.gz"
    if not path.exists():
        pytest.skip(f"{path} is not here")
    network = load_network(path)
    serial = solve(network, max_solutions=None)
    result = solve(network, max_solutions=None, contours=True, workers=2)
    contours = result.components[0]["contours"]
    assert answer(result) == answer(serial), (answer(result)[:2], answer(serial)[:2])
    assert rising(result), [sample["lower_bound"] for sample in result.bounds]
    assert [value for value, _ in contours] == sorted(value for value, _ in contours), contours


def test_a_contour_on_workers_at_the_optimum_keeps_it_and_its_ties(ray_session, monkeypatch):
    """A contour at the optimum reaches the optimal mappings without counting them an
    improvement: searched again just above, the answer and trace are the serial ones."""
    network, model = random_network(3, 7, 11), MODELS[2]
    serial = solve(network, model, max_solutions=None, first_budget=0)
    monkeypatch.setattr("dcmap_dist.run.contours.next_value", lambda *_: serial.optimal_cost * (1 - 5e-10))
    result = solve(network, model, max_solutions=None, contours=True, workers=2, first_budget=0)
    assert result.trace[0]["cost"] > serial.optimal_cost  # the dive's first mapping: the contour is below it
    assert answer(result) == answer(serial)
    assert result.trace[-1]["cost"] == pytest.approx(serial.optimal_cost, rel=1e-9)


def test_a_stopped_search_on_workers_resumes_into_its_contour_anywhere(ray_session, tmp_path):
    """child stopped after 200 expansions by contours on 2 workers has proved that no
    mapping costs 608.8 or less; its checkpoint resumes into its contour on 3 workers
    and serially, and a serial search's on 2 workers, each to the serial answer."""
    network = load_network("child")
    serial = solve(network, max_solutions=None)
    for k, (stopped_on, resumed_on) in enumerate([(2, 3), (2, 1), (1, 2)]):
        folder = tmp_path / f"ck{k}"
        stopped = solve(network, max_solutions=None, max_iterations=200, contours=True, workers=stopped_on,
                        checkpoint=folder)
        assert stopped.stop_reason == "max_iterations" and stopped.iterations == 200
        assert 608 < stopped.lower_bound < serial.optimal_cost and stopped.optimal_cost >= serial.optimal_cost - 1e-6
        resumed = solve(None, max_solutions=None, resume=folder, workers=resumed_on)
        assert answer(resumed) == answer(serial), (stopped_on, resumed_on)
        assert resumed.iterations > stopped.iterations and rising(resumed)


class ScriptedSearch:
    """A stand-in for :class:`~dcmap_dist.run.ray.driver.RaySearch` whose coordinator
    plays a script of turns: ``(stopped, expansions, G_min as a share of the value it
    was begun with, the results' stop)``."""

    def __init__(self, problem, first, script):
        self.problem, self.first, self.script = problem, first, list(script)
        self.trace, self.calls, self.contour = [], [], None
        self.g_min = self.held = first.cost
        self.progress = Progress(iterations=0, best_cost=first.cost, lower_bound=0.0, open_branches=1,
                                 elapsed_seconds=0.0, rate=0.0, peak_memory_mb=0.0)

    def begin(self, options, limits, resume, started):
        self.calls.append(("begin",))
        self.g_min = self.held = resume.g_min
        self.progress = replace(self.progress, iterations=resume.iterations)

    def advance(self, saver):
        stopped, expansions, share, self.stop = self.script.pop(0)
        self.g_min = self.held * share
        if share < 1:
            self.trace = [Improvement(self.progress.iterations + expansions, 0.0, self.g_min, None)]
        self.progress = replace(self.progress, iterations=self.progress.iterations + expansions,
                                best_cost=self.g_min, lower_bound=self.g_min)
        return Turn(stopped, self.progress)

    def results(self):
        reached = SimpleNamespace(best=self.g_min) if self.g_min < self.held else None
        return SimpleNamespace(stop=self.stop, iterations=self.progress.iterations, trace=list(self.trace),
                               final=reached, statistics=None)

    def halt(self, reason):
        self.calls.append(("halt", reason))

    def go_on(self):
        self.calls.append(("go_on",))


def test_a_contour_halted_at_its_budget_as_it_reached_a_mapping_goes_on(monkeypatch):
    """The coordinator is halted at the contour's budget, and the steps it drains reach a
    mapping: the contour is then the ordinary search, and the coordinator goes on with it
    rather than stopping there (or giving the contour up) until the proof."""
    monkeypatch.setattr("dcmap_dist.run.contours.FLOOR", 20)
    problem = Problem(load_network("child"), DcmapCost("cpt"), "merge")
    first = incumbent(problem, Stopwatch(Limits()), 0)
    search = ScriptedSearch(problem, first, [(False, 1000, 1.0, None),  # held at the value: no mapping yet
                                             (True, 10, 0.999, StopReason.MAX_ITERATIONS),
                                             (True, 500, 0.999, StopReason.FINISHED)])
    contours = RayContourSearch(search, Limits(), None)
    contours.begin(None, Limits(), None, 0.0)
    value = contours.contour.value
    assert not contours.advance(None).stopped and search.calls[-1] == ("halt", StopReason.MAX_ITERATIONS)
    assert not contours.advance(None).stopped and search.calls[-1] == ("go_on",)
    assert contours.advance(None).stopped and contours.stop == StepEnd.IDLE
    assert contours.contour.value == value and contours.contour.given_up == 0
    assert [call[0] for call in search.calls] == ["begin", "halt", "go_on"]


def test_a_contour_on_workers_over_its_budget_is_halted_and_given_up(monkeypatch):
    """Past its budget with no mapping reached, the contour's coordinator is halted, and
    the contour halfway between the proven bound and it is begun on the same workers."""
    monkeypatch.setattr("dcmap_dist.run.contours.FLOOR", 20)
    problem = Problem(load_network("child"), DcmapCost("cpt"), "merge")
    first = incumbent(problem, Stopwatch(Limits()), 0)
    search = ScriptedSearch(problem, first, [(False, 1000, 1.0, None), (True, 10, 1.0, StopReason.MAX_ITERATIONS)])
    contours = RayContourSearch(search, Limits(), None)
    contours.begin(None, Limits(), None, 0.0)
    given_up = contours.contour
    assert not contours.advance(None).stopped and not contours.advance(None).stopped
    assert [call[0] for call in search.calls] == ["begin", "halt", "begin"]
    assert contours.contour.value == pytest.approx((given_up.proven + given_up.value) / 2)
    assert contours.contour.given_up == 1 and contours.contour.before == 1010


def test_a_branch_on_its_way_keeps_the_bound_read_from_the_reports_down():
    """A worker's least bound is asked now and then and kept between; a branch sent to
    another worker is in neither's open set while it travels. The bound the coordinator
    reads from the reports counts it from the step that sent it until the receiver reports
    a least bound taken after it came in (before, a contour's proven bound on insurance
    passed the optimum in three runs of six)."""
    from dcmap_dist.run.ray.protocol import StepReport, Totals
    from dcmap_dist.run.ray.rules import next_order, take_in
    from dcmap_dist.run.ray.steps import WorkerSlot

    slots = [WorkerSlot(actor=None, report=StepReport(open_branches=3, least_bound=50.0)) for _ in range(2)]

    def step(i: int) -> list:
        return next_order(slots[i], g_min=100.0, iterations=0, elapsed=0.0, seconds=0.1, limits=Limits(),
                          allowance=None, expansions=None, destinations=2, bound=False)[1]

    step(0)
    take_in(slots, 0, StepReport(open_branches=3, sent=[0, 1], sent_bounds=[math.inf, 10.0]), [None, "batch"], True,
            Totals())
    assert slots[1].unreported_bound() == 10.0  # in its inbox
    assert step(1) == ["batch"] and slots[1].unreported_bound() == 10.0  # taken by a running step
    take_in(slots, 1, StepReport(open_branches=3), [None, None], True, Totals())
    assert slots[1].unreported_bound() == 10.0  # that step reported no bound: its last one predates the batch
    assert slots[1].report.least_bound == 50.0
    step(1)
    take_in(slots, 1, StepReport(open_branches=3, least_bound=12.0), [None, None], True, Totals())
    assert slots[1].unreported_bound() == math.inf and slots[1].report.least_bound == 12.0
