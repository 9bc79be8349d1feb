"""The build matrix: the wheel built and tested on each Python dcmap_dist supports (CI runs it).

    python3 scripts/test_matrix.py                        # 3.11, 3.12 and 3.13
    python3 scripts/test_matrix.py --python 3.12 --python 3.13   # or some of them (CI runs these two)
    python3 scripts/test_matrix.py --quick                # the quick subset on each (about 14 minutes)
    python3 scripts/test_matrix.py --keep /tmp/matrix     # keep the wheels, environments and logs

For each Python it builds the wheel as a user's ``pip install`` does (``pip wheel . --no-deps``,
with build isolation: the Cython and setuptools of pyproject.toml's ``[build-system]
requires``), makes a fresh virtual environment outside the checkout, installs the wheel
with its test extras, checks that ``dcmap --version`` says the native engine and that
``dcmap_dist`` is imported from the environment's site-packages, solves asia, and runs
tests against the installed package, from a copy of the checkout's tests without the
package's sources (so nothing imports the checkout's ``dcmap_dist``), with
``../shared`` beside it as the tests expect. What each Python runs (:data:`PLAN`), so
that CI, which runs the whole suite on 3.11 from the editable install (and so the matrix
on 3.12 and 3.13 alone), stays within its hour:

* 3.11: the smoke tests (:data:`SMOKE`: the build's checks, the engines, solve);
* 3.12: with the **oldest** numpy, networkx, ray and pyarrow that pyproject.toml's
  dependencies admit (their floors, as ``==`` constraints), without the test extras that
  cannot install beside them (:data:`NOT_WITH_THE_OLDEST`: their tests skip), the smoke
  tests and the quick tests of what uses those packages (:data:`OF_THE_DEPENDENCIES`:
  networks and their formats, numpy's arrays, the Arrow checkpoints, Ray's workers, the
  batches, the result's outputs, the studies), the rest of the package being the same
  whatever their versions;
* 3.13: with the newest, the smoke tests and the tests that tell one Python from another
  (:data:`ACROSS_PYTHONS`: the engines' equivalence to the bit, which Python 3.12's ``sum``
  broke, the garbage collector, networkx's formats, the inputs).

The wheels are built one at a time, in order, each while the tests of the Python before
run (a build takes both cores for a minute or two, the tests mostly one).
``--quick`` runs the quick subset on every Python instead. The quick subset leaves out
the tests of the checkout rather than of the package (:data:`OF_THE_CHECKOUT`), which the
main suite runs. A run that is not the quick subset installs without compiling the
packages' bytecode (``pip install --no-compile``: half the install's time; its tests
start few processes).

A Python that is not found (under ``pyenv root``'s versions, else ``python3.X`` on the
``PATH``) is skipped, said aloud; under ``CI=true`` it is a failure. pip's output goes to
a log file per step, whose tail is printed when the step fails; pip's download cache is
shared by the environments. Standard library only. Exit code 0 when every Python passed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "test_matrix"
# not copied into the build's source or the tests' tree: what a build or a run leaves
LEFT_BY_BUILDS = ("*.so", "*.pyd", "*.c", "*.cpp", "*.html", "__pycache__", "*.egg-info", "build", "dist", ".venv",
                  ".git", ".pytest_cache", "built-sources.json", "tmp")
SMOKE = ["tests/test_build.py", "tests/test_compiled.py", "tests/test_solve.py", "-m", "not slow"]
# the tests of the modules that use numpy, networkx, pyarrow or ray (io, model, checkpoint,
# run/ray, search/batches, result, study), run with their oldest versions
OF_THE_DEPENDENCIES = [*SMOKE[:-2], "tests/test_network.py", "tests/test_topology.py", "tests/test_bif.py",
                       "tests/test_inputs.py", "tests/test_outputs.py", "tests/test_templates.py",
                       "tests/test_checkpoint.py", "tests/test_batches.py", "tests/test_distributed.py",
                       "tests/test_growth.py", "tests/test_similarity.py", "-m", "not slow"]
ACROSS_PYTHONS = [*SMOKE[:-2], "tests/test_engine_equivalence.py", "tests/test_batches.py", "tests/test_shares.py",
                  "tests/test_serial.py", "tests/test_network.py", "tests/test_inputs.py", "-m", "not slow"]
# tests of the checkout rather than of the package, which CI's main suite runs: the
# benchmark scripts (they read git: worktrees of HEAD, its commit), the layering of the
# sources (tests/test_layers.py reads dcmap_dist/ beside tests/)
OF_THE_CHECKOUT = ["tests/test_benchmark_engine.py", "tests/test_benchmark_memory.py", "tests/test_layers.py"]
QUICK = ["tests", "-m", "not slow", *(f"--ignore={path}" for path in OF_THE_CHECKOUT)]
# test extras left out of the run with the oldest dependencies: (why; their tests skip)
NOT_WITH_THE_OLDEST = {"pgmpy": "every pgmpy>=1.1 needs numpy>=2.0"}


@dataclass
class Run:
    """One Python's run: its tests (pytest arguments) and its dependencies (newest or oldest)."""

    tests: list[str]
    oldest: bool = False
    times: dict[str, float] = field(default_factory=dict)
    outcome: str = "not run"


PLAN = {"3.11": Run(SMOKE), "3.12": Run(OF_THE_DEPENDENCIES, oldest=True), "3.13": Run(ACROSS_PYTHONS)}
KINDS = {id(SMOKE): "smoke tests", id(ACROSS_PYTHONS): "smoke and across-Python tests", id(QUICK): "quick subset",
         id(OF_THE_DEPENDENCIES): "smoke and dependencies' tests"}


class Failed(Exception):
    """A step failed (its message says which, and the log's tail was printed)."""


def say(text: str) -> None:
    print(f"{NAME}: {text}", flush=True)


def find_python(version: str) -> Path | None:
    """The newest ``version``.N under pyenv's versions, else ``python{version}`` on the PATH."""
    root = os.environ.get("PYENV_ROOT")
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip() or root
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    if root:
        for folder in Path(root, "versions").glob(f"{version}.*"):
            patch = re.fullmatch(re.escape(version) + r"\.(\d+)", folder.name)
            if patch and (folder / "bin" / "python3").exists():
                found.append((int(patch.group(1)), folder / "bin" / "python3"))
    if found:
        return max(found)[1]
    on_path = shutil.which(f"python{version}")
    return Path(on_path) if on_path else None


def step(what: str, command: list[str], log: Path, **options) -> str:
    """Run ``command`` with its output in ``log``; its output. On failure, the log's tail
    is printed and :class:`Failed` raised."""
    with open(log, "w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                              **options)
    text = log.read_text(errors="replace")
    if done.returncode != 0:
        tail = "\n".join(text.splitlines()[-60:])
        print(f"--- the last lines of {log} ---\n{tail}\n---", flush=True)
        raise Failed(f"{what} failed (exit {done.returncode}; {log})")
    return text


def copy_tree(into: Path, with_package: bool) -> Path:
    """The checkout's files, without what builds and runs leave (and without the package's
    sources unless ``with_package``)."""
    ignore = shutil.ignore_patterns(*LEFT_BY_BUILDS)
    into.mkdir(parents=True)
    for item in ROOT.iterdir():
        if item.name in LEFT_BY_BUILDS or (item.name == "dcmap_dist" and not with_package) or item.is_symlink():
            continue
        if item.is_dir():
            shutil.copytree(item, into / item.name, ignore=ignore)
        elif not item.name.endswith((".so", ".pyd")):
            shutil.copy2(item, into / item.name)
    return into


def oldest_constraints() -> str:
    """``name==floor`` for each dependency of pyproject.toml given as ``name>=floor``."""
    lines = []
    for requirement in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([0-9][0-9.]*)", requirement.strip())
        if match is None:
            raise SystemExit(f"{NAME}: pyproject.toml's dependency {requirement!r} is not name>=floor")
        lines.append(f"{match.group(1)}=={match.group(3)}")
    return "\n".join(lines) + "\n"


def build(version: str, python: Path, run: Run, work: Path, source: Path, after: threading.Event | None) -> Path:
    """The wheel built by ``python``, once ``after`` is set (the Python before has begun
    its tests, or ended); raises :class:`Failed`."""
    if after is not None:
        after.wait()
    wheels = work / "wheels" / version
    started = time.monotonic()
    say(f"{version}: building the wheel with {python} (pinned build tools, isolated) ...")
    try:
        step(f"{version}: the wheel's build", [str(python), "-m", "pip", "wheel", str(source), "--no-deps", "-w",
                                                str(wheels)], work / "logs" / f"{version}-build.log", cwd=work)
    finally:
        run.times["build"] = time.monotonic() - started
    [wheel] = wheels.glob("dcmap_dist-*.whl")
    say(f"{version}: built {wheel.name} in {run.times['build']:.0f} s")
    return wheel


def install_and_test(version: str, python: Path, wheel: Path, run: Run, work: Path, tests: Path,
                     testing: threading.Event) -> None:
    """Install ``wheel`` in a fresh environment of ``python``, check it and test it
    (``testing`` set as the tests begin); raises :class:`Failed`."""
    logs = work / "logs"
    venv = work / "venvs" / version
    started = time.monotonic()
    step(f"{version}: the environment", [str(python), "-m", "venv", str(venv)], logs / f"{version}-venv.log")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", *([] if run.tests is QUICK else ["--no-compile"]),
           f"{wheel}[test]"]
    if run.oldest:
        constraints = work / "oldest-constraints.txt"
        constraints.write_text(oldest_constraints())
        extras = [extra for extra in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"]["test"] if re.match(r"[A-Za-z0-9_.-]+", extra)[0] not in NOT_WITH_THE_OLDEST]
        # --prefer-binary: the test extras' newest need a newer numpy; their older wheels
        # rather than building an sdist
        pip = [*pip[:-1], str(wheel), *extras, "--constraint", str(constraints), "--prefer-binary"]
        say(f"{version}: the oldest dependencies pyproject.toml admits: "
            f"{', '.join(constraints.read_text().split())}; without "
            f"{', '.join(f'{name} ({why})' for name, why in NOT_WITH_THE_OLDEST.items())}")
    step(f"{version}: the install", pip, logs / f"{version}-install.log", cwd=work)
    versions = step(f"{version}: pip list", [str(venv / "bin" / "python"), "-m", "pip", "list"],
                    logs / f"{version}-pip-list.log")
    listed = dict(re.findall(r"^(numpy|networkx|ray|pyarrow|pandas|pgmpy)\s+(\S+)", versions, re.M))
    run.times["install"] = time.monotonic() - started
    say(f"{version}: installed in {run.times['install']:.0f} s: "
        f"{', '.join(f'{name} {number}' for name, number in sorted(listed.items()))}")

    env = {**os.environ, "PATH": os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", "")])}
    env.pop("PYTHONPATH", None)
    env.pop("DCMAP_ENGINE", None)
    where = step(f"{version}: import", [str(venv / "bin" / "python"), "-P", "-c",
                                        "import dcmap_dist; print(dcmap_dist.__file__)"],
                 logs / f"{version}-import.log", cwd=tests, env=env).strip().splitlines()[-1]
    engine = step(f"{version}: dcmap --version", [str(venv / "bin" / "dcmap"), "--version"],
                  logs / f"{version}-version.log", cwd=tests, env=env).strip()
    say(f"{version}: {engine}, dcmap_dist from {where}")
    if not Path(where).resolve().is_relative_to(venv.resolve()) or "site-packages" not in where:
        raise Failed(f"{version}: dcmap_dist is imported from {where}, not from {venv}'s site-packages")
    if not engine.endswith("(native engine)"):
        raise Failed(f"{version}: the wheel's install does not run the native engine: {engine}")
    solved = step(f"{version}: dcmap solve asia", [str(venv / "bin" / "dcmap"), "solve", "asia"],
                  logs / f"{version}-solve.log", cwd=work, env=env)
    say(f"{version}: dcmap solve asia: {[line for line in solved.splitlines() if 'asia:' in line][-1].strip()}")

    started = time.monotonic()
    testing.set()
    say(f"{version}: pytest {' '.join(run.tests)} ...")
    # -P: the tests' folder is not put first on sys.path; DCMAP_EXPECT_ENGINE: the session
    # refuses to start on another engine (tests/conftest.py)
    try:
        output = step(f"{version}: the tests", [str(venv / "bin" / "python"), "-P", "-m", "pytest", "-q",
                                                 "-p", "no:cacheprovider", "--rootdir", str(tests), *run.tests],
                      logs / f"{version}-tests.log", cwd=tests, env={**env, "DCMAP_EXPECT_ENGINE": "native engine"})
    finally:
        run.times["tests"] = time.monotonic() - started
    summary = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    say(f"{version}: {summary[-1].strip('= ') if summary else 'tests done'} in {run.times['tests']:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", choices=sorted(PLAN), help="only this Python (repeatable)")
    parser.add_argument("--quick", action="store_true", help="the quick subset on every Python")
    parser.add_argument("--keep", type=Path, help="make everything in this new folder, and keep it")
    args = parser.parse_args()
    if args.quick:
        for run in PLAN.values():
            run.tests = QUICK
    ci = os.environ.get("CI", "").lower() in ("true", "1", "yes")
    if args.keep:
        args.keep.mkdir(parents=True)
        work = args.keep.resolve()
    else:
        work = Path(tempfile.mkdtemp(prefix="dcmap-matrix-"))
    failed, skipped = [], []
    began = time.monotonic()
    try:
        (work / "logs").mkdir()
        source = copy_tree(work / "source", with_package=True)
        tests = copy_tree(work / "checkout", with_package=False)  # the tests read ../shared
        if (ROOT.parent / "shared").is_dir():
            (work / "shared").symlink_to(ROOT.parent / "shared")
        pythons = {}
        for version in args.python or sorted(PLAN):
            pythons[version] = find_python(version)
            if pythons[version] is None:
                PLAN[version].outcome = "not found"
                (failed if ci else skipped).append(version)
                say(f"{version}: no Python {version} (pyenv root's versions, python{version} on the PATH): "
                    f"{'a failure under CI' if ci else 'skipped'}")
        # the wheels are built one at a time, in order, each while the tests of the
        # Python before run (they use one core of the two, mostly; an install and a build
        # at once only slow each other)
        found = [version for version, python in pythons.items() if python is not None]
        testing = {version: threading.Event() for version in found}
        with ThreadPoolExecutor(max_workers=1) as builder:
            wheels = {version: builder.submit(build, version, pythons[version], PLAN[version], work, source,
                                              testing[found[i - 1]] if i else None)
                      for i, version in enumerate(found)}
            try:
                for version, building in wheels.items():
                    run = PLAN[version]
                    try:
                        install_and_test(version, pythons[version], building.result(), run, work, tests,
                                         testing[version])
                        run.outcome = "passed"
                    except Failed as failure:
                        run.outcome = "FAILED"
                        failed.append(version)
                        say(str(failure))
                    finally:
                        testing[version].set()  # the next build waits no longer
            finally:  # interrupted: no build waits, none starts (one under way ends first)
                for event in testing.values():
                    event.set()
                builder.shutdown(wait=False, cancel_futures=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    say(f"{'python':8} {'build':>7} {'install':>8} {'tests':>7}  outcome")
    for version in args.python or sorted(PLAN):
        run = PLAN[version]
        times = [f"{run.times[part] / 60:.1f} min" if part in run.times else "-" for part in ("build", "install",
                                                                                               "tests")]
        kind = KINDS[id(run.tests)] + (", oldest deps" if run.oldest else "")
        say(f"{version:8} {times[0]:>7} {times[1]:>8} {times[2]:>7}  {run.outcome} ({kind})")
    say(f"{(time.monotonic() - began) / 60:.1f} min in all" + (f"; kept in {work}" if args.keep else ""))
    if failed:
        sys.exit(f"{NAME}: failed on {', '.join(failed)}")
    if skipped:
        say(f"skipped (not found): {', '.join(skipped)}")


if __name__ == "__main__":
    main()
