"""A two-node Ray cluster on this machine for the tests of lost and frozen nodes (issue
50): a head started with ``ray start --head`` and a second node with ``ray start
--address``, each with CPUs of its own, in a temporary folder of their own and with an
authentication token of their own (so that no test depends on the environment an
earlier one left). The second node is lost by signalling its processes by id: its
raylet, what the raylet started (the workers), and the node's other daemons.
Everything the cluster started is ended by process id, never with ``ray stop``
(another Ray on this machine survives)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
RAY = BIN / "ray"
DCMAP = BIN / "dcmap"


def processes() -> dict[int, tuple[int, str]]:
    """Every process: its parent and its command line."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry)] = (ppid, args)
    return found


def descendants(root: int, table: dict[int, tuple[int, str]] | None = None) -> list[int]:
    """The processes started by ``root``, and by those, and so on."""
    table = processes() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def mentions(pid: int, folder: str, args: str) -> bool:
    """Whether a process names ``folder`` on its command line or has a file open in it
    (Ray's agents rename themselves, but keep their logs open)."""
    if folder in args:
        return True
    try:
        return any(folder in os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TwoNodes:
    """The cluster: :meth:`start` the head, :meth:`add_node` the second node,
    :meth:`signal_node` it, :meth:`close` everything (by process id)."""

    def __init__(self, cpus: int = 2) -> None:
        self.cpus = cpus
        self.folder = tempfile.mkdtemp(prefix="d50-", dir="/tmp")  # short: Ray's socket paths go in it
        token = Path(self.folder) / "token"
        token.write_text(secrets.token_hex(32))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                    "RAY_AUTH_TOKEN_PATH": str(token)}
        self.env.pop("RAY_AUTH_TOKEN", None)
        self.env.pop("RAY_ADDRESS", None)
        self.node: list[int] = []  # the second node's daemons (its raylet first)
        self.started: set[int] = set()  # every process the cluster started that we saw

    def _ray_start(self, *args: str) -> list[int]:
        before = set(processes())
        done = subprocess.run([str(RAY), "start", f"--num-cpus={self.cpus}", "--disable-usage-stats", *args],
                              env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)
        table = processes()
        new = [pid for pid, (_, cmd) in table.items() if pid not in before and mentions(pid, self.folder, cmd)]
        self.started.update(new)
        if done.returncode != 0:
            raise RuntimeError(f"ray start {' '.join(args)} failed: {done.stderr[-3000:]}")
        return new

    def start(self, dashboard: bool = False) -> TwoNodes:
        """Start the head; with ``dashboard``, its dashboard and job server too (at
        :attr:`jobs`)."""
        options = ["--include-dashboard=false"]
        if dashboard:
            port = free_port()
            self.jobs = f"http://127.0.0.1:{port}"
            options = ["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={port}",
                       f"--dashboard-agent-listen-port={free_port()}"]
        self._ray_start("--head", f"--port={self.port}", *options, f"--temp-dir={self.folder}/ray")
        return self

    def add_node(self) -> None:
        """Start the second node (again, after one was lost)."""
        new = self._ray_start(f"--address={self.address}")
        table = processes()
        raylets = [pid for pid in new if "raylet/raylet" in table.get(pid, (0, ""))[1]]
        if len(raylets) != 1:
            raise RuntimeError(f"the second node's raylet not found among {new}")
        self.node = raylets + [pid for pid in new if pid != raylets[0]]
        self._wait_for_nodes(2)

    def _wait_for_nodes(self, count: int, seconds: float = 60.0) -> None:
        code = ("import ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
                "print(sum(1 for n in ray.nodes() if n['Alive']))" % self.address)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            out = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL, timeout=120)
            if out.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(1)
        raise RuntimeError(f"the cluster did not show {count} live nodes in {seconds:.0f} s")

    def node_processes(self) -> list[int]:
        """The second node's processes now: its daemons and what its raylet started."""
        table = processes()
        pids = [pid for pid in self.node if pid in table]
        if self.node and self.node[0] in table:
            pids += descendants(self.node[0], table)
        self.started.update(pids)
        return pids

    def node_workers(self) -> list[int]:
        """The dcmap workers running on the second node."""
        table = processes()
        return [pid for pid in self.node_processes() if "Worker" in table.get(pid, (0, ""))[1]]

    def signal_node(self, sig: int) -> list[int]:
        """Send ``sig`` (SIGKILL: the node is lost; SIGSTOP: it freezes) to every process
        of the second node; their ids."""
        pids = self.node_processes()
        if sig == signal.SIGSTOP:  # the raylet last, so that it does not see its workers stop
            pids = pids[1:] + pids[:1]
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        return pids

    def close(self) -> None:
        """End every process the cluster started (by id: what we saw start, what names
        its folder, and what those started), then remove its folder."""
        table = processes()
        pids = set(pid for pid in self.started if pid in table)
        pids |= {pid for pid, (_, cmd) in table.items() if mentions(pid, self.folder, cmd)}
        for pid in list(pids):
            pids.update(descendants(pid, table))
        pids.discard(os.getpid())
        for pid in pids:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        subprocess.run(["rm", "-rf", self.folder], check=False)

    def dcmap(self, *args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
        """``dcmap ARGS --address`` this cluster, standard error to a pipe, in a process
        group of its own (so that a test can signal it as a terminal would)."""
        return subprocess.Popen([str(DCMAP), *args, "--address", self.address], env={**self.env, **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, **kwargs)
