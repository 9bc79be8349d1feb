"""The real launch path of cluster_configs/README.md, on this machine: ``ray up`` a
local-provider cluster made from ``cluster_configs/workstation.yaml``, ``ray submit``
``scripts/solve.py`` to solve asia with two workers, check the result file, ``ray down``.

Ray's launcher reaches the "head node" (this machine) over ssh, so the test starts an
sshd of its own on a free loopback port, with its own host key, authorised key and a
throw-away home directory whose ``.bashrc`` puts this Python first on ``PATH`` (every
launcher command runs in a login shell and calls plain ``python`` and ``ray``) and gives
the head a temporary directory of its own, so that its files stay in the test's
directory and its processes can be told from other Ray sessions on the machine. It needs
``sshd``, ``ssh``, ``ssh-keygen``, ``nc`` and ``rsync`` (.ci/run installs them).

``ray up`` and ``ray down`` run ``ray stop``, which ends every Ray process on the
machine, so tests/conftest.py runs this module last. Whatever the test starts (sshd,
the Ray head, the launcher's ssh connection) and the files it leaves are removed, also
when it fails.
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


def test_solve_script_joins_the_running_cluster_unless_told_otherwise() -> None:
    """scripts/solve.py adds ``--address auto`` to the user's arguments unless they
    choose an address."""
    spec = importlib.util.spec_from_file_location("solve_script", ROOT / "scripts" / "solve.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.solve_arguments(["asia", "--workers", "2"]) == ["solve", "asia", "--workers", "2", "--address", "auto"]
    assert script.solve_arguments(["asia", "--address", "10.0.0.1:6379"]) == ["solve", "asia", "--address", "10.0.0.1:6379"]
    assert script.solve_arguments(["asia", "--address=local"]) == ["solve", "asia", "--address=local"]


@pytest.mark.skipif(
    any(shutil.which(tool, path=TOOL_PATH) is None for tool in TOOLS),
    reason=f"needs {', '.join(TOOLS)} (apt-get install openssh-server rsync netcat-openbsd)",
)
def test_ray_submit_solves_asia_with_two_workers() -> None:
    """``ray up``, ``ray submit scripts/solve.py -- asia --workers 2``, ``ray down``."""
    with tempfile.TemporaryDirectory(prefix="dcmap-", dir="/tmp") as name:  # short: Ray's socket paths go in it
        work = Path(name)
        result = work / "result.json"
        with sshd(work) as port:
            config = write_cluster_config(work, port)
            env = launcher_environment(work)
            with ray_cluster(config, env, work):
                run([RAY, "submit", config, "scripts/solve.py", "--",
                     "asia", "--workers", "2", "--output", result], env)
        solved = json.loads(result.read_text())
        assert math.isclose(solved["optimal_cost"], 68.8, rel_tol=1e-9), solved["optimal_cost"]
        assert solved["proven_optimal"] is True
        assert solved["solution_count"] == 38


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
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():  # `ray up` is about to stop this session's Ray
        ray.shutdown()
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
