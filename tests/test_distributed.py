"""The distributed search on Ray (SPEC section 9) returns exactly what the serial
search returns: the same optimal cost, the same set of optimal partitions and the
same ``solution_count``, proven; also when a worker's process is killed mid-run.

Uses one local Ray for the session (tests/conftest.py, 2 CPUs): W = 4 workers
share 2 cores, which is fine for exactness.
"""

from __future__ import annotations

import math
import os
import signal

import pytest

from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.io.load import load_network
from dcmap_dist.progress import Progress
from dcmap_dist.solve import solve

from search_costs import COST_MODELS, partition, random_network, trace_problem, varied_cost

pytestmark = pytest.mark.usefixtures("ray_session")

N_GRAPHS = 100
FAMILIES = ("dcmap-cpt", "hash", "tie", "dcmap-paper")  # one per graph, in turn


def summary(result) -> tuple:
    return (result.optimal_cost, result.solution_count,
            frozenset(partition(s.clusters) for s in result.solutions))


def disagreement(serial, other, label: str) -> str | None:
    """None if ``other`` is exactly ``serial``'s answer, else what differs."""
    cost_s, count_s, parts_s = summary(serial)
    cost_o, count_o, parts_o = summary(other)
    if not other.proven_optimal:
        return f"{label}: not proven ({other.stop_reason})"
    if not math.isclose(cost_s, cost_o, rel_tol=1e-9):
        return f"{label}: optimum {cost_o} != serial {cost_s}"
    if count_s != count_o or parts_s != parts_o:
        return (f"{label}: {count_o} optimal mappings ({len(parts_o)} listed) != serial {count_s} "
                f"({len(parts_s)}); missing {len(parts_s - parts_o)}, extra {len(parts_o - parts_s)}")
    if len(other.solutions) != len({partition(s.clusters) for s in other.solutions}):
        return f"{label}: a partition is listed twice"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [range(0, 50), range(50, N_GRAPHS)], ids=["seeds0-49", "seeds50-99"])
def test_distributed_equals_serial_on_random_graphs(seeds):
    """Every graph, both schemes, its cost family; W = 2 and W = 4 with the sharded
    table, and the coordinator's table with W = 2 (even seeds) or W = 4 (odd seeds).
    (Configurations in the outer loop: a pool of another size replaces the last one.)"""
    cases = []
    for seed in seeds:
        network = random_network(seed)
        name = FAMILIES[seed % len(FAMILIES)]
        for scheme in ("merge", "single"):
            serial = solve(network, COST_MODELS[name], scheme, max_solutions=None)
            cases.append((seed, network, name, scheme, serial))
    problems = []
    for workers, table, parity in ((2, "sharded", None), (4, "sharded", None), (2, "coordinator", 0),
                                   (4, "coordinator", 1)):
        for seed, network, name, scheme, serial in cases:
            if parity is not None and seed % 2 != parity:
                continue
            result = solve(network, COST_MODELS[name], scheme, max_solutions=None, workers=workers,
                           link_table=table)
            label = f"seed {seed} {scheme} {name} W={workers} {table}"
            problem = disagreement(serial, result, label)
            if problem is None and (bad := trace_problem(network, result, COST_MODELS[name], scheme)):
                problem = f"{label}: {bad}"
            if problem:
                problems.append(problem)
    assert not problems, "\n".join(problems[:20])


def test_messages_of_every_kind_cross_workers_exactly():
    """A user model whose messages are floats, strings, bytes, nested tuples and instances
    of its own class (none an int; the class is pickled, not marshalled, between
    workers): serially and on two workers, sharded or with the coordinator's table, the
    answer is brute force's."""
    problems = []
    for seed in range(4):
        network = random_network(seed, 7, 9)
        for scheme in ("merge", "single"):
            brute = solve(network, varied_cost, scheme, method="brute", max_solutions=None)
            for workers, table in ((1, "sharded"), (2, "sharded"), (2, "coordinator")):
                result = solve(network, varied_cost, scheme, max_solutions=None, workers=workers, link_table=table)
                problems.append(disagreement(brute, result, f"seed {seed} {scheme} W={workers} {table}"))
    assert not any(problems), "\n".join(p for p in problems if p)


@pytest.mark.parametrize("name,slices,order", [
    pytest.param("child", None, "cpt", marks=pytest.mark.slow), ("alarm", None, "cpt"),
    pytest.param("seagrass-2tbn", 1, "paper", marks=pytest.mark.slow),
    pytest.param("insurance", None, "cpt", marks=pytest.mark.slow),
])
def test_distributed_equals_serial_on_real_networks(name, slices, order):
    if name in ("alarm", "insurance"):
        path = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "networks", f"{name}.bif.gz")
        if not os.path.exists(path):
            pytest.skip(f"{path} is not here")
        network = load_network(path)
    else:
        network = load_network(name, slices=slices)
    serial = solve(network, order=order, max_solutions=None)
    assert serial.proven_optimal
    problems = []
    for workers, table in ((2, "sharded"), (4, "sharded"), (2, "coordinator")):
        result = solve(network, order=order, max_solutions=None, workers=workers, link_table=table)
        problems.append(disagreement(serial, result, f"{name} W={workers} {table}"))
        stats = result.components[0]["distributed"]
        assert stats["workers"] == workers and stats["link_table"] == table and stats["recoveries"] == 0
    assert not any(problems), "\n".join(p for p in problems if p)


@pytest.mark.slow
def test_a_killed_worker_loses_nothing(tmp_path):
    """Kill one worker's process in the middle of a run, once it reports progress:
    the coordinator starts a new worker, rolls every worker back to the latest snapshot
    (taken every half second, and for the checkpoints), and the result is exact. Water
    without the bound, whose search on two native workers lasts about 4 s (with the
    bound, 2 s: it ended before the kill)."""
    network = load_network("water")
    serial = solve(network, max_solutions=None, use_bound=False)
    killed = []

    def kill_one(stats: Progress) -> None:
        if not killed and stats.iterations >= 1000:
            killed.append(kill_a_worker())

    result = solve(network, max_solutions=None, use_bound=False, workers=2, snapshot_every=0.5,
                   checkpoint=tmp_path / "run", checkpoint_every=0.5, on_progress=kill_one)
    assert killed, "the run ended before a worker could be killed"
    assert result.components[0]["distributed"]["recoveries"] >= 1
    assert disagreement(serial, result, "after a kill") is None
    assert trace_problem(network, result) is None


@pytest.mark.parametrize("moment", ["proven", pytest.param("improved", marks=pytest.mark.slow)])
def test_a_worker_killed_between_reports_loses_nothing(monkeypatch, moment):
    """Kill a worker right after the coordinator reports to the driver, before the
    driver's next call: once the search is proven (the coordinator then gathers the
    final entry and the optimal mappings' histories from the workers), or at the first
    report of an improvement (the driver then looks up its mapping). The search goes
    back to its snapshot, is proven again, and the result is exact; its bound samples
    never rise above the best cost already known (the rolled-back G_min does). (Both
    failed the run with ActorDiedError before.)"""
    from dcmap_dist.run.ray import driver

    network = load_network("seagrass-2tbn", slices=1)
    serial = solve(network, order="paper", max_solutions=None)
    killed = []
    advance = driver._advance

    def advance_then_kill(handle, reserve):
        report = advance(handle, reserve)
        if not killed and (report.done if moment == "proven" else report.trace):
            killed.append(kill_a_worker())
        return report

    monkeypatch.setattr(driver, "_advance", advance_then_kill)
    # one snapshot, taken at the start: the whole proof is redone from G_min's first value;
    # the greedy dive's first mapping (the beam's is the optimum: no improvement to report)
    reports = []
    result = solve(network, order="paper", max_solutions=None, workers=2, snapshot_every=1000.0,
                   on_progress=reports.append, first_budget=0)
    assert killed
    # the progress's best cost never rises (the rolled-back G_min does), and its bound stays below it
    best = [report.best_cost for report in reports]
    assert best == sorted(best, reverse=True)
    assert all(report.lower_bound <= report.best_cost for report in reports)
    assert result.components[0]["distributed"]["recoveries"] == 1
    assert disagreement(serial, result, f"after a kill ({moment})") is None
    # an improvement of the last report before the kill, found after the snapshot, has
    # its records die with the worker: it is reported without its mapping
    assert trace_problem(network, result, COST_MODELS["dcmap-paper"], mappings_lost=True) is None


def kill_a_worker() -> int:
    """SIGKILL the process of one live worker actor; its process id."""
    import ray

    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a["namespace"] == "dcmap" and a["name"].startswith("dcmap-worker-")]
    worker = ray.get_actor(names[0], namespace="dcmap")  # held: Ray 2.40 loses a handle only called through
    pid = ray.get(worker.pid.remote())
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.slow
def test_limits_stop_a_distributed_search():
    network = load_network("child")
    result = solve(network, workers=2, max_iterations=300)
    assert not result.proven_optimal and result.stop_reason == "max_iterations"
    assert result.iterations <= 300
    assert result.lower_bound <= 639.4 + 1e-6 and result.optimal_cost >= 639.4 - 1e-6
    # a complete mapping still on its way to the final key's owner when the search stops
    # is settled there: the best cost reported is the trace's last, stopped anywhere
    problems = []
    for seed in range(40):
        small = random_network(seed, 8, 11)
        whole = solve(small).iterations
        for limit in {max(1, whole * k // 5) for k in range(1, 5)}:
            result = solve(small, workers=2, max_iterations=limit)
            if result.trace[-1]["cost"] != pytest.approx(result.optimal_cost):
                problems.append(f"seed {seed}, {limit} iterations: best {result.optimal_cost}, "
                                f"traced {result.trace[-1]['cost']}")
            elif trace_problem(small, result):
                problems.append(f"seed {seed}, {limit} iterations: {trace_problem(small, result)}")
    assert not problems, "\n".join(problems)
    three_slices = load_network("seagrass-2tbn", slices=3)  # a minute natively: two slices are proven in 2 s
    result = solve(three_slices, order="paper", workers=2, time_limit=2.0)
    assert not result.proven_optimal and result.stop_reason == "time_limit"
    assert result.lower_bound <= 9511.8 + 1e-6 <= result.optimal_cost + 1e-6
    assert result.trace and result.trace[-1]["cost"] == pytest.approx(result.optimal_cost)
    assert trace_problem(three_slices, result, COST_MODELS["dcmap-paper"]) is None


def test_progress_reports_the_distributed_figures():
    heard = []
    solve(load_network("seagrass-2tbn", slices=1), order="paper", workers=2, max_iterations=20000,
          on_progress=heard.append)
    assert heard
    for stats in heard:
        assert stats.iterations >= 0 and stats.open_branches >= 0 and stats.rate >= 0 and stats.elapsed_seconds >= 0
        assert stats.lower_bound <= stats.best_cost
        assert stats.workers == 2


def test_improvements_are_announced_with_their_mappings():
    """Each improvement a distributed search announces carries the mapping it found
    (rebuilt from the workers' shards while the search runs), priced independently."""
    network = load_network("seagrass-2tbn", slices=1)
    heard = []
    r = solve(network, order="paper", workers=2, on_improvement=lambda c, i, s, m: heard.append((c, m)))
    assert r.proven_optimal and heard
    assert all(mapping is not None for _, mapping in heard)
    assert heard == [(t["cost"], t["clusters"]) for t in r.trace]
    assert trace_problem(network, r, DcmapCost("paper")) is None


@pytest.mark.parametrize("table", ["sharded", "coordinator"])
def test_the_memory_of_the_coordinator_is_counted(table):
    """The peak memory (and the memory limit) is the coordinator's and the workers'
    together: with the coordinator's table it holds the link table, which before was
    neither counted nor limited (issue 30)."""
    result = solve(load_network("child"), workers=2, link_table=table, max_solutions=1)
    stats = result.components[0]["distributed"]
    assert 0 < stats["coordinator_memory_mb"] < result.peak_memory_mb
    stopped = solve(load_network("child"), workers=2, link_table=table, memory_limit_mb=stats["coordinator_memory_mb"])
    assert stopped.stop_reason == "memory_limit"
