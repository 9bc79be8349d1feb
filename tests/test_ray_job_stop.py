"""``ray job stop`` of a distributed search submitted to Ray's job server with the stop
wait the docs give (docs/distributed.md, "Stopping a job"): the job writes its result
and a checkpoint before Ray ends it (issue 50: with Ray's default 3 s it was cut off,
half a checkpoint generation written and no result). A head of its own, with its
dashboard (the job server) and a token of its own, ended by process id."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from two_nodes import DCMAP, RAY, TwoNodes

pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_ray_job_stop_with_the_documented_wait_writes_the_result_and_checkpoint(tmp_path):
    cluster = TwoNodes().start(dashboard=True)
    try:
        result, checkpoint = tmp_path / "r.json", tmp_path / "ck"
        runtime = json.dumps({"env_vars": {"RAY_JOB_STOP_WAIT_TIME_S": "60"}})
        submitted = subprocess.run(
            [str(RAY), "job", "submit", "--address", cluster.jobs, "--no-wait", "--runtime-env-json", runtime, "--",
             str(DCMAP), "solve", "seagrass-2tbn", "--slices", "3", "--order", "paper", "--workers", "2",
             "--address", "auto", "--checkpoint", str(checkpoint), "-o", str(result)],
            env=cluster.env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)
        assert submitted.returncode == 0, submitted.stderr[-3000:]
        job = next(word.strip("'\"") for line in submitted.stdout.splitlines() for word in line.split()
                   if word.strip("'\"").startswith("raysubmit_"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # searching: the workers made it into the log
            logs = subprocess.run([str(RAY), "job", "logs", "--address", cluster.jobs, job], env=cluster.env,
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60).stdout
            if "improved" in logs:
                break
            time.sleep(1)
        else:
            pytest.fail(f"the job did not start searching:\n{logs[-3000:]}")
        time.sleep(3)
        stopped = subprocess.run([str(RAY), "job", "stop", "--address", cluster.jobs, job], env=cluster.env,
                                 capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        deadline = time.monotonic() + 90
        while not result.exists() and time.monotonic() < deadline:
            time.sleep(1)
        logs = subprocess.run([str(RAY), "job", "logs", "--address", cluster.jobs, job], env=cluster.env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60).stdout
        assert result.exists(), logs[-3000:]
        assert json.loads(result.read_text())["stop_reason"] == "interrupted"
        assert (checkpoint / "LATEST").exists(), logs[-3000:]
    finally:
        cluster.close()
