"""Measure the search's first mapping (issue 57): for each network, the cost and the
seconds of the old first mapping (the cheaper of the greedy dive and all singletons,
``--first-budget 0``) and of the new one (with the beam search, the default budget),
summed over the network's components, on the Python Problem the heuristics run on.

    python scripts/first_mapping.py --only hepar2,water --output results/early-incumbent-first.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dcmap_dist.cost.user import load_cost  # noqa: E402
from dcmap_dist.io.load import load_network  # noqa: E402
from dcmap_dist.io.outputs import append_csv_row  # noqa: E402
from dcmap_dist.limits import Limits, Stopwatch  # noqa: E402
from dcmap_dist.search.heuristics import FIRST_BUDGET, incumbent  # noqa: E402
from dcmap_dist.search.problem import Problem  # noqa: E402

NETWORKS = ROOT.parent / "shared" / "networks"
COLUMNS = ["network", "nodes", "old_cost", "old_seconds", "new_cost", "new_seconds", "budget"]


def spec_of(name: str) -> dict:
    """load_network's arguments and the cost order of a network named as in results/serial.md."""
    if name.startswith("seagrass-"):
        return {"source": str(NETWORKS / "seagrass-2tbn.json"), "slices": 1 if name == "seagrass-1slice" else 2,
                "order": "paper"}
    return {"source": str(NETWORKS / f"{name}.bif.gz")}


def first_cost(name: str, budget: int) -> tuple[int, float, float]:
    """Nodes, the first mapping's cost (over all components) and the seconds it took."""
    spec = spec_of(name)
    network = load_network(spec["source"], slices=spec.get("slices"))
    model = load_cost("dcmap", order=spec.get("order", "cpt"))
    cost = seconds = 0.0
    for part in network.components():
        problem = Problem(part, model, graph=network)
        start = time.perf_counter()
        cost += incumbent(problem, Stopwatch(Limits()), budget).cost
        seconds += time.perf_counter() - start
    return len(network.nodes), cost, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="networks, comma separated")
    parser.add_argument("--budget", type=int, default=FIRST_BUDGET)
    parser.add_argument("--output", help="append the rows to this CSV")
    args = parser.parse_args()
    for name in args.only.split(","):
        nodes, old, old_s = first_cost(name, 0)
        _, new, new_s = first_cost(name, args.budget)
        row = {"network": name, "nodes": nodes, "old_cost": round(old, 1), "old_seconds": round(old_s, 2),
               "new_cost": round(new, 1), "new_seconds": round(new_s, 2), "budget": args.budget}
        print(row, flush=True)
        if args.output:
            append_csv_row(Path(args.output), row, COLUMNS)


if __name__ == "__main__":
    main()
