"""One entry point for every input form: JSON, 2-slice template JSON, BIF, networkx,
pgmpy and pyAgrum objects, and the files pyAgrum reads."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..model.network import Network, NetworkError, TooLarge
from .bif import read_bif
from .dynamic import MAX_UNROLLED_NODES, check_unrollable, is_template, unroll
from .files import read_json
from .interop import PYAGRUM_SUFFIXES, from_library, library_of, read_with_pyagrum
from .plain import network_from_dict, network_from_digraph

__all__ = ["bundled_examples", "load_network"]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"  # dcmap_dist/examples
# where a bare name that is neither a file nor a bundled example is looked for, to
# suggest a path: the networks folder beside the checkout and the working directory's
NETWORK_FOLDERS = (Path(__file__).resolve().parents[2] / "shared" / "networks",
                   Path("networks"), Path("..") / "shared" / "networks")
NETWORK_SUFFIXES = ("", ".bif.gz", ".bif", ".json", ".json.gz")


EXAMPLE_SUFFIXES = (".json", ".bif", ".bif.gz")


def _is_example(path: Path) -> bool:
    return any(path.name.endswith(suffix) for suffix in EXAMPLE_SUFFIXES)


def bundled_examples() -> list[str]:
    """The names of the bundled example networks (``asia``, ``paper-example``, ...)."""
    return sorted(p.name.split(".")[0] for p in EXAMPLES.iterdir() if _is_example(p))


def load_network(source: Any, slices: int | None = None, observe: str | Iterable[str] = (),
                 max_nodes: int | None = MAX_UNROLLED_NODES, strict: bool = False) -> Network:
    """Load a Bayesian network, or a 2-slice template unrolled to ``slices`` slices.

    Parameters
    ----------
    source : path, str, dict, networkx.DiGraph, pgmpy model, pyAgrum BayesNet or Network
        A file (``.json``, ``.json.gz``, ``.bif``, ``.bif.gz``, or through pyAgrum
        ``.net``, ``.xdsl``, ...), a bundled example's name (``paper-example``,
        ``asia``, ...), a JSON object (also networkx's node-link format) or a model.
    slices : int, optional
        Unroll a 2-slice template to this many slices (a template given without it is
        unrolled to one slice).
    observe : str or iterable of str
        Nodes to mark observed (a string is one name); on an unrolled template, a
        template node's name observes that node in every slice.
    max_nodes : int or None
        Refuse a larger network with :class:`TooLarge` (a template before it is
        unrolled); None: no limit.
    strict : bool
        Refuse a BIF file whose probability tables are broken (negative or NaN
        numbers, rows that do not sum to 1, missing rows or states): a NetworkError
        instead of a warning (:func:`~dcmap_dist.io.bif.read_bif`).

    Returns
    -------
    Network
        Its ``origin`` records the file as given and the number of slices.

    Raises
    ------
    NetworkError
        Naming the problem, and the file it is in.

    Examples
    --------
    >>> from dcmap_dist import load_network
    >>> network = load_network("asia")
    >>> network.name, len(network.nodes)
    ('asia', 8)
    >>> len(load_network("seagrass-2tbn", slices=2).nodes)
    50
    """
    path = _resolve(Path(source)) if isinstance(source, (str, os.PathLike)) else None
    data = source if path is None else _read(path, strict)  # reading errors name the file
    if library_of(data):
        data = from_library(data)
    template = isinstance(data, Mapping) and is_template(data)
    try:
        network = _build(data, slices, max_nodes)
    except NetworkError as exc:
        if path is None:
            raise
        raise type(exc)(f"{path}: {exc}") from None
    if path is not None or template:
        network.origin = {"source": None if path is None else os.fspath(source),
                          "slices": (slices or 1) if template else None}
    names = [observe] if isinstance(observe, str) else list(observe)
    if template:
        names = [y for x in names for y in _slice_names(network, x, slices or 1)]
    return network.with_observed(names) if names else network


def _build(data: Any, slices: int | None, max_nodes: int | None) -> Network:
    """The network of a JSON object, a template (unrolled), a networkx DiGraph or a Network,
    refused when it has more than ``max_nodes`` nodes."""
    networkx = sys.modules.get("networkx")  # a networkx graph was made with it imported
    if networkx is not None and isinstance(data, networkx.Graph):
        data = network_from_digraph(data)
    template = isinstance(data, Mapping) and is_template(data)
    if slices is not None and not template:
        raise NetworkError("--slices needs a 2-slice template (a JSON network with 'temporal_edges')")
    if template:
        check_unrollable(data)
        return unroll(data, 1 if slices is None else slices, max_nodes)
    if isinstance(data, Mapping):
        network = network_from_dict(data)
    elif isinstance(data, Network):
        network = data
    else:
        raise NetworkError(f"cannot load a network from a {type(data).__name__}")
    if max_nodes is not None and len(network) > max_nodes:
        raise TooLarge(f"{network.name!r} has {len(network):,} nodes, more than the {max_nodes:,} allowed")
    return network


def _read(path: Path, strict: bool = False) -> Any:
    """The contents of a network file: a Network (BIF, pyAgrum formats) or a JSON
    object, named after the file when it has no name."""
    name = path.name.removesuffix(".gz")
    if name.endswith(".bif"):
        return read_bif(path, strict)
    if path.suffix in PYAGRUM_SUFFIXES:
        return read_with_pyagrum(path)
    try:
        data = read_json(path)
    except NetworkError as exc:
        if name.endswith(".json") or not path.is_file():
            raise
        raise NetworkError(f"{exc} (network files are .json, .bif, either gzipped, "
                           f"or through pyAgrum {', '.join(PYAGRUM_SUFFIXES)})") from None
    if not isinstance(data, dict):
        raise NetworkError(f"{path}: a network must be a JSON object with 'nodes' and 'edges', "
                           f"not a {type(data).__name__}")
    data.setdefault("name", name.split(".")[0])
    return data


def _slice_names(network: Network, name: str, slices: int) -> list[str]:
    """``name`` itself if it is a node, else its copy in every slice."""
    if name in network.index:
        return [name]
    copies = [f"{name}_{t}" for t in range(slices)]
    if copies[0] not in network.index:
        raise NetworkError(f"observed name {name!r} is not a node of the template")
    return copies


def _resolve(path: Path) -> Path:
    """``path`` itself, or the bundled example of that name; an error naming the bundled
    examples when neither exists."""
    if path.exists() or path.parent != Path("."):
        return path
    for candidate in sorted(EXAMPLES.glob(f"{path.name}.*")):
        if _is_example(candidate):
            return candidate
    found = _network_files(path.name)
    hint = f"; did you mean {' or '.join(found)}?" if found else ""
    raise NetworkError(
        f"no such file or bundled example: {str(path)!r} (bundled: {', '.join(bundled_examples())}){hint}"
    )


def _network_files(name: str) -> list[str]:
    """Network files named ``name`` (with or without a network suffix) in the
    :data:`NETWORK_FOLDERS`, each once, as the shorter of its relative and absolute paths."""
    found: dict[str, None] = {}
    for folder in NETWORK_FOLDERS:
        for suffix in NETWORK_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                full = str(candidate.resolve())
                found[min(os.path.relpath(full), full, key=len)] = None
    return list(found)
