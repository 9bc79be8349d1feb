"""A node lost or frozen while ``--workers`` uses every CPU the cluster can give them
(issue 50), on a two-node Ray cluster on this machine (:mod:`two_nodes`): the run ends
with the serial result, or with exit code 5 and a result and a checkpoint that resume
to the serial result; never with an internal error or a hang. SIGTERM while a
frozen worker is waited for or replaced ends the run within seconds with its result
and checkpoint. Water without the bound (its search lasts about 5 s on three native
workers here; with the bound it ended before the later moments), the second node's
processes signalled at five moments each."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from two_nodes import DCMAP, TwoNodes

pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.ray]

NETWORK = ["water", "--no-bound"]
MOMENTS = [0.3, 0.9, 1.5, 2.1, 2.7]  # seconds after the search's first improvement
SILENT = {"DCMAP_SILENT_STEPS": "30"}  # 3 s without an answer: lost


@pytest.fixture(scope="module")
def serial_cost(tmp_path_factory) -> float:
    out = tmp_path_factory.mktemp("serial") / "r.json"
    subprocess.run([str(DCMAP), "solve", *NETWORK, "-q", "-o", str(out)], check=True, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=300)
    return json.loads(out.read_text())["optimal_cost"]


@pytest.fixture(scope="module")
def head():
    cluster = TwoNodes().start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(head):
    """The head, and a second node of its own for each test."""
    head.add_node()
    try:
        yield head
    finally:
        for pid in head.signal_node(signal.SIGKILL):
            head.started.add(pid)
        head.node = []


class Run:
    """A ``dcmap solve`` on the cluster, its standard error read as it comes."""

    def __init__(self, cluster: TwoNodes, folder: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.result, self.checkpoint = folder / "r.json", folder / "ck"
        self.process = cluster.dcmap("solve", *NETWORK, "--workers", "3", "-o", str(self.result),
                                     "--checkpoint", str(self.checkpoint), *args, env=env)
        self.lines: list[str] = []
        self.first = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if "improved" in line or "iterations" in line:
                self.first.set()

    def wait(self, seconds: float) -> int:
        code = self.process.wait(timeout=seconds)
        self.reader.join(timeout=10)
        return code

    def stderr(self) -> str:
        return "\n".join(self.lines[-40:])


def ends_well(run: Run, code: int, serial: float, cluster: TwoNodes, folder: Path) -> str:
    """How the run ended, checked: 'exact' (the serial result within the run) or
    'resumed' (exit 5, its checkpoint resumed to the serial result)."""
    assert code in (0, 5), f"exit {code}:\n{run.stderr()}"
    assert "internal error" not in run.stderr()
    result = json.loads(run.result.read_text())
    if code == 0:
        assert result["proven_optimal"] and result["optimal_cost"] == pytest.approx(serial, rel=1e-9)
        return "exact"
    assert result["stop_reason"] == "ray_lost" and (run.checkpoint / "LATEST").exists(), run.stderr()
    again = folder / "again.json"
    done = subprocess.run([str(DCMAP), "resume", str(run.checkpoint), "-q", "-o", str(again), "--workers", "2",
                           "--address", cluster.address], env=cluster.env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    resumed = json.loads(again.read_text())
    assert resumed["proven_optimal"] and resumed["optimal_cost"] == pytest.approx(serial, rel=1e-9)
    return "resumed"


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_node_killed_with_every_cpu_in_use(cluster, serial_cost, tmp_path, moment):
    """SIGKILL to the second node's raylet, workers and daemons ``moment`` seconds into
    the search (three workers of one CPU on 2 + 2 CPUs: the lost node's workers have a
    replacement only where a CPU is free, else the search goes on with fewer)."""
    run = Run(cluster, tmp_path, env=SILENT)
    assert run.first.wait(120), run.stderr()
    time.sleep(moment)
    assert cluster.node_workers(), "no worker on the second node"
    cluster.signal_node(signal.SIGKILL)
    code = run.wait(240)
    ending = ends_well(run, code, serial_cost, cluster, tmp_path)
    print(f"{moment} s: exit {code}, {ending};", *[line for line in run.lines if "lost" in line], sep="\n  ")
    assert ending == "resumed" or "a worker was lost" in run.stderr(), f"the kill came too late:\n{run.stderr()}"


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_frozen_node_is_given_up_within_a_bounded_time(cluster, serial_cost, tmp_path, moment):
    """SIGSTOP to the second node's processes (a hung machine, a cut network): its
    workers are lost after DCMAP_SILENT_STEPS step lengths (3 s here) whether or not
    Ray notices, progress lines go on meanwhile, and the run ends as for a lost node."""
    run = Run(cluster, tmp_path, env=SILENT)
    assert run.first.wait(120), run.stderr()
    time.sleep(moment)
    assert cluster.node_workers(), "no worker on the second node"
    frozen = time.monotonic()
    cluster.signal_node(signal.SIGSTOP)
    code = run.wait(240)
    took = time.monotonic() - frozen
    ending = ends_well(run, code, serial_cost, cluster, tmp_path)
    print(f"{moment} s: exit {code}, {ending};", *[line for line in run.lines if "lost" in line], sep="\n  ")
    assert ending == "resumed" or "a worker was lost" in run.stderr(), f"the freeze came too late:\n{run.stderr()}"
    assert took < 120, took


def test_sigterm_while_a_frozen_node_is_waited_for_writes_the_result(cluster, tmp_path):
    """SIGTERM to the run's process group while it waits for a frozen node's workers
    (DCMAP_SILENT_STEPS long: 30 s here; progress lines go on meanwhile) ends it within seconds, with its result and
    a checkpoint (the search's state from before the freeze, or later)."""
    run = Run(cluster, tmp_path, env={"DCMAP_SILENT_STEPS": "300"})
    assert run.first.wait(120), run.stderr()
    time.sleep(1.0)
    assert cluster.node_workers(), "no worker on the second node"
    cluster.signal_node(signal.SIGSTOP)
    lines = len(run.lines)
    time.sleep(12.0)  # off a terminal, a progress line every 10 s
    assert len(run.lines) > lines, "no progress line while the frozen workers are waited for"
    told = time.monotonic()
    run.process.send_signal(signal.SIGTERM)
    code = run.wait(60)
    took = time.monotonic() - told
    assert code in (4, 5), f"exit {code}:\n{run.stderr()}"
    assert took < 30, took
    result = json.loads(run.result.read_text())
    assert result["stop_reason"] in ("interrupted", "ray_lost")
    assert (run.checkpoint / "LATEST").exists()
