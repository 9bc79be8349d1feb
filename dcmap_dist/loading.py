"""One entry point for every input form: JSON, 2-slice template JSON, BIF, networkx."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from .bif import read_bif
from .dynamic import is_template, unroll
from .network import Network, NetworkError, network_from_dict, network_from_digraph, read_json

EXAMPLES = Path(__file__).parent / "examples"


def load_network(
    source: str | Path | Network | nx.DiGraph | Mapping[str, Any],
    slices: int | None = None,
    observe: Iterable[str] = (),
) -> Network:
    """Load a network from a file path (``.json``, ``.json.gz``, ``.bif``, ``.bif.gz``),
    a JSON object, a networkx DiGraph or a Network.

    ``slices`` unrolls a 2-slice template (a template given without it is unrolled
    to one slice). ``observe`` adds observed nodes; on an unrolled template a
    template node name observes that node in every slice. A bundled example can be
    named without its path (``paper-example``, ``asia``, ...).
    """
    data: Any = source
    if isinstance(source, (str, Path)):
        path = _resolve(Path(source))
        if path.name.endswith((".bif", ".bif.gz")):
            data = read_bif(path)
        else:
            data = read_json(path)
            if isinstance(data, dict):
                data.setdefault("name", path.name.split(".")[0])
    if isinstance(data, nx.DiGraph):
        data = network_from_digraph(data)
    template = isinstance(data, Mapping) and is_template(data)
    if slices is not None and not template:
        raise NetworkError("--slices needs a 2-slice template (a JSON network with 'temporal_edges')")
    if template:
        network = unroll(data, 1 if slices is None else slices)
    elif isinstance(data, Mapping):
        network = network_from_dict(data)
    elif isinstance(data, Network):
        network = data
    else:
        raise NetworkError(f"cannot load a network from {type(source).__name__}")
    names = list(observe)
    if template:
        count = 1 if slices is None else slices
        names = [y for x in names for y in _slice_names(network, x, count)]
    return network.with_observed(names) if names else network


def _slice_names(network: Network, name: str, slices: int) -> list[str]:
    """``name`` itself if it is a node, else its copy in every slice."""
    if name in network.index:
        return [name]
    copies = [f"{name}_{t}" for t in range(slices)]
    if copies[0] not in network.index:
        raise NetworkError(f"observed name {name!r} is not a node of the template")
    return copies


def _resolve(path: Path) -> Path:
    """``path`` itself, or the bundled example of that name."""
    if path.exists() or path.parent != Path("."):
        return path
    for candidate in sorted(EXAMPLES.glob(f"{path.name}.*")):
        return candidate
    return path
