"""One progress record (dcmap_dist/progress.py) from every method, serial and on Ray, as
docs/search.md documents it: every field there, of its type, None only where the
method has no such figure; the figures are the whole solve's."""

from __future__ import annotations

import dataclasses
import math

import pytest

from dcmap_dist.io.load import load_network
from dcmap_dist.progress import Progress
from dcmap_dist.solve import solve

from search_costs import random_network

# the documented fields and what each holds (docs/search.md, "Progress")
FIELDS = {"iterations": int, "best_cost": float, "lower_bound": (float, type(None)), "open_branches": int,
          "elapsed_seconds": float, "rate": float, "peak_memory_mb": float, "link_records": (int, type(None)),
          "workers": int, "component": int, "components": int, "listed": (int, type(None))}


def check_record(report: Progress, method: str, workers: int, components: int) -> None:
    assert type(report) is Progress
    assert {f.name for f in dataclasses.fields(report)} == set(FIELDS)
    for name, kind in FIELDS.items():
        assert isinstance(getattr(report, name), kind), (name, getattr(report, name))
    assert report.workers == workers and report.components == components and 0 <= report.component < components
    if report.lower_bound is None:  # brute force knows none until it has priced every mapping
        assert method == "brute"
    else:
        assert report.lower_bound <= report.best_cost * (1 + 1e-9)
    assert (report.link_records is None) == (method != "dcmap")
    assert report.gap >= 0 or math.isnan(report.gap)


@pytest.mark.parametrize("method,workers", [("dcmap", 1), ("bfs", 1), ("brute", 1),
                                            pytest.param("dcmap", 2, marks=pytest.mark.ray)])
def test_every_method_reports_one_documented_record(method, workers, request):
    if workers > 1:
        request.getfixturevalue("ray_session")
    network = random_network(3, 9, 11) if method == "brute" else load_network("child")
    heard: list[Progress] = []
    result = solve(network, method=method, workers=workers, on_progress=heard.append,
                   max_iterations=None if method == "brute" else 3000)
    assert heard, "no progress at all"
    for report in heard:
        check_record(report, method, workers, len(network.components()))
    last = heard[-1]
    assert last.iterations == result.iterations
    assert math.isclose(last.best_cost, result.optimal_cost, rel_tol=1e-9)
    if method == "bfs":  # breadth-first search is stopped by the limit before it completes a mapping
        assert last.best_cost == math.inf or last.lower_bound <= result.optimal_cost


def test_the_figures_are_the_whole_solves_on_a_network_of_several_components():
    """Two components: iterations count on from the first, the best cost and the bound
    are totals over both (the second's all-singletons mapping stands in for it until it
    is searched)."""
    a, b = load_network("asia"), load_network("paper-example")
    from dcmap_dist.model.network import Network

    both = Network("both", [*a.nodes, *b.nodes], {**{x: a.card(x) for x in a.nodes}, **{x: b.card(x) for x in b.nodes}},
                   [*a.edges, *b.edges])
    heard: list[Progress] = []
    result = solve(both, on_progress=heard.append)
    assert {report.component for report in heard} == {0, 1} and all(r.components == 2 for r in heard)
    iterations = [report.iterations for report in heard]
    assert iterations == sorted(iterations) and iterations[-1] == result.iterations
    assert math.isclose(heard[-1].best_cost, result.optimal_cost, rel_tol=1e-9)
    assert all(report.lower_bound <= result.optimal_cost * (1 + 1e-9) for report in heard)
