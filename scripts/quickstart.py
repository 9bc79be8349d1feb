"""Set dcmap_dist up in a virtual environment ``.venv`` of the checkout and solve the
paper's example: the README's first quick-start command.

    python3 scripts/quickstart.py            # then: .venv/bin/python -m pytest -q

Standard library only, so that it runs on a fresh machine's Python 3.11 or later. It
makes ``.venv`` (Debian and Ubuntu ship Python without ``ensurepip`` unless
``python3-venv`` is installed: the environment is then made without pip, and the
system's pip installs into it), installs the package with its test extras (compiling
the search's hot modules when a C compiler is there, pure Python otherwise), and runs
``dcmap solve paper-example``. A second run reuses ``.venv``. Exit code 0 when all of
that worked.
"""

from __future__ import annotations

import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"


def step(what: str, command: list[str]) -> None:
    print(f"quickstart: {what}: {' '.join(command)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"quickstart: {what} failed (exit {done.returncode})")
    print(f"quickstart: {what} took {time.monotonic() - started:.0f} s", flush=True)


def make_environment() -> list[str]:
    """Make ``.venv`` if it is missing; the command that runs pip for it."""
    own_pip = [str(PYTHON), "-m", "pip"]
    if PYTHON.exists():
        return own_pip
    try:
        venv.create(VENV, with_pip=True)
        return own_pip
    except subprocess.CalledProcessError:  # no ensurepip (Debian, Ubuntu without python3-venv)
        venv.create(VENV, with_pip=False, clear=True)
        system_pip = [sys.executable, "-m", "pip", "--python", str(PYTHON)]
        if subprocess.run([*system_pip[:3], "--version"], capture_output=True).returncode != 0:
            sys.exit("quickstart: this Python has neither ensurepip nor pip; install one of them "
                     "(Debian, Ubuntu: apt-get install python3-venv)")
        return system_pip


def main() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"quickstart: dcmap_dist needs Python 3.11 or later, this is {sys.version.split()[0]}")
    pip = make_environment()
    step("install (about two minutes: it compiles the search)", [*pip, "install", "--quiet", "-e", ".[test]"])
    step("engine", [str(VENV / "bin" / "dcmap"), "--version"])
    step("solve the paper's example", [str(VENV / "bin" / "dcmap"), "solve", "paper-example"])
    print("quickstart: done; run the tests with: .venv/bin/python -m pytest -q", flush=True)


if __name__ == "__main__":
    main()
