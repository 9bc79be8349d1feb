"""Run tests on the pure-Python engine: the package's own sources, without the modules
the install compiled.

    .venv/bin/python scripts/test_pure_python.py                  # the exactness tests
    .venv/bin/python scripts/test_pure_python.py tests/test_cli.py  # or any pytest arguments

The install compiles the search's hot modules with Cython where it can and runs the same
sources as plain Python where it cannot; both must give the same results. This copies
``dcmap_dist/`` without its extension modules into a temporary folder, puts that folder
first on ``PYTHONPATH`` (also for the subprocesses the tests start), checks that it is
what Python imports and that it reports the pure Python engine, then runs pytest with the
arguments given (by default, the exactness tests that run serially in minutes); the test session
refuses to start if it would import another engine (``DCMAP_EXPECT_ENGINE``). CI runs it after
the whole suite. Exit code: pytest's.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the exactness tests against brute force and the independent oracle, serially, with the
# sweeps against brute force but not the long one against the oracle (about 6 minutes)
DEFAULT = ["tests/test_exactness.py", "tests/test_solve.py", "tests/test_problem.py", "tests/test_bounds.py",
           "tests/test_combinations.py", "tests/test_serial.py", "tests/test_branch_queue.py", "tests/test_link_key.py",
           "tests/test_batches.py", "tests/test_shares.py", "-m", "not ray",
           "-k", "not (agrees_with_the_oracle and not quick) and not 280"]
PROBE = "import dcmap_dist, dcmap_dist.compiled as c; print(dcmap_dist.__file__); print(c.describe())"


def pure_copy(into: Path) -> Path:
    """The ``dcmap_dist/`` Python imports (the checkout's, or the one installed where
    scripts/test_matrix.py tests a wheel) copied into ``into`` without compiled modules or
    caches."""
    package = Path(importlib.util.find_spec("dcmap_dist").origin).parent
    shutil.copytree(package, into / "dcmap_dist",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__", "built-sources.json"))
    return into


def run_tests(tree: Path, engine: str, arguments: list[str], extra: dict[str, str] | None = None) -> int:
    """pytest with ``arguments`` on the package in ``tree``, which must be what Python
    imports and run ``engine`` (tests/conftest.py checks it again); ``extra``: more
    environment. Its exit code."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
           "DCMAP_EXPECT_ENGINE": engine, **(extra or {})}
    probe = subprocess.run([sys.executable, "-P", "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    where, found = probe.stdout.split("\n")[:2]
    if not where.startswith(str(tree)) or found != engine:
        sys.exit(f"{Path(sys.argv[0]).stem}: Python imports {where} ({found}), not the {engine} in {tree}")
    print(f"{Path(sys.argv[0]).stem}: {found} from {tree}", flush=True)
    # -P: the checkout (with its compiled modules) is not put first on sys.path
    return subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", *arguments], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL).returncode


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dcmap-pure-") as folder:
        # DCMAP_ENGINE=python: the Python engine asked for by name (no warning that the
        # native one is not built)
        code = run_tests(pure_copy(Path(folder)), "pure Python engine", sys.argv[1:] or DEFAULT,
                         {"DCMAP_ENGINE": "python"})
    sys.exit(code)


if __name__ == "__main__":
    main()
