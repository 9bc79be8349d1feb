"""The work of one contour: a serial search from the root with ``G_min`` held at ``G``
until nothing is open (issue 57's measure of what a proof at ``G`` costs), in the engine
``DCMAP_ENGINE`` picks. Prints the network, ``G``, the expansions, the link records, the
CPU seconds of the search and the peak MiB.

    DCMAP_ENGINE=python python scripts/fixed_contour.py win95pts 2400
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("network", help="a network of ../shared/networks, without its suffix")
    parser.add_argument("g", type=float, help="the contour: G_min held here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.io.load import load_network
    from dcmap_dist.limits import Limits, StepEnd, Stopwatch
    from dcmap_dist.search.engine import new_engine
    from dcmap_dist.search.heuristics import incumbent
    from dcmap_dist.search.problem import Problem

    problem = Problem(load_network(str(NETWORKS / f"{args.network}.bif.gz")), DcmapCost(), "merge")
    watch = Stopwatch(Limits())
    engine = new_engine(problem, 0.6, 0, owner=0)
    engine.start(incumbent(problem, watch, 0), watch)
    engine.hear(args.g)
    cpu = time.process_time()
    while engine.step(watch, until=time.perf_counter() + 5) != StepEnd.IDLE:
        pass
    print(args.network, args.g, engine.iterations, engine.link_records, round(time.process_time() - cpu, 1),
          round(watch.peak_memory_mb))


if __name__ == "__main__":
    main()
