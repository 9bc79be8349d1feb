"""Limits that bound the whole command, not only the search (issue 55): the listing of
the optimal mappings, the pricing of a slow cost function before the search, the
checkpoint's final write and the result's, under --time-limit, --memory-limit, SIGINT
and SIGTERM; and what the command says of what it runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shared_networks import shared

from dcmap_dist.checkpoint.arrow import generations
from dcmap_dist.cli.search_commands import mapping_line
from dcmap_dist.compiled import native_built
from dcmap_dist.limits import Limits, StopReason, Stopwatch
from dcmap_dist.model.network import Network
from dcmap_dist.solve import solve
from dcmap_dist.text import readable


def chain(nodes: int) -> Network:
    """x0 -> x1 -> ... : its optimal mappings number 2^(nodes - 1) and more."""
    names = [f"x{i}" for i in range(nodes)]
    return Network(f"chain{nodes}", names, {x: 2 for x in names}, list(zip(names, names[1:])))


def chains(count: int, length: int = 3) -> Network:
    """``count`` separate chains of ``length`` nodes: the optimal mappings multiply."""
    names = [f"c{c}_{i}" for c in range(count) for i in range(length)]
    edges = [(f"c{c}_{i}", f"c{c}_{i + 1}") for c in range(count) for i in range(length - 1)]
    return Network(f"chains{count}", names, {x: 2 for x in names}, edges)


def dcmap(tmp_path: Path, *args: str, signal_at: float | None = None, sig: int = signal.SIGINT,
          **environment: str) -> tuple[subprocess.CompletedProcess, float | None]:
    """``dcmap`` in a subprocess; with ``signal_at``, ``sig`` is sent that many seconds in,
    and the seconds from the signal to the process's end are returned too."""
    env = {**os.environ, **environment}
    process = subprocess.Popen([sys.executable, "-m", "dcmap_dist", *args], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = None
    if signal_at is not None:
        time.sleep(signal_at)
        process.send_signal(sig)
        sent = time.perf_counter()
        out, err = process.communicate(timeout=120)
        after = time.perf_counter() - sent
    else:
        out, err = process.communicate(timeout=600)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), after


def test_a_listing_cut_by_the_time_limit_writes_what_it_listed_with_the_exact_count(tmp_path):
    """chain300: the search takes under a second, its 5.1e89 optimal mappings are listed
    until the time limit (writing the result inside it): exit 3, the count exact."""
    network = chain(300)
    (tmp_path / "chain300.json").write_text(json.dumps(network.to_dict()))
    count = solve(network, max_solutions=1).solution_count
    assert count == 2 ** 298  # the cost ties every way of cutting the chain but one
    done, _ = dcmap(tmp_path, "solve", "chain300.json", "--time-limit", "2", "-q", "-o", "r.json")
    assert done.returncode == 3, done.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["proven_optimal"] and result["stop_reason"] == "time_limit"
    assert result["solution_count"] == count and not result["solutions_complete"]
    assert 1 <= len(result["solutions"]) < 10_000 and result["elapsed_seconds"] <= 2.0
    assert "the listing of its mappings stopped (time_limit)" in done.stdout
    assert f"{readable(count)} mapping(s) ({len(result['solutions'])} listed)" in done.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_listing_writes_the_result_at_once(tmp_path, sig):
    (tmp_path / "chain300.json").write_text(json.dumps(chain(300).to_dict()))
    done, after = dcmap(tmp_path, "solve", "chain300.json", "-q", "-o", "r.json", signal_at=2.5, sig=sig)
    assert done.returncode == 4, done.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["proven_optimal"] and result["stop_reason"] == "interrupted"
    assert not result["solutions_complete"] and result["solution_count"] == 2 ** 298
    assert after < 3.0, after  # about 1 s: the result of thousands of 300-node mappings is written


def test_the_listing_holds_no_more_than_the_memory_at_hand(monkeypatch):
    """2^12 mappings of 12 chains where a few hundred fit: the listing stops there, says
    so with the count, and the count is exact (40 chains, 2^40 mappings, were killed at
    13.6 GB)."""
    import dcmap_dist.combine as combine

    full = solve(chains(12), max_solutions=None)
    assert full.solutions_complete and full.solution_count == 2 ** 12
    monkeypatch.setattr(combine, "available_mb", lambda: 2 * 300 * combine.BYTES_PER_NODE * 36 / 2 ** 20)
    with pytest.warns(UserWarning, match="4096 optimal mappings are more than the memory at hand can hold: 300 "):
        cut = solve(chains(12), max_solutions=None)
    assert cut.proven_optimal and cut.stop_reason == "memory_limit" and not cut.solutions_complete
    assert cut.solution_count == 2 ** 12 and len(cut.solutions) == 300


def test_one_mapping_of_each_part_is_listed_past_every_limit(monkeypatch):
    """A listing stopped at once still lists every component's first mapping, and of the
    combinations as many as the component with the most."""
    import dcmap_dist.combine as combine

    monkeypatch.setattr(combine.Listing, "check", _stopped_after_first)
    cut = solve(chains(3), max_solutions=None)
    assert cut.solution_count == 8 and len(cut.solutions) == 1 and cut.stop_reason == "time_limit"


def _stopped_after_first(self) -> None:
    from dcmap_dist.limits import SearchInterrupted

    if self.here >= self.free:
        self.stopped = StopReason.TIME_LIMIT
        raise SearchInterrupted(self.stopped)


SLOW_COST = '''
import time
def slow(ctx):
    time.sleep(0.25)
    return 1.0 + len(ctx.nodes) ** 2
'''


def test_a_slow_cost_function_is_stopped_by_a_signal_while_each_node_is_priced(tmp_path):
    """child has 20 nodes: 5 s of pricing at 0.25 s a call before the search; SIGINT at
    1.5 s ends it after the call in progress, saying how far the pricing was."""
    (tmp_path / "slowcost.py").write_text(SLOW_COST)
    done, after = dcmap(tmp_path, "solve", "child", "--cost", "slowcost:slow", "-o", "r.json", signal_at=1.5)
    assert done.returncode == 4, done.stderr
    assert after < 1.5, after
    assert "pricing each node as its own cluster before the search (" in done.stderr
    assert "of 20 priced)" in done.stderr and "no complete mapping is known" in done.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["stop_reason"] == "interrupted" and result["optimal_cost"] is None


def test_a_slow_cost_function_is_stopped_by_the_time_limit_while_each_node_is_priced(tmp_path):
    (tmp_path / "slowcost.py").write_text(SLOW_COST)
    done, _ = dcmap(tmp_path, "solve", "child", "--cost", "slowcost:slow", "--time-limit", "1", "-o", "r.json")
    assert done.returncode == 3, done.stderr
    assert "stopped by the time limit while pricing each node as its own cluster" in done.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["stop_reason"] == "time_limit" and result["elapsed_seconds"] < 1.5


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_checkpointed_run_stops_within_its_limit_on_either_engine(tmp_path, monkeypatch, engine):
    """The final checkpoint's reserve is guessed for the engine that runs (a native
    generation is larger: water's 8 s limit ended at 10.9 s on it, with the Python
    engine's guess), and the listing stops at the limit too."""
    if engine == "native" and not native_built():
        pytest.skip("the native engine is not built")
    monkeypatch.setenv("DCMAP_ENGINE", engine)
    result = solve("water", time_limit=4, checkpoint=tmp_path / "ck")
    assert result.stop_reason == "time_limit" and generations(tmp_path / "ck")
    assert 2.0 < result.elapsed_seconds <= 4.0, result.elapsed_seconds


PEAK_OF = """
import atexit, sys
from dcmap_dist.cli import main
from dcmap_dist.limits import peak_mb
atexit.register(lambda: open("peak.txt", "w").write(str(peak_mb())))
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_the_memory_limit_bounds_the_process_and_its_peak_is_the_processs(tmp_path):
    """hepar2 with --memory-limit 250: the process's maximum resident size stays under
    the limit (it was 306 MiB: a table's growth between two readings, then the result's
    JSON made whole), and peak_memory_mb is that maximum."""
    network = shared("hepar2.bif.gz")
    done = subprocess.run([sys.executable, "-c", PEAK_OF, "solve", str(network), "--memory-limit", "250", "-q",
                           "-o", "r.json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr
    peak = float((tmp_path / "peak.txt").read_text())
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["stop_reason"] == "memory_limit"
    assert peak <= 250, peak
    assert abs(result["peak_memory_mb"] - peak) <= 0.05 * peak, (result["peak_memory_mb"], peak)


def test_a_surge_between_two_readings_is_kept_free_below_the_memory_limit(monkeypatch):
    """A table that doubles holds its old and new copies for a moment: the kernel's peak
    shows the surge, the stopwatch keeps twice it free, and reports the kernel's peak."""
    import dcmap_dist.limits as limits

    readings = iter([100.0, 110.0, 120.0])
    kernel = iter([150.0, 150.0])
    monkeypatch.setattr(limits, "peak_mb", lambda: next(kernel))
    watch = Stopwatch(Limits(memory_limit_mb=300), memory=lambda: next(readings))
    watch._own, watch._kernel_peak, watch._kernel_peak_before = True, 100.0, 100.0  # as this process's
    watch._next_memory = time.perf_counter()  # a reading due now: the last one was just before
    assert watch.resources_exceeded() is None  # 110 read, the kernel saw 150: a surge of 40
    assert watch.surge_mb == 40 and watch.headroom_mb == 80 and watch.peak_memory_mb == 150
    watch.limits = Limits(memory_limit_mb=190)
    watch._next_memory = time.perf_counter()
    assert watch.resources_exceeded() == StopReason.MEMORY_LIMIT  # 120 + 80 >= 190


@pytest.mark.skipif(not native_built(), reason="the native engine is not built")
def test_a_network_wider_than_the_native_engine_says_the_python_engine_searches_it(monkeypatch):
    import dcmap_dist.search.engine as engine

    monkeypatch.setattr(engine, "NATIVE_NODES", 4)
    with pytest.warns(UserWarning, match="component of 8 is searched by the Python engine, 20 to 27 times slower"):
        result = solve("asia")
    assert result.proven_optimal


def test_numbers_past_ten_to_the_fifteen_are_written_in_scientific_notation():
    assert readable(5233) == "5233" and readable(10 ** 15 - 1) == str(10 ** 15 - 1)
    assert readable(2 ** 298) == "5.093e+89" and readable(10 ** 400) == "1.000e+400"
    assert readable(float("inf")) == "inf"


def test_a_long_mapping_line_is_cut_as_lists_are():
    wide = [[f"x{i:03d}" for i in range(300)], ["y"], ["z"]]
    line = mapping_line(wide, width=100)
    assert len(line) < 140 and line.endswith("more} ... and 2 more clusters") and line.startswith("{x000, x001")
    assert mapping_line([["a", "b"], ["c"]]) == "{a, b} {c}"
