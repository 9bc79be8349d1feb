"""The commands that look at a network: ``info`` (describe it), ``cost`` (evaluate one
mapping of it) and ``template`` (recover the 2-slice template of an unrolled one); and
the loading of the network that the network options name, for every command."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ..cost.base import evaluate_mapping
from ..cost.dcmap import DcmapCost
from ..cost.user import load_cost
from ..io.dynamic import MAX_UNROLLED_NODES, recover_template
from ..io.load import load_network
from ..io.outputs import check_output, json_cost, write_atomic
from ..model.mappings import check_mapping
from ..io.files import read_json
from ..model.network import Network, NetworkError
from ..model.topology import eta, layer_nodes, long_arcs, scientific
from ..text import printable

__all__ = ["load_from_options", "run_cost", "run_info", "run_template"]


def load_from_options(args: argparse.Namespace, max_nodes: int = MAX_UNROLLED_NODES) -> Network:
    """The network named by the network options of ``args`` (network, --slices, --observe)."""
    observe = [x.strip() for x in args.observe.split(",") if x.strip()]
    return load_network(args.network, slices=args.slices, observe=observe, max_nodes=max_nodes,
                        strict=args.strict)


def run_info(args: argparse.Namespace) -> int:
    network = load_from_options(args)
    by_layer = layer_nodes(network)
    states = Counter(network.states.values())
    facts: dict[str, Any] = {
        "name": network.name,
        "nodes": len(network.nodes),
        "arcs": len(network.edges),
        "states": {str(k): v for k, v in sorted(states.items())},
        "observed": sorted(network.observed),
        "layers": len(by_layer),
        "nodes_per_layer": [len(nodes) for nodes in by_layer],
        "long_arcs": len(long_arcs(network)),
        "eta": eta(network),
        "components": len(network.components()),
        "naive_cost": _finite(DcmapCost(args.order, args.addition).naive(network)),
        "hash": network.content_hash(),
    }
    if args.json:
        print(json.dumps(facts, indent=1))
        return 0
    states_text = ", ".join(f"{v} with {scientific(int(k))}" for k, v in facts["states"].items())
    print(f"network      {printable(facts['name'])}")
    print(f"nodes        {facts['nodes']} ({states_text} states)")
    print(f"observed     {printable(', '.join(facts['observed'])) or 'none'}")
    print(f"arcs         {facts['arcs']} ({facts['long_arcs']} skip layers)")
    print(f"layers       {facts['layers']} (nodes per layer, leaves first: {facts['nodes_per_layer']})")
    print(f"eta          {scientific(facts['eta'])} ({facts['eta']})")
    print(f"components   {facts['components']}")
    naive = "past the float range" if facts["naive_cost"] is None else f"{facts['naive_cost']:.1f}"
    print(f"naive cost   {naive} (order {args.order})")
    return 0


def run_cost(args: argparse.Namespace) -> int:
    network = load_from_options(args)
    data = read_json(Path(args.mapping))
    if not isinstance(data, dict) or "clusters" not in data:
        raise NetworkError(f"{args.mapping} must be a JSON object with a 'clusters' list")
    clusters = check_mapping(network, data["clusters"], args.scheme)
    model = load_cost(args.cost, order=args.order, addition=args.addition)
    rows = evaluate_mapping(network, clusters, model)
    total = sum(row.cost for row in rows)
    if args.json:
        print(json.dumps({
            "total": _finite(total),
            "cluster_layers": [{"nodes": sorted(r.nodes), "layer": r.layer, "cost": _finite(r.cost)} for r in rows],
        }, indent=1))
        return 0
    owner = {x: k for k, cluster in enumerate(sorted(clusters, key=sorted)) for x in cluster}
    shown = sorted(rows, key=lambda r: (owner[next(iter(r.nodes))], r.layer))
    print(f"{'cluster':>7}  {'layer':>5}  {'cost':>12}  nodes")
    for row in shown:
        names = printable(', '.join(sorted(row.nodes)))
        print(f"{owner[next(iter(row.nodes))] + 1:>7}  {row.layer:>5}  {row.cost:12.1f}  {names}")
    print(f"total {total:.1f} ({len(clusters)} clusters, {len(rows)} cluster-layers)")
    return 0


def _finite(value: float) -> float | None:
    """A cost for JSON: 12 significant digits, None (JSON null) past the float range."""
    return json_cost(value)


def run_template(args: argparse.Namespace) -> int:
    to_file = args.output and args.output != "-"  # '-': standard output, as without --output
    if to_file:
        check_output(Path(args.output), [Path(args.network)])
    template = recover_template(load_network(args.network))
    text = json.dumps(template, indent=1) + "\n"
    if to_file:
        write_atomic(Path(args.output), text)
        print(f"template with {len(template['nodes'])} nodes and {template['slices']} slices "
              f"written to {args.output}")
    else:
        sys.stdout.write(text)
    return 0
