"""Networks from other libraries: pgmpy models and pyAgrum ``BayesNet`` objects, and
files in the formats that pyAgrum reads (``.net``, ``.xdsl``, ``.dsl``, ``.bifxml``, ...).

Neither library is a dependency: an object is recognised by the module of its class,
and pyAgrum is imported only to read a file. Only the structure is taken: node names
in the library's order, numbers of states, arcs.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..model.network import Network, NetworkError

__all__ = ["PYAGRUM_SUFFIXES", "from_library", "from_pyagrum", "library_of", "read_with_pyagrum",
           "template_from_pgmpy_dbn"]

# the formats read through pyAgrum; .bif is read by dcmap_dist.io.bif
PYAGRUM_SUFFIXES = (".net", ".dsl", ".xdsl", ".bifxml", ".xmlbif", ".uai", ".o3prm")


def library_of(source: Any) -> str | None:
    """``"pgmpy"`` or ``"pyagrum"`` when ``source`` is an object of a class of that
    library (or of a subclass of one), else None."""
    for cls in type(source).__mro__:
        root = cls.__module__.partition(".")[0].lower()
        if root in ("pgmpy", "pyagrum"):
            return root
    return None


def from_library(source: Any) -> Network | dict[str, Any]:
    """A network from a pgmpy model or a pyAgrum BayesNet; a pgmpy
    ``DynamicBayesianNetwork`` gives a 2-slice template (SPEC section 6)."""
    kinds = {cls.__name__ for cls in type(source).__mro__}
    if library_of(source) == "pyagrum":
        if "IBayesNet" not in kinds:
            raise NetworkError(f"cannot load a pyAgrum {type(source).__name__}: dcmap needs a BayesNet")
        return from_pyagrum(source)
    if "DynamicBayesianNetwork" in kinds:
        return template_from_pgmpy_dbn(source)
    if "DiscreteBayesianNetwork" not in kinds:
        raise NetworkError(
            f"cannot load a pgmpy {type(source).__name__}: dcmap needs a discrete Bayesian network"
        )
    states = {str(x): _pgmpy_card(source.get_cpds(x), x) for x in source.nodes()}
    edges = [(str(u), str(v)) for u, v in source.edges()]
    return Network(_pgmpy_name(source), list(states), states, edges)


def template_from_pgmpy_dbn(model: Any) -> dict[str, Any]:
    """The 2-slice template JSON of a pgmpy ``DynamicBayesianNetwork``: its slice-0
    nodes and arcs, and its arcs from slice 0 to slice 1 as ``temporal_edges``."""
    cpds = {str(cpd.variable[0]): cpd for cpd in model.get_cpds(time_slice=0)}
    names = list(dict.fromkeys(str(node[0]) for node in model.nodes() if node[1] == 0))
    return {
        "name": _pgmpy_name(model),
        "nodes": [{"id": x, "states": _pgmpy_card(cpds.get(x), x)} for x in names],
        "edges": [[str(u[0]), str(v[0])] for u, v in model.get_intra_edges(0)],
        "temporal_edges": [[str(u[0]), str(v[0])] for u, v in model.get_inter_edges()],
    }


def _pgmpy_card(cpd: Any, node: Any) -> int:
    """The number of states of pgmpy node ``node``, from its CPD ``cpd`` (None if it has none)."""
    card = getattr(cpd, "variable_card", None)
    if card is None:
        raise NetworkError(
            f"pgmpy node {node!r} has no tabular CPD, so its number of states is unknown "
            "(add its CPD, or pass a networkx DiGraph with a 'states' attribute)"
        )
    return int(card)


def _pgmpy_name(model: Any) -> str:
    return str(getattr(model, "name", "") or "network")


def from_pyagrum(bn: Any, name: str | None = None) -> Network:
    """A network from a pyAgrum ``BayesNet``, nodes in id order, named ``name`` or by
    the BayesNet's ``name`` property."""
    ids = sorted(bn.nodes())
    name_of = {i: bn.variable(i).name() for i in ids}
    states = {name_of[i]: int(bn.variable(i).domainSize()) for i in ids}
    edges = [(name_of[u], name_of[v]) for u, v in sorted(bn.arcs())]
    return Network(name or str(bn.property("name")), list(states), states, edges)


def read_with_pyagrum(path: Path) -> Network:
    """Read a network file in a format of :data:`PYAGRUM_SUFFIXES` with pyAgrum, named
    after the file."""
    try:
        gum = importlib.import_module("pyagrum")
    except ImportError:
        raise NetworkError(
            f"{path}: reading {path.suffix} files needs pyAgrum (pip install pyagrum); "
            "dcmap reads .json and .bif files itself"
        ) from None
    if not path.is_file():
        raise NetworkError(f"no such file: {path}")
    try:
        bn = gum.loadBN(str(path))
    except Exception as exc:  # pyAgrum's own exceptions, with its parser's message
        raise NetworkError(f"{path}: pyAgrum cannot read it: {str(exc).strip()}") from None
    return from_pyagrum(bn, path.stem)
