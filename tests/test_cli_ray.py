"""Searches on Ray workers from the command line, as a user runs them (issue 30): a typo
costs seconds, not the machine; standard output holds only what was asked for; a
signal to the whole process group, or the loss of Ray, still leaves the best mapping
and a checkpoint to resume from. Each test starts (and stops) a private Ray of its own
through ``dcmap``; the session's Ray is not touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcmap_dist.checkpoint.arrow import generations

pytestmark = pytest.mark.ray

# about 10 s on two native workers (seagrass two slices, 1 s, ended before a signal landed)
# the full key (more branches, the same answer): about 5 s serially, long enough to act on a running
# search on two workers (with the lean key water is proven in about 3 s since issue 57)
WATER = ["solve", "water", "--link-key", "full"]
OPTIMUM = (34967.4, 5233)  # water (results/)


def dcmap(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcmap_dist", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, cwd=cwd)


def started(*args: str) -> subprocess.Popen:
    """``dcmap`` in a process group (and session) of its own, as a shell job would be."""
    return subprocess.Popen([sys.executable, "-m", "dcmap_dist", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_improvement(process: subprocess.Popen) -> list[str]:
    seen = []
    while not (seen and seen[-1].startswith("improved")):
        line = process.stderr.readline()
        assert line, "".join(seen)  # ended before finding a mapping
        seen.append(line)
    return seen


def assert_resumes_to_the_optimum(folder: Path, output: Path) -> None:
    """``dcmap resume folder`` runs to the end and proves water's optimum."""
    done = dcmap("resume", str(folder), "-q", "--max-solutions", "0", "-o", str(output))
    assert done.returncode == 0, done.stderr[-3000:]
    again = json.loads(output.read_text())
    assert (round(again["optimal_cost"], 6), again["solution_count"]) == OPTIMUM


def descendants(pid: int) -> dict[int, str]:
    """The processes below ``pid``: pid -> command line."""
    parents, lines = {}, {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
                parents[int(proc.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
                lines[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    found, todo = {}, [pid]
    while todo:
        here = todo.pop()
        for child, parent in parents.items():
            if parent == here and child not in found:
                found[child] = lines[child]
                todo.append(child)
    return found


def test_more_workers_than_cpus_is_refused_before_ray_starts():
    run = dcmap("solve", "asia", "--workers", "10000", timeout=60)
    assert run.returncode == 2, run.stderr
    assert f"--workers 10000: this machine offers {len(os.sched_getaffinity(0))} CPUs" in run.stderr
    assert "raylet" not in run.stderr and run.stdout == ""


def test_an_address_where_nothing_answers_is_an_error_within_seconds():
    run = dcmap("solve", "asia", "--workers", "2", "--address", "127.0.0.1:1", timeout=60)
    assert run.returncode == 2 and "--address 127.0.0.1:1: no Ray cluster answers there" in run.stderr, run.stderr


def test_an_address_without_workers_is_an_error():
    run = dcmap("solve", "asia", "--address", "auto", timeout=60)
    assert run.returncode == 2 and "workers" in run.stderr, run.stderr


@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_standard_output_holds_only_the_result(tmp_path, workers):
    """A user's cost function that prints, and Ray's own messages, go to standard error:
    ``--output -`` stays valid JSON."""
    (tmp_path / "noisy.py").write_text(
        "import sys\n"
        "def cost(ctx):\n"
        "    print('noise from the cost function')\n"
        "    sys.stdout.flush()\n"
        "    return 1.0 + len(ctx.nodes)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "dcmap_dist", "solve", "asia", "--cost", "noisy:cost", "-q",
                          "--workers", workers, "--output", "-"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["proven_optimal"] is True
    assert "noise from the cost function" in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("attempt", range(2))
def test_sigterm_to_the_process_group_writes_the_checkpoint_and_the_result(tmp_path, attempt):
    """What ``timeout``, Slurm and systemd do: SIGTERM to the whole group. Ray's processes
    are in a group of their own, so the driver stops the search cleanly (before, Ray died
    first and both the checkpoint and the result could be lost)."""
    folder, output = tmp_path / "ck", tmp_path / "result.json"
    process = started(*WATER, "--workers", "2", "--checkpoint", str(folder), "-o", str(output))
    wait_for_improvement(process)
    time.sleep(0.5 * attempt)
    os.killpg(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=180)
    assert process.returncode == 4, err[-3000:]
    data = json.loads(output.read_text())
    assert data["stop_reason"] == "interrupted" and data["solutions"] and generations(folder)
    assert_resumes_to_the_optimum(folder, tmp_path / "again.json")


@pytest.mark.slow
def test_a_lost_ray_leaves_the_best_so_far_and_names_the_folder(tmp_path):
    """Ray's raylet killed mid-search (as the OOM killer would): exit code 5, a line that
    says what happened and how to go on, the best mapping so far in the result, and the
    last checkpoint resumes to the exact answer (before: "internal error", nothing written)."""
    folder, output = tmp_path / "ck", tmp_path / "result.json"
    process = started(*WATER, "--workers", "2", "--checkpoint", str(folder), "--checkpoint-every", "0.5",
                      "-o", str(output))
    wait_for_improvement(process)
    deadline = time.monotonic() + 60
    while not generations(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    raylets = [pid for pid, line in descendants(process.pid).items() if line.split(" ")[0].endswith("/raylet")]
    assert raylets, descendants(process.pid)
    for pid in raylets:
        os.kill(pid, signal.SIGKILL)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 5, err[-3000:]
    assert "Ray was lost during the search" in err and f"dcmap resume {folder}" in err
    data = json.loads(output.read_text())
    assert data["stop_reason"] == "ray_lost" and not data["proven_optimal"] and data["solutions"]
    assert_resumes_to_the_optimum(folder, tmp_path / "again.json")


@pytest.mark.slow
def test_ctrl_c_during_ray_start_up_stops_cleanly(tmp_path):
    """SIGINT while the private Ray starts: the search stops at once with the best so far
    (exit 4), it does not run on."""
    output = tmp_path / "result.json"
    process = started(*WATER, "--workers", "2", "-o", str(output))
    time.sleep(1.0)  # Ray takes several seconds to start
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=180)
    assert process.returncode == 4, err[-3000:]
    assert json.loads(output.read_text())["stop_reason"] == "interrupted"
