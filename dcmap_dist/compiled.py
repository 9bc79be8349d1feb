"""Which of the search's modules run compiled, and which engine runs the search.

The install builds the native engine (:data:`NATIVE`: a Cython binding over the C++ core
of ``search/native/``) and compiles :data:`COMPILED` with Cython where it can
(``setup.py``); the same Python source runs as pure Python otherwise, and the native
engine's reference, the Python engine, runs the search where the native one is not built
or ``DCMAP_ENGINE=python`` asks for it (:func:`native_wanted`). In a checkout installed with ``pip install
-e``, the extension modules sit beside their sources and Python imports them first, so
a source edited after the build would be ignored: :func:`check_fresh` warns, from the
digests of the sources the build compiled (:data:`BUILT_SOURCES`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import warnings
from pathlib import Path

__all__ = ["ENGINE_VARIABLE", "NATIVE", "check_fresh", "compiled_modules", "describe", "native_built",
           "native_sources", "native_wanted", "source_digest"]

# setup.py compiles these (paths in the package, without .py)
COMPILED = ("search/branch", "search/branch_queue", "search/problem", "search/bounds", "search/combinations",
            "search/explorer", "search/linking", "search/histories", "search/keys", "search/tolerance", "model/topology")
NATIVE = "search/native_engine"  # the native engine's binding (its C++ core: search/native/*.hpp)
BUILT_SOURCES = "built-sources.json"  # sha256 of each source when it was compiled
ENGINE_VARIABLE = "DCMAP_ENGINE"  # "python" runs the Python engine even where the native one is built
PACKAGE = Path(__file__).resolve().parent


def compiled_modules() -> list[str]:
    """The modules of :data:`COMPILED` built as extension modules (Python imports an
    extension module before the source beside it)."""
    return [name for name in COMPILED if _extension(name) is not None]


def native_built() -> bool:
    """Whether the install built the native engine."""
    return _extension(NATIVE) is not None


def native_wanted() -> bool:
    """Whether searches run on the native engine: built, and not turned off by
    ``DCMAP_ENGINE=python`` (any other value but ``native`` is refused)."""
    from .env import choice

    return choice(ENGINE_VARIABLE, ("native", "python"), "native") == "native" and native_built()


def describe() -> str:
    """The engine that runs searches: ``native engine``, or the Python one as
    ``compiled engine``, ``pure Python engine`` or compiled in part (which modules)."""
    if native_wanted():
        return "native engine"
    found = compiled_modules()
    if len(found) == len(COMPILED):
        python = "compiled engine"
    else:
        python = "pure Python engine" if not found else f"engine compiled in part ({', '.join(found)})"
    if native_built():
        return f"{python}; native engine built, off ({ENGINE_VARIABLE}=python)"
    return python


def check_fresh() -> None:
    """Warn when a source differs from the one its compiled module was built from (an
    edit that does not run)."""
    try:
        built = json.loads((PACKAGE / BUILT_SOURCES).read_text())
    except (OSError, ValueError):
        return
    for name in (*COMPILED, NATIVE):
        extension = _extension(name)
        source = PACKAGE / (f"{name}.pyx" if name == NATIVE else f"{name}.py")
        if extension is None or not source.exists() or name not in built:
            continue
        if source_digest(PACKAGE, name) != built[name]:
            warnings.warn(f"{source} changed after it was compiled, and Python runs the compiled "
                          f"{extension.name}: run `pip install -e .` again, or delete {extension.name} "
                          f"to run the source", stacklevel=2)


def native_sources(package: Path) -> list[Path]:
    """The native engine's sources: its binding and the C++ headers of its core."""
    return [package / f"{NATIVE}.pyx", *sorted((package / "search" / "native").glob("*.hpp"))]


def source_digest(package: Path, name: str) -> str:
    """sha256 of module ``name``'s source and of its ``.pxd``, if it has one (the
    compiled layout of its classes, which Cython reads beside the source); for the native
    engine, of its binding and its core's headers."""
    if name == NATIVE:
        digest = hashlib.sha256()
        for path in native_sources(package):
            digest.update(path.read_bytes())
        return digest.hexdigest()
    digest = hashlib.sha256((package / f"{name}.py").read_bytes())
    layout = package / f"{name}.pxd"
    if layout.exists():
        digest.update(layout.read_bytes())
    return digest.hexdigest()


def _extension(name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = PACKAGE / f"{name}{suffix}"
        if path.exists():
            return path
    return None
