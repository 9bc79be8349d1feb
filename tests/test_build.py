"""Tests for the check of a build at import (dcmap_dist.compiled.check_build, warn_build):
an extension module that could crash is refused, a source of the native engine edited
after the build and a native engine not built are one warning each, once; on fake
packages, without a build."""

from __future__ import annotations

import importlib.machinery
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from dcmap_dist import compiled
from dcmap_dist.cli import main
from dcmap_dist.compiled import NATIVE, BuildError, BuildWarning

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
SOURCES = {"search/problem.py": "x = 1\n", "search/native_engine.pyx": "# the binding\n",
           "search/native/bits.hpp": "// bits\n", "search/native/store.hpp": "// store\n"}


def record(package: Path, native=True, not_built=None, **changes) -> None:
    """Record a build of ``package`` (of its native engine if ``native``) as setup.py
    does, with ``changes``."""
    built = compiled.new_record({NATIVE: compiled.source_digests(package)} if native else {},
                                not_built or {}, "3.3.1", tools={"setuptools": "84.2.1"})
    compiled.write_record(package, {**built, **changes}, keep_others=False)


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A checkout whose package has the native engine built (its extension module fake:
    Python would fail to import it) and recorded; compiled.py looks at it."""
    root = tmp_path / "checkout"
    package = root / "dcmap_dist"
    (package / "search" / "native").mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / "pyproject.toml").write_text("")
    for name, text in SOURCES.items():
        (package / name).write_text(text)
    (package / f"{NATIVE}{SUFFIX}").write_bytes(b"not an extension module")
    monkeypatch.setattr(compiled, "PACKAGE", package)
    monkeypatch.setattr(compiled, "_stale", [])
    monkeypatch.setattr(compiled, "_warned", set())
    monkeypatch.delenv(compiled.ENGINE_VARIABLE, raising=False)
    record(package)
    return package


def build_warnings() -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled.warn_build()
    assert all(issubclass(w.category, BuildWarning) for w in caught)
    return [str(w.message) for w in caught]


def test_a_build_as_recorded_runs_silently(package):
    compiled.check_build()
    assert build_warnings() == []
    os.utime(package / "search" / "native" / "bits.hpp", (3_000_000_000, 3_000_000_000))  # newer, the same text
    (package / "search" / "problem.py").write_text("x = 2\n")  # the Python engine runs its sources
    compiled.check_build()
    assert build_warnings() == []


@pytest.mark.parametrize("edited", ["search/native_engine.pyx", "search/native/bits.hpp"])
def test_a_source_edited_after_the_build_is_one_warning_naming_it_once(package, edited):
    with open(package / edited, "a") as source:
        source.write("# edited\n")
    compiled.check_build()  # it runs: the compiled module is the old source's
    first = build_warnings()
    assert len(first) == 1
    assert first[0].startswith(f"dcmap_dist/{edited} changed after the build")
    assert f"the compiled {NATIVE} runs the old source" in first[0]
    assert f"run `pip install -e .` again in {package.parent}" in first[0]
    assert "delete" not in first[0] and "\n" not in first[0]
    if edited.endswith(".hpp"):
        assert "native_engine.pyx" not in first[0]  # the header edited is named, not the binding
    assert build_warnings() == []  # once per process


def test_sources_edited_are_one_warning(package):
    for edited in ("search/native_engine.pyx", "search/native/store.hpp"):
        (package / edited).write_text("edited\n")
    (package / "search" / "native" / "new.hpp").write_text("// a header added\n")
    compiled.check_build()
    [message] = build_warnings()
    assert message.startswith("dcmap_dist/search/native/new.hpp, dcmap_dist/search/native/store.hpp and "
                              "dcmap_dist/search/native_engine.pyx changed after the build")
    assert "the compiled search/native_engine runs the old source" in message


@pytest.mark.parametrize("name", compiled.NO_LONGER_COMPILED)
def test_a_module_an_older_build_compiled_is_refused(package, name):
    """An extension module of the Python engine left by an older dcmap_dist's in-place
    build would run instead of its source: refused, whatever the record says."""
    (package / f"{name}{SUFFIX}").parent.mkdir(parents=True, exist_ok=True)
    (package / f"{name}{SUFFIX}").write_bytes(b"not an extension module")
    with pytest.raises(BuildError) as refused:
        compiled.check_build()
    message = str(refused.value)
    assert f"refuses its compiled module {package / f'{name}{SUFFIX}'}" in message
    assert f"left from a build by an older dcmap_dist, which compiled dcmap_dist/{name}.py" in message
    assert f"Run `pip install -e .` again in {package.parent}" in message


def test_a_build_by_a_cython_known_to_crash_is_refused(package):
    record(package, cython="3.3.0")
    with pytest.raises(BuildError, match=r"native_engine.* was compiled by Cython 3\.3\.0, and it miscompiles .*"
                                         r"segmentation fault.*Run `pip install -e \.` again"):
        compiled.check_build()


def test_a_build_by_another_python_is_refused(package):
    record(package, python="3.10.4", cache_tag="cpython-310")
    running = ".".join(map(str, sys.version_info[:3]))
    with pytest.raises(BuildError, match=rf"built by cpython 3\.10\.4, and this is cpython {re.escape(running)}"):
        compiled.check_build()


@pytest.mark.parametrize("kind", ["missing", "format 1", "another Python's"])
def test_a_build_without_its_record_is_refused(package, kind):
    path = package / compiled.BUILT_SOURCES
    if kind == "missing":
        path.unlink()
        expected = "no record of its build (built-sources.json is missing)"
    elif kind == "format 1":  # the digests alone, as setup.py wrote them before
        path.write_text(json.dumps({NATIVE: "0" * 64}))
        expected = "built-sources.json is of a build that recorded neither the Python nor the Cython"
    else:
        data = json.loads(path.read_text())
        data["builds"] = {".cpython-39-x86_64-linux-gnu.so": data["builds"][SUFFIX]}
        path.write_text(json.dumps(data))
        expected = f"no build by Python {sys.version_info[0]}.{sys.version_info[1]} is recorded"
    with pytest.raises(BuildError, match=re.escape(expected)):
        compiled.check_build()


def test_an_extension_module_the_last_build_did_not_make_is_refused(package):
    record(package, native=False, not_built={NATIVE: "CompileError: ..."})
    with pytest.raises(BuildError, match=r"native_engine.*the last build did not make it"):
        compiled.check_build()


def test_without_extension_modules_nothing_is_refused(package):
    (package / f"{NATIVE}{SUFFIX}").unlink()
    (package / compiled.BUILT_SOURCES).write_text("{not json")
    (package / "search" / "native" / "bits.hpp").write_text("changed\n")
    compiled.check_build()  # the sources run


def test_the_advice_outside_a_checkout_is_to_install_again(package):
    (package.parent / "setup.py").unlink()
    record(package, cython="3.3.0")
    with pytest.raises(BuildError, match=r"Install dcmap_dist again \(pip install --force-reinstall"):
        compiled.check_build()


def test_the_refusal_comes_before_python_imports_the_extension_module(tmp_path):
    """A real copy of the package with an extension module that would crash (here: one
    that is not an extension module at all) and a record of Cython 3.3.0: `import
    dcmap_dist` and `dcmap` fail with the refusal, not with what importing it does."""
    package = tmp_path / "dcmap_dist"
    shutil.copytree(compiled.PACKAGE, package,
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "built-sources.json"))
    (package / f"{NATIVE}{SUFFIX}").write_bytes(b"not an extension module")
    built = compiled.new_record({NATIVE: compiled.source_digests(package)}, {}, "3.3.0")
    compiled.write_record(package, built, keep_others=False)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    for command in (["-c", "import dcmap_dist"], ["-m", "dcmap_dist", "info", "asia"]):
        done = subprocess.run([sys.executable, "-P", *command], env=env, capture_output=True, text=True,
                              cwd=tmp_path)
        assert done.returncode == 1
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"dcmap_dist.compiled.BuildError: dcmap_dist refuses its compiled module "
                               f"{package / f'{NATIVE}{SUFFIX}'}: it was compiled by Cython 3.3.0"), last
        assert "ELF" not in done.stderr and "invalid" not in done.stderr


def test_the_command_line_warns_in_one_line_once(package, capsys, monkeypatch):
    (package / "search" / "native" / "bits.hpp").write_text("// edited\n")
    compiled.check_build()
    assert main(["info", "paper-example"]) == 0
    assert main(["info", "paper-example"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"dcmap: warning: dcmap_dist/search/native/bits.hpp changed after the build, and the compiled "
                   f"{NATIVE} runs the old source: run `pip install -e .` again in {package.parent}"]


def native_missing(package: Path, why: str = "no C++ compiler: g++ is not found", **changes) -> None:
    (package / f"{NATIVE}{SUFFIX}").unlink()
    record(package, native=False, not_built={NATIVE: why}, **changes)


def test_a_native_engine_not_built_is_one_warning_with_the_reason(package, capsys):
    native_missing(package)
    compiled.check_build()
    assert main(["info", "paper-example"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["dcmap: warning: the native engine is not built (no C++ compiler: g++ is not found); searches "
                   "run on the Python engine, 20 to 27 times slower: install g++ and the Python headers "
                   "(Debian, Ubuntu: apt-get install g++ python3-dev), then run `pip install -e .` again in "
                   f"{package.parent}"]
    assert build_warnings() == []  # once per process, also for solve()


def test_a_native_engine_not_built_for_another_reason_names_it(package):
    native_missing(package, "CompileError: command '/usr/bin/g++' failed with exit code 1")
    [message] = build_warnings()
    assert "(CompileError: command '/usr/bin/g++' failed with exit code 1)" in message
    assert "apt-get" not in message and f"run `pip install -e .` again in {package.parent}" in message


def test_no_warning_when_the_python_engine_was_asked_for(package, monkeypatch):
    native_missing(package)
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "python")
    assert build_warnings() == []
    monkeypatch.delenv(compiled.ENGINE_VARIABLE)
    record(package, native=False, not_built={NATIVE: "DCMAP_PURE_PYTHON asked for no native engine"},
           pure_python=True)  # DCMAP_PURE_PYTHON=1 pip install -e .
    assert build_warnings() == []


def test_the_native_engine_asked_for_where_it_is_not_built_is_an_error(package, capsys, monkeypatch):
    native_missing(package)
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "native")
    assert main(["info", "paper-example"]) == 2
    assert main(["--version"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["dcmap: error: DCMAP_ENGINE=native: the native engine is not built (no C++ compiler: g++ is not "
                   "found); install g++ and the Python headers (Debian, Ubuntu: apt-get install g++ python3-dev), "
                   f"then run `pip install -e .` again in {package.parent}"] * 2


def test_the_build_requirements_are_the_tested_range():
    """pyproject.toml's Cython requirement and compiled.py's check of the Cython that
    builds (setup.py compiles nothing with a refused one) agree, and leave out 3.3.0."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    cython = next(Requirement(text) for text in requires if Requirement(text).name.lower() == "cython")
    for version in ("3.0.0", "3.1.8", "3.2.9", "3.3.0", "3.3.1", "3.3.9", "3.4.0"):
        refused = compiled.cython_refused(version)
        if version < "3.4":
            assert (refused is None) == cython.specifier.contains(version), version
    assert not cython.specifier.contains("3.3.0") and "3.3.0" in compiled.KNOWN_BAD_CYTHON
    assert not cython.specifier.contains("3.4.0")  # the newest tested minor is the cap
    setuptools = next(Requirement(text) for text in requires if Requirement(text).name == "setuptools")
    assert setuptools.specifier.contains("77.0.3") and not setuptools.specifier.contains("76.1.0")


def test_the_installed_build_is_recorded():
    """The package the tests import passed the check, and its build (if any) says how it
    was made."""
    if not compiled.native_built():
        pytest.skip("nothing compiled")
    built = compiled._record()
    assert built is not None and built["cython"] not in compiled.KNOWN_BAD_CYTHON
    assert set(built["modules"]) == {NATIVE}
    assert compiled._same_interpreter(built)
