"""Which of the search's modules run compiled.

The install compiles :data:`COMPILED` with Cython where it can (``setup.py``); the
same source runs as pure Python otherwise. In a checkout installed with ``pip install
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

__all__ = ["check_fresh", "compiled_modules", "describe", "source_digest"]

# setup.py compiles these (paths in the package, without .py)
COMPILED = ("search/branch", "search/branch_queue", "search/problem", "search/bounds", "search/combinations",
            "search/explorer", "search/linking", "search/histories", "search/keys", "search/tolerance", "model/topology")
BUILT_SOURCES = "built-sources.json"  # sha256 of each source when it was compiled
PACKAGE = Path(__file__).resolve().parent


def compiled_modules() -> list[str]:
    """The modules of :data:`COMPILED` built as extension modules (Python imports an
    extension module before the source beside it)."""
    return [name for name in COMPILED if _extension(name) is not None]


def describe() -> str:
    """``compiled engine``, ``pure Python engine``, or which modules are compiled."""
    found = compiled_modules()
    if len(found) == len(COMPILED):
        return "compiled engine"
    return "pure Python engine" if not found else f"engine compiled in part ({', '.join(found)})"


def check_fresh() -> None:
    """Warn when a source differs from the one its compiled module was built from (an
    edit that does not run)."""
    try:
        built = json.loads((PACKAGE / BUILT_SOURCES).read_text())
    except (OSError, ValueError):
        return
    for name in COMPILED:
        extension = _extension(name)
        source = PACKAGE / f"{name}.py"
        if extension is None or not source.exists() or name not in built:
            continue
        if source_digest(PACKAGE, name) != built[name]:
            warnings.warn(f"{source} changed after it was compiled, and Python runs the compiled "
                          f"{extension.name}: run `pip install -e .` again, or delete {extension.name} "
                          f"to run the source", stacklevel=2)


def source_digest(package: Path, name: str) -> str:
    """sha256 of module ``name``'s source and of its ``.pxd``, if it has one (the
    compiled layout of its classes, which Cython reads beside the source)."""
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
