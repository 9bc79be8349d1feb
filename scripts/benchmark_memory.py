"""Where the serial search's memory goes: bytes per open branch, link record and history.

Runs the serial search of one component (the largest) of each network for a number of
iterations, in a fresh process, then walks what the search holds and adds up the sizes
(``sys.getsizeof``) of the objects each structure reaches first, in this order: the
cost model's messages (shared by all), the open branches (the queue's entries, stale
ones included), the link table's keys and entries, the tied histories, the dominated
records, the bound memo, the cost memo, the interned masks. An object reached from two
structures counts once, for the first. On the native engine the rows are its core's own
count of the bytes of each structure (its interned values under "masks"). Rows are
appended to ``results/memory.csv`` with the command.

``--tree`` runs another checkout of the same layout (a worktree of an earlier commit,
built in place), to set a before beside an after in one run.

    python scripts/benchmark_memory.py --networks insurance:100000,hepar2:1000000
    python scripts/benchmark_memory.py --networks water:400000 --tree /tmp/before
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"
COLUMNS = ["network", "commit", "iterations", "cpu_seconds", "rss_mib", "structure", "items", "mib",
           "bytes_per_item", "date", "command"]
ATOMS = (int, float, str, bool, type(None))


def deep_size(root: object, seen: set[int]) -> int:
    """The bytes of every object reachable from ``root`` through containers and slots,
    not yet in ``seen`` (which it fills). A slot that a compiled record holds as a C value
    (a double, an integer) makes a new object each time it is read: such objects are in
    the record's own size, and are not counted again (nor kept, which would let a later
    object take the same id)."""
    total = 0
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, ATOMS):
            continue
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (tuple, list, set, frozenset)):
            stack.extend(item)
        else:
            for name in getattr(item, "__slots__", ()):
                if hasattr(item, name):
                    value = getattr(item, name)
                    if sys.getrefcount(value) > 2:  # held by the record, not made by the read
                        stack.append(value)
    return total


def generations(memo: object, older: dict) -> list[dict]:
    """The dicts of a memo: a RecentMemo's two generations, or (a tree before it) a dict
    and ``older``, its older generation where it had one."""
    if isinstance(memo, dict):
        return [memo, older]
    return [memo.newer, memo.older]


def measure(tree: str, label: str, iterations: int) -> list[dict]:
    """Run ``label`` to ``iterations`` with the package of ``tree``; one row per structure."""
    sys.path.insert(0, tree)
    import gc

    from dcmap_dist.cost import load_cost
    from dcmap_dist.io.load import load_network
    from dcmap_dist.limits import Limits, memory_mb
    from dcmap_dist.run.serial import SerialSearch
    from dcmap_dist.search.problem import Problem

    if label.startswith("seagrass-"):  # seagrass-1slice, seagrass-2slices: the paper's order
        network = load_network(str(NETWORKS / "seagrass-2tbn.json"), slices=int(label[9]))
        model = load_cost("dcmap", order="paper")
    else:
        network = load_network(str(NETWORKS / f"{label}.bif.gz"))
        model = load_cost("dcmap")
    part = max(network.components(), key=len)
    problem = Problem(part, model, "merge", graph=network)
    cpu = time.process_time()
    search = SerialSearch(problem, 0.6, 0, Limits(max_iterations=iterations), None, None, reports=False)
    while not search.advance(None).stopped:
        pass
    cpu = time.process_time() - cpu
    gc.unfreeze()
    explorer = getattr(search, "engine", None) or search.explorer  # a tree before issue 47: explorer
    common = {"network": label, "iterations": explorer.iterations, "cpu_seconds": round(cpu, 1),
              "rss_mib": round(memory_mb())}
    if hasattr(explorer, "footprint"):  # the native engine: what its core holds
        return native_rows(explorer.footprint(), common)
    shard = explorer.shard
    queue = explorer.queue
    seen: set[int] = set()
    messages = getattr(problem, "_messages", None)  # a tree before the codes (0ce4211 and older)
    deep_size(vars(problem.messages) if messages is None else messages, seen)
    deep_size(problem.topo, seen)
    known = generations(problem.bound._known, getattr(problem.bound, "_known_before", {}))
    try:
        from dcmap_dist.search.histories import histories_of
    except ImportError:  # a tree before d76acc7 keeps it in search/linking.py; one before
        from dcmap_dist.search import linking  # a record's histories were a run of bytes, lists

        histories_of = getattr(linking, "histories_of", list)
    structures = [
        ("open branches", explorer.open_count(), [explorer.active, queue.by_cost, queue.by_layer]),
        ("link records", len(shard.entries), shard.entries),
        ("histories", sum(len(histories_of(held)) for held in shard.histories.values()), shard.histories),
        ("dominated", len(explorer.dominated), explorer.dominated),
        ("bound memo", sum(map(len, known)), known),
        ("cost memo", len(problem._costs), problem._costs),
    ]
    if hasattr(problem, "_masks"):  # a tree from 2026-11-27 on
        masks = generations(problem._masks, {})
        structures.append(("masks", sum(map(len, masks)), masks))
    rows = []
    for name, items, held in structures:
        size = deep_size(held, seen)
        rows.append({**common, "structure": name, "items": items, "mib": round(size / 2**20, 1),
                     "bytes_per_item": round(size / max(items, 1))})
    return rows


# the native engine's structures under the Python engine's names (its interned values: "masks")
NATIVE_ROWS = {"open branches": "open branches", "link records": "link records", "histories": "histories",
               "dominated": "dominated", "bound memo": "bound memo", "cost memo": "cost memo", "masks": "values"}


def native_rows(footprint: dict, common: dict) -> list[dict]:
    """A row per structure of the native engine's core (its own count of bytes)."""
    rows = []
    for name, held in NATIVE_ROWS.items():
        items, size = footprint[held]
        rows.append({**common, "structure": name, "items": items, "mib": round(size / 2**20, 1),
                     "bytes_per_item": round(size / max(items, 1))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="insurance:100000,water:400000,hepar2:1000000",
                        help="NETWORK:ITERATIONS, comma-separated")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout to measure (this one)")
    parser.add_argument("--output", default=str(ROOT / "results" / "memory.csv"))
    parser.add_argument("--run-one", nargs=3, metavar=("TREE", "NETWORK", "ITERATIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        tree, label, iterations = args.run_one
        print(json.dumps(measure(tree, label, int(iterations))))
        return
    commit = subprocess.run(["git", "-C", args.tree, "rev-parse", "--short", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    command = shlex.join(["python", "scripts/benchmark_memory.py", *sys.argv[1:]])
    stamp = datetime.date.today().isoformat()
    output = Path(args.output)
    new_file = not output.exists()
    with output.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        if new_file:
            writer.writeheader()
        for spec in args.networks.split(","):
            label, iterations = spec.split(":")
            done = subprocess.run([sys.executable, __file__, "--run-one", args.tree, label, iterations],
                                  check=True, capture_output=True, text=True)
            for row in json.loads(done.stdout.strip().splitlines()[-1]):
                row.update(commit=commit, date=stamp, command=command)
                writer.writerow(row)
                print(f"{label:18s} {commit} {row['structure']:14s} {row['items']:>10,} {row['mib']:8.1f} MiB "
                      f"{row['bytes_per_item']:>7,} B/item  (rss {row['rss_mib']} MiB, {row['cpu_seconds']} s)",
                      flush=True)


if __name__ == "__main__":
    main()
