"""The model of many workers (run/model.py) proves the serial search's optimum and
optimal-mapping count on any number of workers, runs the same on both engines (their
logs of work equal, expansion for expansion), counts the work a Ray run with steps of
the same number of expansions makes (within 10%), and the breakdown of the work
against the serial search's (search/worklog.py) adds up."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcmap_dist.compiled import native_built
from dcmap_dist.cost.user import load_cost
from dcmap_dist.io.load import load_network
from dcmap_dist.run.model import model_search, serial_run
from dcmap_dist.search.problem import Problem
from dcmap_dist.search.worklog import KINDS, breakdown

from search_costs import COST_MODELS, random_network

NETWORKS = Path(__file__).resolve().parents[1].parent / "shared" / "networks"


def problem_of(network, model) -> Problem:
    part = max(network.components(), key=len)
    return Problem(part, model, "merge", graph=network)


@pytest.mark.parametrize("seed", range(6))
def test_the_model_proves_the_serial_optimum_on_any_number_of_workers(seed):
    network = random_network(seed, 12, 16)
    problem = problem_of(network, load_cost(COST_MODELS[["dcmap-cpt", "tie", "hash"][seed % 3]]))
    serial = serial_run(problem)
    for workers, expansions, depth in ((1, 10, 2), (3, 7, 2), (8, 5, 1), (16, 3, 3)):
        run = model_search(problem, workers, expansions, depth)
        assert (run.optimal_cost, run.solution_count) == (serial.optimal_cost, serial.solution_count), \
            f"seed {seed}, W = {workers}"
        assert run.iterations == sum(run.worker_iterations)
        assert run.iterations <= workers * run.span and run.span <= run.iterations  # a round's longest step
    known = model_search(problem, 4, 5, g_min=serial.optimal_cost)  # the proof alone
    assert (known.optimal_cost, known.solution_count) == (serial.optimal_cost, serial.solution_count)


@pytest.mark.skipif(not native_built(), reason="the native engine is not built")
def test_the_model_runs_the_same_on_both_engines(monkeypatch):
    """Batches, G_min and the records an arrival dominates: the Python engine's logs
    (from the dive's first mapping: with the beam's, child is proven before an arrival
    dominates anything)."""
    problem = problem_of(load_network("child"), load_cost("dcmap"))
    native = model_search(problem, 4, 40, log=True, first_budget=0)
    monkeypatch.setenv("DCMAP_ENGINE", "python")
    python = model_search(problem, 4, 40, log=True, first_budget=0)
    assert native.worker_iterations == python.worker_iterations
    assert native.logs == python.logs
    assert any(flag for log in python.logs for flag in log.arrived)  # arrivals did dominate


def test_the_breakdown_adds_up():
    problem = problem_of(load_network("child"), load_cost("dcmap"))
    serial = serial_run(problem, log=True)
    counts = breakdown(serial.logs[0], serial.logs, serial.optimal_cost)
    assert counts == {**dict.fromkeys(KINDS, 0), "serial": serial.iterations, "total": serial.iterations,
                      "above_any": counts["above_any"]}
    assert sum(bound > serial.optimal_cost * (1 + 1e-9) for bound in serial.logs[0].bounds) == counts["above_any"]
    run = model_search(problem, 8, 20, log=True)
    counts = breakdown(serial.logs[0], run.logs, serial.optimal_cost)
    assert counts["total"] == run.iterations == sum(counts[kind] for kind in KINDS)
    assert counts["serial"] <= serial.iterations


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("workers", [2, 4])
def test_the_model_counts_the_work_of_a_ray_run_with_steps_in_expansions(monkeypatch, workers):
    """Steps of 1,000 expansions (DCMAP_STEP_ITERATIONS): the Ray run's expansions within
    10% of the model's, its answer the model's. (Insurance: about 290,000 expansions, 70
    to 150 rounds; on child's 13,000, 10 rounds, the order of one step decides 10%.)"""
    from dcmap_dist.solve import solve

    path = NETWORKS / "insurance.bif.gz"
    if not path.exists():
        pytest.skip(f"{path} is not here")
    network = load_network(str(path))
    model = model_search(problem_of(network, load_cost("dcmap")), workers, 1000)
    monkeypatch.setenv("DCMAP_STEP_ITERATIONS", "1000")
    result = solve(network, "dcmap", workers=workers, max_solutions=None)
    assert (result.optimal_cost, result.solution_count) == (model.optimal_cost, model.solution_count)
    assert abs(result.iterations / model.iterations - 1) <= 0.10, (result.iterations, model.iterations)
