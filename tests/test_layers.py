"""The package's layers hold: every import of ``dcmap_dist`` runs down a floor, never up
nor sideways (docs/layout.md), and nothing outside ``search/`` assigns an attribute of the
search engine (its boundary is :class:`dcmap_dist.search.engine.Engine`). Both read the
code with :mod:`ast`; neither runs it. The native core's headers likewise include down a
floor (docs/engine.md), read as text, not compiled."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dcmap_dist"

# the floors of the package, from the ground up: a room (a sub-package or a top-level
# module) imports only rooms of lower floors (docs/layout.md)
FLOORS = [
    {"env", "faults", "text"},
    {"_version", "compiled", "progress"},
    {"limits", "model"},
    {"settings", "io", "cost"},
    {"search", "result", "study"},
    {"run", "checkpoint", "anytime", "viz"},
    {"combine"},
    {"solve"},
    {"cli"},
    {"__main__", "__init__"},
]
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}

# the floors of the native core's headers (search/native/), from the ground up: a header
# includes only headers of lower floors (docs/engine.md, "The headers by floors")
NATIVE = PACKAGE / "search" / "native"
HEADER_FLOORS = [
    {"bits.hpp", "ids.hpp", "tolerance.hpp", "model_tables.hpp", "oracle.hpp", "histories.hpp", "mt19937.hpp",
     "python_hash.hpp"},
    {"tables.hpp", "topology.hpp"},
    {"store.hpp", "branch.hpp", "dcmap_model.hpp"},
    {"facts.hpp", "vocabulary.hpp", "branch_queue.hpp", "frames.hpp"},
    {"keys.hpp", "problem.hpp", "batch.hpp", "link_table.hpp"},
    {"explorer.hpp"},
    {"engine.hpp"},
]
HEADER_FLOOR = {header: level for level, headers in enumerate(HEADER_FLOORS) for header in headers}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    """The room of a module of the package: its sub-package, or the top-level module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> Iterator[str]:
    """The modules of the package that ``path`` imports (relative imports resolved)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] == "dcmap_dist":
                yield target
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "dcmap_dist")


def arrows(paths: Iterable[Path]) -> set[tuple[str, str, str]]:
    """``(file, from room, to room)`` for every import between two rooms."""
    found = set()
    for path in paths:
        here = room(module_name(path))
        for target in imports(path):
            there = room(target)
            if there != here:
                found.add((str(path.relative_to(ROOT)), here, there))
    return found


def off_the_floors(found: Iterable[tuple[str, str, str]], floor: dict[str, int], kind: str,
                   verb: str) -> list[str]:
    """The steps ``(file, from, to)`` of ``found`` that do not run down a floor of ``floor``,
    and the ``kind`` of places (rooms, headers) it gives no floor."""
    wrong = []
    for path, here, there in sorted(found):
        if here not in floor or there not in floor:
            wrong.append(f"{path}: {kind} {here if here not in floor else there} has no floor")
        elif floor[there] >= floor[here]:
            wrong.append(f"{path}: {here} (floor {floor[here]}) {verb} {there} (floor {floor[there]})")
    return wrong


def wrong_arrows(found: Iterable[tuple[str, str, str]]) -> list[str]:
    """The arrows that do not run down a floor, and rooms missing from :data:`FLOORS`."""
    return off_the_floors(found, FLOOR, "room", "imports")


def test_every_import_runs_down_a_floor():
    assert wrong_arrows(arrows(PACKAGE.rglob("*.py"))) == []


def test_an_arrow_up_or_sideways_is_found(tmp_path):
    assert wrong_arrows({("dcmap_dist/search/x.py", "search", "run")}) == [
        "dcmap_dist/search/x.py: search (floor 4) imports run (floor 5)"]
    assert wrong_arrows({("dcmap_dist/model/x.py", "model", "limits")})  # the same floor
    assert wrong_arrows({("dcmap_dist/new.py", "new", "model")})  # a room nobody placed


# -- the native headers -------------------------------------------------------------------------
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


def includes(paths: Iterable[Path]) -> set[tuple[str, str, str]]:
    """``(file, header, header it includes)`` for every ``#include "..."`` of ``paths`` (the
    standard library's ``<...>`` are not the project's)."""
    return {(path.name, path.name, target) for path in paths for target in INCLUDE.findall(path.read_text())}


def wrong_includes(found: Iterable[tuple[str, str, str]]) -> list[str]:
    """The includes that do not run down a floor, and headers missing from :data:`HEADER_FLOORS`."""
    return off_the_floors(found, HEADER_FLOOR, "header", "includes")


def test_every_include_of_the_native_headers_runs_down_a_floor():
    assert wrong_includes(includes(NATIVE.glob("*.hpp"))) == []


def test_every_native_header_has_a_floor():
    assert {path.name for path in NATIVE.glob("*.hpp")} == set(HEADER_FLOOR)
    assert len(HEADER_FLOORS) <= 7  # issue 56: at most seven floors (nine before)


def test_the_binding_reads_the_core_through_its_face_only():
    """native_engine.pyx declares the core from engine.hpp (the face), and from nothing below it."""
    source = (PACKAGE / "search" / "native_engine.pyx").read_text()
    assert re.findall(r'cdef extern from "([^"]+)"', source) == ["native/engine.hpp"]


def test_an_include_up_or_sideways_is_found(tmp_path):
    planted = tmp_path / "branch.hpp"
    planted.write_text('#pragma once\n#include <vector>\n  #  include "explorer.hpp"\n#include "ids.hpp"\n')
    assert wrong_includes(includes([planted])) == ["branch.hpp: branch.hpp (floor 2) includes explorer.hpp (floor 5)"]
    assert wrong_includes({("keys.hpp", "keys.hpp", "problem.hpp")}) == [
        "keys.hpp: keys.hpp (floor 4) includes problem.hpp (floor 4)"]
    assert wrong_includes({("new.hpp", "new.hpp", "bits.hpp")}) == ["new.hpp: header new.hpp has no floor"]


# -- the engine's boundary ----------------------------------------------------------------------
def engine_attributes() -> set[str]:
    """The attributes of the Python engine: what its methods assign on ``self``, and its properties."""
    tree = ast.parse((PACKAGE / "search" / "explorer.py").read_text())
    engine = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Explorer")
    names = set()
    for node in ast.walk(engine):
        for target in assigned(node):
            if isinstance(target.value, ast.Name) and target.value.id == "self":
                names.add(target.attr)
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list):
            names.add(node.name)
    return names


def assigned(node: ast.AST) -> list[ast.Attribute]:
    """The attributes a statement assigns (``x.a = ...``, ``x.a += ...``, ``x.a: T = ...``)."""
    if isinstance(node, ast.Assign):
        targets = [t for target in node.targets for t in ast.walk(target)]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return []
    return [t for t in targets if isinstance(t, ast.Attribute)]


def engine_assignments(source: str, attributes: set[str]) -> list[str]:
    """Where ``source`` assigns one of ``attributes`` on anything but ``self``, or calls setattr."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for target in assigned(node):
            if target.attr in attributes and not (isinstance(target.value, ast.Name) and target.value.id == "self"):
                found.append(f"line {node.lineno}: {ast.unparse(target)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_outside_search_assigns_an_engine_attribute():
    attributes = engine_attributes()
    assert {"g_min", "iterations", "active", "shard", "dominated", "watch"} <= attributes
    paths = [p for p in PACKAGE.rglob("*.py") if "search" not in p.relative_to(PACKAGE).parts[:1]]
    paths += list((ROOT / "scripts").glob("*.py"))
    found = [f"{path.relative_to(ROOT)}: {where}" for path in paths
             for where in engine_assignments(path.read_text(), attributes)]
    assert found == []


def test_an_assignment_to_an_engine_attribute_is_found():
    attributes = engine_attributes()
    source = "def f(worker):\n    worker.engine.g_min = 3.0\n    self.g_min = 1.0\n    e.iterations += 1\n"
    assert engine_assignments(source, attributes) == ["line 2: worker.engine.g_min", "line 4: e.iterations"]


# -- declared faces -----------------------------------------------------------------------------
def test_every_module_declares_its_face():
    """Every module but a package's ``__init__``, ``__main__`` and ``_version`` lists its
    public names in ``__all__``, and each of them is defined there."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py", "_version.py"):
            continue
        tree = ast.parse(path.read_text())
        declared = next((node for node in tree.body if isinstance(node, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)), None)
        if declared is None:
            missing.append(f"{path.relative_to(ROOT)}: no __all__")
            continue
        defined = {name for node in tree.body for name in defined_names(node)}
        missing += [f"{path.relative_to(ROOT)}: {name} in __all__ is not defined"
                    for name in ast.literal_eval(declared.value) if name not in defined]
    assert missing == []


def defined_names(node: ast.stmt) -> list[str]:
    """The names a top-level statement defines (or imports)."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    return []


# -- the seam between the engines ---------------------------------------------------------------
BINDING = PACKAGE / "search" / "native_engine.pyx"
# what the binding may import of the package: the seam (search/core.py) and the records that
# cross the Engine boundary (branches, link entries, histories, the search state, the batch
# format, the log of an engine's work, the interruption a limit raises)
BINDING_IMPORTS = {"dcmap_dist.search.core", "dcmap_dist.search.branch", "dcmap_dist.search.linking",
                   "dcmap_dist.search.histories", "dcmap_dist.search.state", "dcmap_dist.search.batches",
                   "dcmap_dist.search.worklog", "dcmap_dist.limits"}
BINDING_SELVES = {"self", "engine"}  # the binding's own objects (engine: the callbacks' NativeEngine)


def binding_faults(source: str) -> list[str]:
    """Where the binding's Cython ``source`` crosses the seam elsewhere than through
    :data:`BINDING_IMPORTS`: an import of another module of the package, or a private name
    (``x._name``) of anything but its own objects. Read as text: Cython is not Python."""
    faults = []
    for number, line in enumerate(source.splitlines(), 1):
        found = re.match(r"\s*(?:from\s+(\.+)([\w.]*)\s+c?import|import\s+(dcmap_dist[\w.]*))", line)
        if found:
            dots, module, absolute = found.groups()
            target = absolute or ".".join(["dcmap_dist", "search"][: 3 - len(dots)] + ([module] if module else []))
            if target.split(".")[0] == "dcmap_dist" and target not in BINDING_IMPORTS:
                faults.append(f"line {number}: imports {target}")
        for owner, name in re.findall(r"\b([A-Za-z_]\w*)\.(_[a-z]\w*)", line.split("#")[0]):
            if owner not in BINDING_SELVES:
                faults.append(f"line {number}: reads {owner}.{name}")
    return faults


def test_the_binding_crosses_only_the_seam():
    assert binding_faults(BINDING.read_text()) == []


def test_a_crossing_beside_the_seam_is_found():
    source = ("from .problem import Problem\nfrom ..limits import SearchInterrupted\nfrom .core import core_input\n"
              "x = engine.problem._costs[key]  # a private name\ny = self._ints\n")
    assert binding_faults(source) == ["line 1: imports dcmap_dist.search.problem", "line 4: reads problem._costs"]
