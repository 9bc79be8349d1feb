"""The lower bound's reach: the root bound of each network against its optimum (or best
known cost), and the slack along a mapping, layer by layer.

The root bound is the bound of the search's root branch (layer 0 placed). The slack
replays a mapping (a result file of ``dcmap solve``) layer by layer: after each completed
layer, the mapping's true remaining cost minus the bound there, over the mapping's cost.
Both need no search and do not depend on the engine, so the same script run by another
tree's Python (a ``pip install -e`` of an older commit) measures that tree's bound. Rows
are printed, and with ``--out`` appended to a CSV with the commit and the command.

    python scripts/bound_gaps.py
    python scripts/bound_gaps.py --networks water,hepar2 --mappings results-dir --out results/bound-gaps.csv
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import subprocess
import sys
from pathlib import Path

from benchmark_engine import network_spec

from dcmap_dist import DcmapCost, load_network
from dcmap_dist.io.outputs import append_csv_row
from dcmap_dist.search.problem import Problem

# the optimum of every network proven (results/README.md), or the best cost known
BEST = {"child": 639.4, "seagrass-1slice": 1249.8, "insurance": 3179.0, "water": 34967.4, "mildew": 883760.8,
        "alarm": 1471.8, "barley": 302104.6, "seagrass-2slices": 5332.4, "hailfinder": 7866.4, "hepar2": 4913.2,
        "win95pts": 3054.6, "pathfinder": 219436.4}
PROVEN = set(BEST) - {"win95pts", "pathfinder"}
COLUMNS = ["network", "commit", "root_bound", "best", "proven", "root_gap", "slack_by_layer", "date", "command"]


def problem_of(label: str) -> Problem:
    """The search problem of a network label (seagrass-1slice/-2slices too: paper order)."""
    spec = network_spec(label)
    network = load_network(spec["source"], slices=spec.get("slices"))
    return Problem(network, DcmapCost(order=spec.get("order", "cpt")))


def slack(problem: Problem, clusters: list[list[str]]) -> list[float]:
    """After each completed layer but the last, the mapping's remaining cost minus the bound
    there, over the mapping's cost (in %)."""
    topo, index = problem.topo, problem.network.index
    cluster_of = {}
    for cluster in clusters:
        mask = sum(1 << index[x] for x in cluster)
        for x in cluster:
            cluster_of[index[x]] = mask
    item_of: dict[int, tuple] = {}  # node -> the frontier item of its cluster-layer
    placed = []  # the cost of the layers up to each
    total = 0.0
    for layer in range(topo.l_max + 1):
        parts: dict[int, int] = {}
        for i in range(topo.n):
            if topo.layer[i] == layer:
                parts[cluster_of[i]] = parts.get(cluster_of[i], 0) | 1 << i
        for cluster, nodes in sorted(parts.items(), key=lambda part: part[1]):
            kids = {item_of[c][0]: item_of[c] for i in range(topo.n) if nodes >> i & 1
                    for c in range(topo.n) if topo.children[i] >> c & 1}
            cost, item = problem.cluster_layer_cost(nodes, cluster, tuple(sorted(kids.values(), key=lambda it: it[0])))
            total += cost
            for i in range(topo.n):
                if nodes >> i & 1:
                    item_of[i] = item
        placed.append(total)
    rows = []
    for layer in range(topo.l_max):
        frontier = sorted({item_of[i] for i in range(topo.n) if topo.layer[i] <= layer and topo.parents[i] & topo.above[layer]},
                          key=lambda it: it[0])
        bound = problem.bound.compute(layer, -1, tuple(frontier))
        rows.append(round(100 * (total - placed[layer] - bound) / total, 1))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=",".join(BEST))
    parser.add_argument("--mappings", type=Path, help="a folder of result files NETWORK.json: their first mapping's slack")
    parser.add_argument("--out", type=Path, help="a CSV to append the rows to")
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(Path(__import__("dcmap_dist").__file__).parent), "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True).stdout.strip()
    for label in args.networks.split(","):
        problem = problem_of(label)
        root = problem.score(problem.root()).bound
        best = BEST.get(label)
        path = args.mappings / f"{label}.json" if args.mappings else None
        layers = slack(problem, json.loads(path.read_text())["solutions"][0]["clusters"]) if path and path.exists() else []
        row = {"network": label, "commit": commit, "root_bound": round(root, 1), "best": best,
               "proven": label in PROVEN, "root_gap": round(100 * (best - root) / best, 1) if best else None,
               "slack_by_layer": " ".join(f"{value}%" for value in layers),
               "date": datetime.date.today().isoformat(), "command": shlex.join(["python", *sys.argv])}
        print(f"{label:18} root bound {root:12.1f}  gap {row['root_gap']}%  {row['slack_by_layer']}", flush=True)
        if args.out:
            append_csv_row(args.out, row, COLUMNS)


if __name__ == "__main__":
    main()
