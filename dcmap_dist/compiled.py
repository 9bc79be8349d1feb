"""Which engine runs the search, and whether the native one's build may run at all.

The install builds the native engine (:data:`NATIVE`: a Cython binding over the C++ core
of ``search/native/``, ``setup.py``); its reference, the Python engine, is the package's
plain Python and is not compiled. The Python engine runs the search where the native one
is not built or ``DCMAP_ENGINE=python`` asks for it (:func:`native_wanted`).

``setup.py`` records each build in :data:`BUILT_SOURCES`, one record per extension
suffix (so per interpreter: :func:`new_record`): the Python and the Cython that built
it, the sha256 of the native engine's sources (its ``.pyx`` and ``.hpp``:
:func:`source_digests`), and why it was not built. Python imports an extension module
before the source beside it, so ``import dcmap_dist`` checks the build first
(:func:`check_build`, docs/engine.md "The record of a build, and what import refuses"):
an extension module that could crash is refused with :class:`BuildError` (a Cython known
to miscompile built it, another Python built it, no record says how it was built, or it
is one of the modules an older dcmap_dist compiled, :data:`NO_LONGER_COMPILED`); a source
edited after the build, which does not run until the next build, and a native engine that
is not built are one-line warnings, once per process, at the first ``dcmap`` command or
:func:`~dcmap_dist.solve` (:func:`warn_build`).

Standard library only, with no import of the package at module level: ``setup.py`` runs
this file on its own.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

__all__ = ["BUILT_SOURCES", "BuildError", "BuildWarning", "ENGINE_VARIABLE", "KNOWN_BAD_CYTHON", "NATIVE",
           "NO_LONGER_COMPILED", "OLDEST_CYTHON", "check_build", "cython_refused", "describe", "native_built",
           "native_sources", "native_wanted", "new_record", "source_digests", "warn_build", "write_record"]

NATIVE = "search/native_engine"  # the native engine's binding (its C++ core: search/native/*.hpp)
# the Python engine's modules that dcmap_dist compiled with Cython until issue 56 (paths in
# the package, without .py): an extension module of one left beside its source by an older
# in-place build would run instead of the source, so setup.py removes them and import refuses them
NO_LONGER_COMPILED = ("search/branch", "search/branch_queue", "search/problem", "search/bounds",
                      "search/combinations", "search/explorer", "search/linking", "search/histories", "search/keys",
                      "search/tolerance", "model/topology")
BUILT_SOURCES = "built-sources.json"  # the record of each build: new_record
RECORD_FORMAT = 2  # 1, before the interpreter and Cython were recorded: {module: sha256}
ENGINE_VARIABLE = "DCMAP_ENGINE"  # "python" runs the Python engine even where the native one is built
PACKAGE = Path(__file__).resolve().parent
# The Cython versions the build accepts: pyproject.toml's [build-system] requires says the
# same (Cython>=3.3.1,<3.4; tests/test_build.py checks that they agree), the range tested
# (scripts/test_matrix.py). 3.3.0 miscompiled the Python engine when it was compiled
# (docs/engine.md, "Build tools and a crash of Cython 3.3.0"), and stays refused:
OLDEST_CYTHON = (3, 3, 1)
KNOWN_BAD_CYTHON = {
    "3.3.0": "it miscompiles cascaded assignments and annotated locals (Cython issues 7937 and 7994, fixed "
             "in 3.3.1; every solve crashed with a segmentation fault when it compiled the Python engine)",
}
SLOWER = "20 to 27 times slower"  # the plain Python engine's search CPU against the native one's (results/native-engine.md: 19.7, 26.7)


class BuildError(ImportError):
    """An extension module that must not run: it could crash the interpreter (raised by
    ``import dcmap_dist``, before any extension module is imported)."""


class BuildWarning(UserWarning):
    """A build that runs, but not as the sources say: a source edited after the build, or
    the native engine not built."""


def native_built() -> bool:
    """Whether the install built the native engine."""
    return _extension(NATIVE) is not None


def native_wanted() -> bool:
    """Whether searches run on the native engine: built, and not turned off by
    ``DCMAP_ENGINE=python``. ``DCMAP_ENGINE=native`` where it is not built, and any
    other value, are refused (:class:`~dcmap_dist.env.EnvironmentValueError`)."""
    from .env import EnvironmentValueError, choice

    if choice(ENGINE_VARIABLE, ("native", "python"), "native") == "python":
        return False
    if native_built():
        return True
    if (os.environ.get(ENGINE_VARIABLE) or "").strip():  # asked for by name
        raise EnvironmentValueError(f"{ENGINE_VARIABLE}=native: the native engine is not built "
                                    f"({_why_not_native()}); {_native_advice()}")
    return False


def describe() -> str:
    """The engine that runs searches: ``native engine``, or ``Python engine`` (with, where
    the native one is built, why it is off)."""
    if native_wanted():
        return "native engine"
    if native_built():
        return f"Python engine; native engine built, off ({ENGINE_VARIABLE}=python)"
    return "Python engine"


# -- the record of a build, and its check --------------------------------------------------------


def new_record(sources: dict[str, dict[str, str]], not_built: dict[str, str], cython: str | None,
               pure_python: bool = False, tools: dict[str, str] | None = None) -> dict[str, Any]:
    """The record of one build by this interpreter (``setup.py`` writes it into
    :data:`BUILT_SOURCES` with :func:`write_record`): the interpreter, the Cython version
    (None: no Cython), the extension modules built with the digests of their sources when
    the build began (``sources``: :func:`source_digests`), why each of ``not_built`` was
    not, whether ``DCMAP_PURE_PYTHON`` asked for no native engine, and the build
    ``tools``' versions (for the record only)."""
    return {"python": ".".join(map(str, sys.version_info[:3])), "implementation": sys.implementation.name,
            "cache_tag": sys.implementation.cache_tag, "cython": cython, "pure_python": pure_python,
            **({"tools": tools} if tools else {}), "modules": sources, "not_built": not_built}


def write_record(package: Path, record: dict[str, Any], keep_others: bool) -> None:
    """Write ``record`` into ``package``'s :data:`BUILT_SOURCES` as this interpreter's;
    ``keep_others``: keep the records of other interpreters' builds (an in-place build:
    their extension modules stay beside the sources too)."""
    builds: dict[str, Any] = {}
    if keep_others:
        found = _read_records(package)
        if found is not None:
            builds = found
    builds[_suffix()] = record
    path = package / BUILT_SOURCES
    path.write_text(json.dumps({"format": RECORD_FORMAT, "builds": builds}, indent=1, sort_keys=True) + "\n")


def check_build() -> None:
    """Refuse extension modules that could crash (:class:`BuildError`, naming the file and
    the command that rebuilds them), and note for :func:`warn_build` the native engine's
    sources edited after the build. ``import dcmap_dist`` calls it before anything imports
    an extension module."""
    global _stale
    _stale = []
    for name in NO_LONGER_COMPILED:
        path = _extension(name)
        if path is not None:
            raise BuildError(_refusal(path, f"it is left from a build by an older dcmap_dist, which compiled "
                                            f"{PACKAGE.name}/{name}.py (the Python engine is plain Python now)"))
    path = _extension(NATIVE)
    if path is None:
        return
    records = _read_records(PACKAGE)
    record = (records or {}).get(path.name[len(Path(NATIVE).name):])
    if record is None:
        raise BuildError(_refusal(path, _unrecorded(records)))
    if not _same_interpreter(record):
        raise BuildError(_refusal(path, f"it was built by {record.get('implementation')} "
                                        f"{record.get('python')}, and this is {sys.implementation.name} "
                                        f"{'.'.join(map(str, sys.version_info[:3]))}"))
    cython = record.get("cython")
    if cython in KNOWN_BAD_CYTHON:
        raise BuildError(_refusal(path, f"it was compiled by Cython {cython}, and {KNOWN_BAD_CYTHON[cython]}; "
                                        "pip builds with the Cython that pyproject.toml asks for, unless "
                                        "--no-build-isolation makes it use the one installed"))
    built = record.get("modules", {}).get(NATIVE)
    if built is None:
        raise BuildError(_refusal(path, "the last build did not make it (it is left from an earlier one)"))
    now = source_digests(PACKAGE)
    _stale = sorted(source for source in set(built) | set(now) if built.get(source) != now.get(source))


def warn_build() -> None:
    """Warn, once per process, of a build that does not run as its sources say: the
    native engine's sources edited after the build (:func:`check_build`), or the native
    engine not built (unless ``DCMAP_ENGINE=python`` asks for the Python engine, or the
    build was ``DCMAP_PURE_PYTHON``'s). The ``dcmap`` command calls it before its command
    runs (its warnings are one line each: ``dcmap: warning: ...``), :func:`~dcmap_dist.solve`
    before a search."""
    for message in _notices():
        if message not in _warned:
            _warned.add(message)
            warnings.warn(message, BuildWarning, stacklevel=2)


def _notices() -> list[str]:
    notices = []
    if _stale:
        files = _listed([f"{PACKAGE.name}/{source}" for source in _stale])
        notices.append(f"{files} changed after the build, and the compiled {NATIVE} runs the old source: "
                       f"{_advice()}")
    from .env import choice

    if not native_built() and choice(ENGINE_VARIABLE, ("native", "python"), "native") == "native":
        record = _record()
        if not (record or {}).get("pure_python"):
            notices.append(f"the native engine is not built ({_why_not_native()}); searches run on the "
                           f"Python engine, {SLOWER}: {_native_advice()}")
    return notices


def source_digests(package: Path) -> dict[str, str]:
    """sha256 of each of the native engine's sources (:func:`native_sources`), by its path
    in the package."""
    return {path.relative_to(package).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in native_sources(package) if path.exists()}


def native_sources(package: Path) -> list[Path]:
    """The native engine's sources: its binding and the C++ headers of its core."""
    return [package / f"{NATIVE}.pyx", *sorted((package / "search" / "native").glob("*.hpp"))]


def cython_refused(version: str) -> str | None:
    """Why the build must not compile with Cython ``version`` (None: it may)."""
    if version in KNOWN_BAD_CYTHON:
        return f"Cython {version} is known to break dcmap_dist: {KNOWN_BAD_CYTHON[version]}"
    numbers = tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    if numbers < OLDEST_CYTHON:
        return (f"Cython {version} is older than the tested range (Cython "
                f"{'.'.join(map(str, OLDEST_CYTHON))} or later)")
    return None


_stale: list[str] = []  # the native engine's sources edited after the build (check_build)
_warned: set[str] = set()  # warnings given (warn_build)


def _extension(name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = PACKAGE / f"{name}{suffix}"
        if path.exists():
            return path
    return None


def _suffix() -> str:
    """The extension suffix of this interpreter (``.cpython-312-x86_64-linux-gnu.so``):
    its builds' key in :data:`BUILT_SOURCES`."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def _read_records(package: Path) -> dict[str, Any] | None:
    """The records of :data:`BUILT_SOURCES` by extension suffix (None: no file, or one of
    format 1, which recorded no interpreter)."""
    try:
        data = json.loads((package / BUILT_SOURCES).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT or not isinstance(data.get("builds"), dict):
        return None
    return data["builds"]


def _record() -> dict[str, Any] | None:
    """The record of this interpreter's build."""
    return (_read_records(PACKAGE) or {}).get(_suffix())


def _same_interpreter(record: dict[str, Any]) -> bool:
    python = str(record.get("python", "")).split(".")[:2]
    return (record.get("implementation") == sys.implementation.name and record.get("cache_tag") ==
            sys.implementation.cache_tag and python == [str(part) for part in sys.version_info[:2]])


def _why_not_native() -> str:
    record = _record()
    if record is None:
        version = ".".join(map(str, sys.version_info[:2]))
        return f"no build of it for Python {version} is recorded in {PACKAGE}"
    if record.get("pure_python"):
        return "the build was DCMAP_PURE_PYTHON's"
    if NATIVE in record.get("not_built", {}):
        return str(record["not_built"][NATIVE])
    return f"its extension module is missing from {PACKAGE / 'search'}"


def _native_advice() -> str:
    """What builds the native engine: the system's build tools first where the build
    found none."""
    return _advice(tools=_why_not_native().startswith(("no C++ compiler", "no C compiler", "no Python headers")))


def _advice(tools: bool = False) -> str:
    """The command that rebuilds the native engine of this install (``tools``: with the
    system packages it needs first)."""
    root = PACKAGE.parent
    need = ("install g++ and the Python headers (Debian, Ubuntu: apt-get install g++ python3-dev), then "
            if tools else "")
    if (root / "setup.py").exists() and (root / "pyproject.toml").exists():  # a checkout (pip install -e)
        return f"{need}run `pip install -e .` again in {root}"
    return f"{need}install dcmap_dist again (pip install --force-reinstall --no-deps, from its source)"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _unrecorded(records: dict[str, Any] | None) -> str:
    """Why an extension module has no record of its build."""
    if not (PACKAGE / BUILT_SOURCES).exists():
        return f"no record of its build ({BUILT_SOURCES} is missing)"
    if records is None:
        return (f"{BUILT_SOURCES} is of a build that recorded neither the Python nor the Cython that made it (an "
                "older dcmap_dist's)")
    version = ".".join(map(str, sys.version_info[:2]))
    return (f"no build by Python {version} is recorded: it is left from an earlier build, or was not made by "
            "dcmap_dist's setup.py")


def _refusal(path: Path, why: str) -> str:
    return (f"dcmap_dist refuses its compiled module {path}: {why}. {_advice()[0].upper()}{_advice()[1:]} "
            f"(it rebuilds the native engine and removes what an older build left)")
