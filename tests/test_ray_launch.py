"""The real launch path of cluster_configs/README.md, on this machine: ``ray up`` a
local-provider cluster made from ``cluster_configs/workstation.yaml``, ``ray submit``
``scripts/solve.py`` to solve asia with two workers, check the result file, ``ray down``.

Ray's launcher reaches the "head node" (this machine) over ssh, so the test starts an
sshd of its own on a free loopback port, with its own host key, authorised key and a
throw-away home directory whose ``.bashrc`` puts this Python first on ``PATH`` (every
launcher command runs in a login shell and calls plain ``python`` and ``ray``) and gives
the head a temporary directory of its own. It needs ``sshd``, ``ssh``, ``ssh-keygen``,
``nc``, ``rsync`` and ``unshare`` (.ci/run installs them).

``ray up`` and ``ray down`` run ``ray stop``, which ends every Ray process it can see.
So the whole launch runs in a PID namespace of its own (``unshare --pid --fork
--mount-proc``): there ``ray stop`` sees only the launch's processes, and a user's Ray
(or another test's) survives; a test starts such a bystander Ray and checks it. When the
namespace's first process ends, the kernel ends every process left in it, so nothing
outlives the test; the bystander is stopped by its process ids.
"""

from __future__ import annotations

import getpass
import importlib.util
import json
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the bin directory of the Python running the tests
RAY = BIN / "ray"
TOOLS = ("sshd", "ssh", "ssh-keygen", "nc", "rsync")
TOOL_PATH = f"{os.environ.get('PATH', '')}:/usr/sbin"  # sshd is in /usr/sbin
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without it
TIMEOUT = 600  # seconds, for each launcher command
ISOLATED = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]  # a PID namespace of its own


def test_solve_script_joins_the_running_cluster_unless_told_otherwise() -> None:
    """scripts/solve.py adds ``--address auto`` to the user's arguments unless they
    choose an address, and resumes a checkpoint when told ``resume``."""
    spec = importlib.util.spec_from_file_location("solve_script", ROOT / "scripts" / "solve.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.solve_arguments(["asia", "--workers", "2"]) == ["solve", "asia", "--workers", "2", "--address", "auto"]
    assert script.solve_arguments(["asia", "--address", "10.0.0.1:6379"]) == ["solve", "asia", "--address", "10.0.0.1:6379"]
    assert script.solve_arguments(["asia", "--address=local"]) == ["solve", "asia", "--address=local"]
    assert script.solve_arguments(["resume", "/tmp/ck", "--workers", "2"]) == [
        "resume", "/tmp/ck", "--workers", "2", "--address", "auto"]


def isolation_problem() -> str | None:
    """Why the launch cannot run in a PID namespace of its own here, or None."""
    missing = [tool for tool in (*TOOLS, "unshare") if shutil.which(tool, path=TOOL_PATH) is None]
    if missing:
        return f"needs {', '.join(missing)} (apt-get install openssh-server rsync netcat-openbsd util-linux)"
    probe = subprocess.run([*ISOLATED, "true"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if probe.returncode != 0:
        return f"cannot make a PID namespace here ({probe.stderr.strip()}): ray stop would reach other Rays"
    return None


@pytest.mark.ray
@pytest.mark.slow
def test_ray_submit_solves_asia_with_two_workers_and_leaves_other_rays_alone() -> None:
    """``ray up``, ``ray submit scripts/solve.py -- asia --workers 2``, ``ray down``, in a
    PID namespace of its own; a Ray head started outside it beforehand (as a user's
    would be) is still running afterwards."""
    if problem := isolation_problem():
        pytest.skip(problem)
    with tempfile.TemporaryDirectory(prefix="dcmap-", dir="/tmp") as name:  # short: Ray's socket paths go in it
        work = Path(name)
        result = work / "result.json"
        with bystander_ray(work) as (pids, address, env):
            run([*ISOLATED, sys.executable, __file__, work])
            alive = [pid for pid in pids if pid in processes()]
            assert alive == pids, f"ray up or down stopped a Ray they did not start: {sorted(set(pids) - set(alive))}"
            answer = subprocess.run([sys.executable, "-c", f"import ray; ray.init(address={address!r}); "
                                     "print(ray.get(ray.remote(lambda: 42).remote()))"],
                                    capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=env)
            assert answer.stdout.strip().endswith("42"), answer.stderr[-2000:]
        solved = json.loads(result.read_text())
        assert math.isclose(solved["optimal_cost"], 68.8, rel_tol=1e-9), solved["optimal_cost"]
        assert solved["proven_optimal"] is True
        assert solved["solution_count"] == 38


@pytest.mark.ray
@pytest.mark.slow
def test_address_to_a_cluster_with_a_token_needs_the_token_and_says_so(tmp_path) -> None:
    """A head in Ray's token mode (``ray start --head`` with ``RAY_AUTH_MODE=token`` and
    ``RAY_AUTH_TOKEN_PATH``): ``dcmap solve --address`` without the token says the
    cluster requires one and how to give it (exit 2, within seconds); with the same two
    variables it solves asia on two workers there. Nothing here depends on the
    environment the tests were started in, nor on ``~/.ray`` (a home of its own)."""
    with tempfile.TemporaryDirectory(prefix="dcmap-", dir="/tmp") as name:
        work = Path(name)
        with bystander_ray(work) as (_, address, env):
            home = work / "home"
            home.mkdir()
            plain = {key: value for key, value in env.items() if not key.startswith("RAY_AUTH")}
            dcmap = [str(BIN / "dcmap"), "solve", "asia", "--workers", "2", "--address", address, "-q"]
            started = time.monotonic()
            refused = subprocess.run(dcmap, env={**plain, "HOME": str(home)}, capture_output=True, text=True,
                                     stdin=subprocess.DEVNULL, timeout=300)
            assert refused.returncode == 2, refused.stderr[-2000:]
            assert "requires an authentication token" in refused.stderr and "RAY_AUTH_TOKEN" in refused.stderr
            assert time.monotonic() - started < 60
            out = tmp_path / "asia.json"
            solved = subprocess.run([*dcmap, "-o", str(out)], env={**env, "HOME": str(home)}, capture_output=True,
                                    text=True, stdin=subprocess.DEVNULL, timeout=300)
            assert solved.returncode == 0, solved.stderr[-2000:]
            assert math.isclose(json.loads(out.read_text())["optimal_cost"], 68.8, rel_tol=1e-9)


def launch(work: Path) -> None:
    """The launch itself (run in its own PID namespace by the test): sshd, ``ray up``,
    ``ray submit``, ``ray down``; the result in ``work/result.json``."""
    with sshd(work) as port:
        config = write_cluster_config(work, port)
        env = launcher_environment(work)
        with ray_cluster(config, env, work):
            run([RAY, "submit", config, "scripts/solve.py", "--",
                 "asia", "--workers", "2", "--output", work / "result.json"], env)


def bystander_environment(folder: Path) -> dict[str, str]:
    """The environment of the bystander Ray and of what talks to it: Ray's token mode with
    a token of its own, whatever the environment the test was started in. This Ray
    makes ``~/.ray/auth_token`` at any local start, and a head started afterwards then
    requires it: the check that the bystander still answers passed in the whole suite
    only because an earlier test's ``ray.init`` had set ``RAY_AUTH_MODE=token`` in this
    process (issue 50)."""
    token = folder / "token"
    token.write_text(secrets.token_hex(32))
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_AUTH")}
    return {**env, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}


@contextmanager
def bystander_ray(work: Path) -> Iterator[tuple[list[int], str, dict[str, str]]]:
    """A Ray head started with ``ray start --head`` outside the launch (a user's Ray):
    its process ids, its address and the environment to reach it with (its token);
    stopped by those ids afterwards."""
    folder = work / "by"
    folder.mkdir()
    port = free_port()
    env = bystander_environment(folder)
    before = set(processes())
    try:
        run([RAY, "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
             f"--temp-dir={folder}", "--disable-usage-stats"], env)
        pids = sorted(pid for pid, (_, _, args) in processes().items() if pid not in before and str(folder) in args)
        assert pids, "ray start --head started no process that names its folder"
        yield pids, f"127.0.0.1:{port}", env
    finally:
        stop_processes([pid for pid, (_, _, args) in processes().items() if pid not in before and str(folder) in args])


@contextmanager
def sshd(work: Path) -> Iterator[int]:
    """Run an sshd on a free loopback port that lets this user in with the key
    ``work/id_key`` and gives the session the home directory ``work/home`` and the
    temporary directory ``work/head``; yield the port."""
    port = write_sshd_files(work)
    with privilege_separation_dir(), open(work / "sshd.log", "wb") as log:
        server = subprocess.Popen([shutil.which("sshd", path=TOOL_PATH), "-D", "-e", "-f", work / "sshd_config"],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        try:
            wait_for_port(port, server, work / "sshd.log")
            yield port
        finally:  # each connection's sshd is a session of its own: stop them one by one
            stop_processes([*descendants(server.pid), server.pid])
            server.wait(timeout=30)


def write_sshd_files(work: Path) -> int:
    """Write sshd's host key, the user's key pair, the home directory and the sshd
    configuration for a free port into ``work``; return the port."""
    for key in ("host_key", "id_key"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", work / key])
    shutil.copy(work / "id_key.pub", work / "authorized_keys")
    home = work / "home"
    home.mkdir()
    (work / "head").mkdir()
    (home / ".bashrc").write_text(
        f'export PATH="{BIN}:$PATH" TMPDIR="{work / "head"}" RAY_USAGE_STATS_ENABLED=0\n')
    (home / ".profile").write_text(". ~/.bashrc\n")
    port = free_port()
    (work / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {work / 'host_key'}\n"
        f"AuthorizedKeysFile {work / 'authorized_keys'}\nPermitRootLogin yes\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        f"StrictModes no\nPidFile none\nSetEnv HOME={home}\n"
    )
    return port


@contextmanager
def privilege_separation_dir() -> Iterator[None]:
    """Make /run/sshd if it is missing, and remove it afterwards if it was made here."""
    made = not PRIVSEP_DIR.exists()
    if made:
        PRIVSEP_DIR.mkdir(mode=0o755)
    try:
        yield
    finally:
        if made:
            PRIVSEP_DIR.rmdir()


def write_cluster_config(work: Path, port: int) -> Path:
    """``cluster_configs/workstation.yaml`` for this test's sshd: a cluster name of its
    own, this user and key, and the connection through ``nc`` to the sshd's port."""
    config = yaml.safe_load((ROOT / "cluster_configs" / "workstation.yaml").read_text())
    config["cluster_name"] = f"dcmap-test-{secrets.token_hex(4)}"
    config["provider"]["head_ip"] = "127.0.0.1"
    config["auth"] = {
        "ssh_user": getpass.getuser(),
        "ssh_private_key": str(work / "id_key"),
        "ssh_proxy_command": f"nc 127.0.0.1 {port}",
    }
    path = work / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def launcher_environment(work: Path) -> dict[str, str]:
    """The environment of the ``ray`` commands: the test's home, and a temporary
    directory of their own for the launcher's state and logs."""
    (work / "launcher").mkdir()
    return {**os.environ, "HOME": str(work / "home"), "TMPDIR": str(work / "launcher"),
            "RAY_USAGE_STATS_ENABLED": "0"}


@contextmanager
def ray_cluster(config: Path, env: dict[str, str], work: Path) -> Iterator[None]:
    """``ray up`` the cluster; on the way out ``ray down`` it, stop the processes it
    left, remove the launcher's ssh control directory, and fail if ``ray down`` failed
    or left the head's processes running."""
    control_before = ssh_control_dirs()
    try:
        run([RAY, "up", "-y", config], env)
        yield
    finally:
        down_failure = failure([RAY, "down", "-y", config], env)
        head = started_with(f"TMPDIR={work / 'head'}")
        left = {pid: args for pid, (_, _, args) in processes().items() if pid in head}
        stop_processes(list(head))
        stop_processes(list(started_with(f"TMPDIR={work / 'launcher'}")))  # the launcher's ssh masters
        for path in sorted(ssh_control_dirs() - control_before):
            shutil.rmtree(path, ignore_errors=True)
    assert down_failure is None, down_failure
    assert not left, f"ray down left the head's processes running: {left}"


def run(command: list[str | Path], env: dict[str, str] | None = None) -> None:
    """Run ``command`` from the repository root; fail with its output if it fails."""
    assert (error := failure(command, env)) is None, error


def failure(command: list[str | Path], env: dict[str, str] | None = None) -> str | None:
    """Run ``command`` from the repository root without standard input, for at most
    ``TIMEOUT`` seconds; None if it succeeds, else what went wrong, with its output."""
    shown = " ".join(map(str, command))
    try:
        done = subprocess.run([str(part) for part in command], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as timeout:
        return f"{shown}: still running after {TIMEOUT} s\n{timeout.stdout or ''}{timeout.stderr or ''}"
    if done.returncode != 0:
        return f"{shown}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, server: subprocess.Popen, log: Path, seconds: float = 30) -> None:
    """Return once ``server`` accepts connections on ``port``; fail if it exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.poll() is None, f"sshd exited: {log.read_text()}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"sshd did not listen on port {port}: {log.read_text()}")


def processes() -> dict[int, tuple[int, str, str]]:
    """Every live process: pid -> (parent pid, command name, command line)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            comm_end = (stat := (proc / "stat").read_text()).rindex(")")
            state, ppid = stat[comm_end + 2:].split()[:2]
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            found[int(proc.name)] = (int(ppid), stat[stat.index("(") + 1:comm_end], args)
    return found


def descendants(pid: int) -> list[int]:
    """The children of ``pid``, their children, and so on."""
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in processes().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def started_with(variable: str) -> set[int]:
    """The processes whose environment holds ``variable`` (``NAME=value``)."""
    found = set()
    for pid in processes():
        try:
            if variable.encode() in (Path("/proc") / str(pid) / "environ").read_bytes().split(b"\0"):
                found.add(pid)
        except OSError:
            continue
    return found


def stop_processes(pids: list[int], grace: float = 15) -> None:
    """SIGTERM ``pids``, then SIGKILL those still running after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while (pids := [pid for pid in pids if pid in processes()]) and time.monotonic() < deadline:
            time.sleep(0.2)


def ssh_control_dirs() -> set[Path]:
    """The directories of the launcher's ssh connection sockets, always under /tmp:
    /tmp/ray_ssh_USER and in it one per cluster name."""
    tops = set(Path("/tmp").glob("ray_ssh_*"))
    return tops | {entry for top in tops for entry in top.iterdir()}


if __name__ == "__main__":  # the launch, in the PID namespace the test made
    launch(Path(sys.argv[1]))
