"""Run tests on the native engine built with AddressSanitizer, UndefinedBehaviorSanitizer
and bounds-checked containers (docs/engine.md, "Debugging it").

    .venv/bin/python scripts/test_sanitized.py                   # the equivalence and fuzz tests
    .venv/bin/python scripts/test_sanitized.py tests/test_cli.py   # or any pytest arguments

The checkout's sources are installed with ``DCMAP_SANITIZE=1`` into a temporary folder
(as pip builds them, in isolation), which is put first on ``PYTHONPATH``; Python runs with
the sanitizers' runtime and the C++ runtime preloaded (``LD_PRELOAD``; leak checks off:
the interpreter's own allocations are not ours to judge). A memory error or undefined behaviour in the core aborts the
test run. By default it runs the quick equivalence tests, the batches' tests and the decoders' fuzz tests for
30 s each (``DCMAP_FUZZ_SECONDS``). CI runs it. Exit code: pytest's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# -s: a sanitizer's report goes to stderr as the process aborts, where pytest would hold it
DEFAULT = ["-s", "tests/test_engine_equivalence.py", "tests/test_native_fuzz.py", "tests/test_batches.py",
           "tests/test_shares.py", "-m", "not slow"]
BUILT = shutil.ignore_patterns("*.so", "*.c", "*.cpp", "__pycache__", "built-sources.json")
PROBE = "import dcmap_dist, dcmap_dist.compiled as c; print(dcmap_dist.__file__); print(c.describe())"


def run_tests(tree: Path, engine: str, arguments: list[str], extra: dict[str, str] | None = None) -> int:
    """pytest with ``arguments`` on the package in ``tree``, which must be what Python
    imports and run ``engine`` (tests/conftest.py checks it again); ``extra``: more
    environment. Its exit code."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
           "DCMAP_EXPECT_ENGINE": engine, **(extra or {})}
    probe = subprocess.run([sys.executable, "-P", "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    where, found = probe.stdout.split("\n")[:2]
    if not where.startswith(str(tree)) or found != engine:
        sys.exit(f"test_sanitized: Python imports {where} ({found}), not the {engine} in {tree}")
    print(f"test_sanitized: {found} from {tree}", flush=True)
    # -P: the checkout (with its extension module) is not put first on sys.path
    return subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", *arguments], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL).returncode


def main() -> None:
    # the sanitizer's runtime, and the C++ runtime before it is needed (ASan intercepts
    # __cxa_throw, and the interpreter does not link libstdc++ itself)
    runtimes = [subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True,
                               check=True).stdout.strip() for name in ("libasan.so", "libstdc++.so")]
    missing = [path for path in runtimes if not Path(path).is_file()]
    if missing:
        sys.exit(f"test_sanitized: gcc names no runtime at {missing}: install libasan and libstdc++")
    with tempfile.TemporaryDirectory(prefix="dcmap-sanitized-") as folder:
        print("test_sanitized: building the native engine with the sanitizers ...", flush=True)
        source, installed = Path(folder) / "source", Path(folder) / "installed"
        source.mkdir()
        for name in ("setup.py", "pyproject.toml", "README.md", "dcmap_dist"):  # the sources alone, no builds
            copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
            copy(ROOT / name, source / name, **({"ignore": BUILT} if copy is shutil.copytree else {}))
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed),
                        str(source)], check=True, env={**os.environ, "DCMAP_SANITIZE": "1"})
        # allocator_may_return_null: an impossible request (a damaged batch's pickle claiming a
        # memo of petabytes) fails as without the sanitizers, with MemoryError, not an abort
        code = run_tests(installed, "native engine", sys.argv[1:] or DEFAULT, {
            "LD_PRELOAD": " ".join(runtimes),
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:handle_abort=1:allocator_may_return_null=1",
            "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
            "DCMAP_FUZZ_SECONDS": os.environ.get("DCMAP_FUZZ_SECONDS", "30")})
    sys.exit(code)


if __name__ == "__main__":
    main()
