"""Distributed benchmark: the serial search against the Ray search, in one run.

``proof``: time to proof of each network serially (in this process, no Ray), then on
W = 1 and W = 2 Ray workers (``--workers``; a local Ray with ``--cpus`` CPUs), one run
after the other; wall time, CPU time (this process for the serial run; the workers' and the
coordinator's for Ray) and their ratios to the serial run. The pool of workers is started
before a timed Ray run (:func:`warm`). ``--repeat N`` runs that sequence
N times (each ratio is to the serial run just before it) and prints the median ratios: on a
shared machine single runs vary. ``--capacity`` adds, to each repeat,
two serial searches run at once in two processes ("2 serial at once"; its speed-up is
twice the serial time over the time the pair takes): what the machine gives two
independent searches, the ceiling for two workers.

``scaling``: machine-independent figures for W = 1, 2, 4, 8, 16 workers (they may share
the cores): total expansions relative to the serial search (work overhead), link
reports (completions sent to another actor) per expansion and per second, bytes per
second, the coordinator's busy fraction, each worker's idle fraction, steps.

``latency``: why a link table held by one process costs work, without Ray: the serial
loop in this process, except that a branch that completes a layer and goes on waits
``--delays`` iterations before it enters the queue (0, then each delay), as it waits for
a central table's answer before a worker can take it further; iterations to proof, to
the first optimal mapping, and their ratio to no delay.

``overhead``: the distributed code without Ray: the serial search against two sharded
explorers in this one process that take 100 ms turns and exchange packed batches, for
``--iterations`` expansions each, alternating ``--repeat`` times; CPU per expansion, the
time spent packing and unpacking and settling the arrivals, and their sum per arrival
(``us_per_crossing``). What remains between this and a Ray run is what
Ray, the coordinator and the second core add.

``formats``: what a batch costs as marshal (the workers' format) and as an Arrow record
batch of columns (each field a column, each tuple a list column of 64-bit words, written
and read by Arrow's IPC stream), on the batches two explorers of ``overhead`` send in their
first ``--iterations`` expansions: microseconds per completion to pack and to unpack back
to ``(key, Branch)`` (the fastest of ``--repeat``, at least 5, passes), and bytes per
completion; both must read back what was sent. For networks whose masks fit 64 bits.

Rows go to ``results/distributed-proof.csv``, ``results/distributed-scaling.csv``,
``results/distributed-latency.csv``, ``results/distributed-overhead.csv`` and
``results/distributed-batch-formats.csv`` (appended, with the command and date).

    python scripts/benchmark_distributed.py proof --networks insurance,water,seagrass-2slices
    python scripts/benchmark_distributed.py proof --networks insurance --workers 2 --repeat 3
    python scripts/benchmark_distributed.py proof --networks seagrass-2slices --workers 2 --link-tables sharded,coordinator
    python scripts/benchmark_distributed.py scaling --networks seagrass-1slice,child
    python scripts/benchmark_distributed.py latency --networks seagrass-2slices --delays 100,1000,3000
    python scripts/benchmark_distributed.py overhead --networks insurance --iterations 200000 --repeat 3
    python scripts/benchmark_distributed.py formats --networks insurance,water --iterations 60000
"""

from __future__ import annotations

import argparse
import collections
import datetime
import math
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT.parent / "shared" / "networks"
RESULTS = ROOT / "results"
sys.path.insert(0, str(ROOT))

from dcmap_dist import load_network, solve  # noqa: E402
from dcmap_dist.io.outputs import append_csv_row  # noqa: E402
from dcmap_dist.run.ray import driver as distributed  # noqa: E402

LISTED = 100_000  # optimal mappings listed at most (hepar2's best cost has 53 million tied ones)
# what a forced W = 1 Ray run (and the pool's warm-up) passes to distributed_search: solve()'s defaults
RAY_SETTINGS = {"alpha": 0.6, "seed": 0, "link_table": "sharded", "snapshot_every": 30.0}
SPECIAL = {  # label: (source, slices, order)
    "seagrass-1slice": ("seagrass-2tbn", 1, "paper"),
    "seagrass-2slices": ("seagrass-2tbn", 2, "paper"),
    "child": ("child", None, "cpt"),
}


def network(label: str):
    source, slices, order = SPECIAL.get(label, (str(NETWORKS / f"{label}.bif.gz"), None, "cpt"))
    return load_network(source, slices=slices), order


def append(path: Path, rows: list[dict]) -> None:
    for row in rows:
        append_csv_row(path, row, list(rows[0]))


def warm(workers: int) -> None:
    """Start the pool of ``workers`` Ray workers (if it is not up) with a small search, so
    a timed run measures the search and not the start of the actors' processes (a
    session's first search pays that once, about half a second here)."""
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.limits import Limits
    from dcmap_dist.search.problem import Problem

    distributed.distributed_search(Problem(load_network("asia"), DcmapCost(), "merge"), workers, RAY_SETTINGS,
                                   Limits())


def run(label: str, workers: int, time_limit: float, link_table: str = "sharded",
        memory_limit: float | None = None) -> dict:
    net, order = network(label)
    if workers > 1:
        warm(workers)
    cpu = time.process_time()
    wall = time.perf_counter()
    result = solve(net, order=order, time_limit=time_limit, memory_limit_mb=memory_limit, workers=workers,
                   link_table=link_table, max_solutions=LISTED)
    wall = time.perf_counter() - wall
    stats = result.components[0].get("distributed", {})
    cpu = (time.process_time() - cpu) + sum(stats.get("worker_cpu", [])) + stats.get("coordinator_cpu", 0.0)
    return {"network": label, "workers": workers, "link_table": link_table,
            "cost": round(result.optimal_cost, 6), "proven": result.proven_optimal,
            "solutions": result.solution_count, "iterations": result.iterations, "wall_seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2), "stop": result.stop_reason,
            "lower_bound": round(result.lower_bound, 6) if math.isfinite(result.lower_bound) else None,
            "gap": round(result.gap, 6) if math.isfinite(result.gap) else None,
            "peak_memory_mb": round(result.peak_memory_mb), "stats": stats}


def proof_row(label: str, variant: str, got: dict, args: argparse.Namespace, speedup: float, work: float) -> dict:
    """One row of ``distributed-proof.csv``."""
    return {"network": label, "variant": variant, "proven": got["proven"], "cost": got["cost"],
            "solutions": got["solutions"], "iterations": got["iterations"], "wall_seconds": got["wall_seconds"],
            "cpu_seconds": got["cpu_seconds"], "speedup": speedup, "work": work, "stop": got["stop"],
            "lower_bound": got["lower_bound"], "gap": got["gap"], "peak_memory_mb": got["peak_memory_mb"],
            "time_limit": args.time_limit, "memory_limit_mb": args.memory_limit}


def proof(args: argparse.Namespace) -> None:
    for label in args.networks.split(","):
        speedups: dict[str, list[float]] = {}
        for _ in range(args.repeat):  # serial and Ray runs alternate, so each ratio compares neighbours
            rows = []
            serial = run(label, 1, args.time_limit, memory_limit=args.memory_limit)
            row = proof_row(label, "serial", serial, args, 1.0, 1.0)
            rows.append(row)
            print(row, flush=True)
            for table in args.link_tables.split(","):
                for workers in args.workers:
                    got = run_ray(label, workers, args.time_limit, table, args.memory_limit)
                    variant = f"ray W={workers}" + ("" if table == "sharded" else f" {table}")
                    row = proof_row(label, variant, got, args, round(serial["wall_seconds"] / got["wall_seconds"], 2),
                                    round(got["iterations"] / max(1, serial["iterations"]), 3))
                    rows.append(row)
                    speedups.setdefault(row["variant"], []).append(row["speedup"])
                    print(row, flush=True)
            if args.capacity:
                pair = run_pair(label, args.time_limit, args.memory_limit)
                got = {**pair[0], "proven": all(p["proven"] for p in pair),
                       "iterations": sum(p["iterations"] for p in pair),
                       "wall_seconds": max(p["wall_seconds"] for p in pair),
                       "cpu_seconds": round(sum(p["cpu_seconds"] for p in pair), 2),
                       "peak_memory_mb": max(p["peak_memory_mb"] for p in pair)}
                row = proof_row(label, "2 serial at once", got, args,
                                round(2 * serial["wall_seconds"] / got["wall_seconds"], 2), 2.0)
                rows.append(row)
                speedups.setdefault(row["variant"], []).append(row["speedup"])
                print(row, flush=True)
            stamp(rows, args)
            append(RESULTS / "distributed-proof.csv", rows)
        for variant, values in speedups.items():
            print(f"{label} {variant}: speed-ups {values}, median {statistics.median(values)}", flush=True)


def run_pair(label: str, time_limit: float, memory_limit: float | None) -> list[dict]:
    """Two serial searches of ``label`` at once, each in its own process (at this one's
    niceness): what this machine gives two independent searches on its two cores, the
    ceiling for two workers' speed-up."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        return pool.starmap(run, [(label, 1, time_limit, "sharded", memory_limit)] * 2)


def run_ray(label: str, workers: int, time_limit: float, link_table: str = "sharded",
            memory_limit: float | None = None) -> dict:
    """A Ray run; W = 1 is forced through Ray (solve() runs W = 1 serially)."""
    if workers > 1:
        return run(label, workers, time_limit, link_table, memory_limit)
    net, order = network(label)
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.limits import Limits
    from dcmap_dist.search.problem import Problem

    problem = Problem(net, DcmapCost(order), "merge")
    warm(1)
    cpu = time.process_time()
    wall = time.perf_counter()
    outcome = distributed.distributed_search(problem, 1, dict(RAY_SETTINGS, link_table=link_table),
                                            Limits(time_limit, memory_limit_mb=memory_limit))
    wall = time.perf_counter() - wall
    stats = outcome.statistics
    cpu = (time.process_time() - cpu) + sum(stats["worker_cpu"]) + stats["coordinator_cpu"]
    gap = (outcome.best_cost - outcome.lower_bound) / outcome.best_cost if not outcome.proven else None
    return {"network": label, "workers": 1, "link_table": link_table, "cost": round(outcome.best_cost, 6),
            "proven": outcome.proven, "solutions": None, "iterations": outcome.iterations,
            "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "stop": outcome.stop_reason,
            "lower_bound": None if outcome.proven else round(outcome.lower_bound, 6),
            "gap": None if gap is None else round(gap, 6), "peak_memory_mb": round(outcome.peak_memory_mb), "stats": stats}


def scaling(args: argparse.Namespace) -> None:
    for label in args.networks.split(","):
        rows = []
        serial = run(label, 1, args.time_limit)
        for table in args.link_tables.split(","):
            for workers in (1, 2, 4, 8, 16):
                got = run_ray(label, workers, args.time_limit, table)
                s = got["stats"]
                elapsed = s["elapsed"]
                idle = [round(1 - busy / elapsed, 3) for busy in s["worker_busy"]]
                row = {
                    "network": label, "link_table": table, "workers": workers, "proven": got["proven"],
                    "serial_iterations": serial["iterations"], "iterations": got["iterations"],
                    "work": round(got["iterations"] / max(1, serial["iterations"]), 3),
                    "reports": s["sent"], "reports_per_expansion": round(s["sent"] / max(1, got["iterations"]), 3),
                    "reports_per_second": round(s["sent"] / elapsed), "bytes_per_second": round(s["bytes"] / elapsed),
                    "coordinator_busy": round(s["coordinator_busy"] / elapsed, 3),
                    "idle_min": min(idle), "idle_max": max(idle), "steps": s["steps"],
                    "wall_seconds": got["wall_seconds"], "cpu_seconds": got["cpu_seconds"],
                }
                rows.append(row)
                print(row, flush=True)
        stamp(rows, args)
        append(RESULTS / "distributed-scaling.csv", rows)


def overhead(args: argparse.Namespace) -> None:
    for label in args.networks.split(","):
        for _ in range(args.repeat):
            rows = [in_process(label, 1, args.iterations), in_process(label, 2, args.iterations)]
            for row in rows:
                row["per_expansion_ratio"] = round(row["us_per_expansion"] / rows[0]["us_per_expansion"], 3)
                print(row, flush=True)
            stamp(rows, args)
            append(RESULTS / "distributed-overhead.csv", rows)


def latency(args: argparse.Namespace) -> None:
    for label in args.networks.split(","):
        rows = [delayed(label, delay) for delay in [0, *args.delays]]
        for row in rows:
            row["work"] = round(row["iterations"] / rows[0]["iterations"], 3)
            row["first_optimal_ratio"] = round(row["first_optimal"] / rows[0]["first_optimal"], 3)
            print(row, flush=True)
        stamp(rows, args)
        append(RESULTS / "distributed-latency.csv", rows)


def delayed(label: str, delay: int) -> dict:
    """The serial search's loop (one explorer owning the whole link table, alpha 0.6, seed
    0, the same incumbent to start from) on ``label`` to proof, each branch that completes a layer and
    goes on held back for ``delay`` iterations before it enters the queue (looked at with
    each child an expansion makes; all of them at once when nothing else is left to
    expand)."""
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.limits import Limits, Stopwatch
    from dcmap_dist.search.explorer import Explorer
    from dcmap_dist.search.heuristics import incumbent
    from dcmap_dist.search.problem import Problem
    from dcmap_dist.search.tolerance import within

    class Delayed(Explorer):
        def __init__(self, problem: Problem) -> None:
            super().__init__(problem, 0.6, 0, owner=0)
            self.held: collections.deque = collections.deque()  # (iteration it is released at, branch)

        def release(self, until: float) -> None:
            """Queue the held branches due by iteration ``until``."""
            while self.held and self.held[0][0] <= until:
                self.queue.push(self.held.popleft()[1])

        def _link_inside(self, branch):  # every child of an expansion passes here or below
            self.release(self.iterations)
            return super()._link_inside(branch)

        def _complete(self, branch):
            self.release(self.iterations)
            survivor = super()._complete(branch)
            if survivor is None or delay == 0:
                return survivor
            self.held.append((self.iterations + delay, survivor))
            return None

    net, order = network(label)
    problem = Problem(net, DcmapCost(order), "merge")
    cpu = time.process_time()
    explorer = Delayed(problem)
    explorer.start(incumbent(problem, Stopwatch(Limits())), Stopwatch(Limits()))
    while True:
        explorer.step(Stopwatch(Limits()))
        if not explorer.held:
            break
        explorer.release(math.inf)  # nothing else left to expand: all of them now
    cpu = time.process_time() - cpu
    optimum = explorer.g_min
    first = next(iteration for iteration, _, cost, _ in explorer.improvements if within(cost, optimum))
    return {"network": label, "delay": delay, "cost": round(optimum, 6), "iterations": explorer.iterations,
            "first_optimal": first, "cpu_seconds": round(cpu, 2)}


def in_process(label: str, shards: int, iterations: int, sent: list | None = None) -> dict:
    """``iterations`` expansions of ``label`` by ``shards`` explorers in this process, each
    owning its shard of the link table (one: the serial search), taking 100 ms turns and
    exchanging packed batches between turns as the workers do; each batch, unpacked, is
    added to ``sent`` if given."""
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.limits import Limits, Stopwatch
    from dcmap_dist.run.ray.batches import packed, unpacked
    from dcmap_dist.search.explorer import Explorer
    from dcmap_dist.search.problem import Problem

    net, order = network(label)
    problems = [Problem(net, DcmapCost(order), "merge") for _ in range(shards)]
    explorers = [Explorer(problems[i], 0.6, i, i + 1, i, shards) for i in range(shards)]
    root = problems[0].root()
    explorers[0].receive([(problems[0].link_key(root), root)])
    inbox: list[list[bytes]] = [[] for _ in range(shards)]
    packing = settling = 0.0
    arrived = 0
    cpu = time.process_time()
    while sum(e.iterations for e in explorers) < iterations:
        idle = True
        for i, explorer in enumerate(explorers):
            with explorer.collector_paused():  # as in Worker.step
                clock = time.process_time()
                arrivals = [unpacked(batch) for batch in inbox[i]]
                packing += time.process_time() - clock
                inbox[i] = []
                clock = time.process_time()
                for batch in arrivals:
                    explorer.receive(batch)
                    arrived += len(batch)
                settling += time.process_time() - clock
                stop = explorer.step(Stopwatch(Limits()), until=time.perf_counter() + 0.1,
                                     max_iterations=iterations)
                clock = time.process_time()
                for j, batch in explorer.take_outbox().items():
                    inbox[j].append(packed(batch, True))
                    if sent is not None:
                        sent.append(batch)
                packing += time.process_time() - clock
            idle = idle and stop == "idle"
            g_min = min(e.g_min for e in explorers)
            for other in explorers:
                other.hear(g_min)
        if idle and not any(inbox):
            break
    cpu = time.process_time() - cpu
    done = sum(e.iterations for e in explorers)
    crossing = round((packing + settling) / arrived * 1e6, 2) if arrived else None
    return {"network": label, "explorers": shards, "iterations": done, "cpu_seconds": round(cpu, 2),
            "us_per_expansion": round(cpu / done * 1e6, 1), "packing_seconds": round(packing, 2),
            "settling_seconds": round(settling, 2), "arrivals": arrived, "us_per_crossing": crossing}


SCALARS = ("layer", "assigned", "cost", "link", "estimate", "bound", "fixed", "blocked")  # blocked: bytes
LISTS = ("comps", "frontier_masks", "frontier_messages", "joins", "shape")


def arrow_packed(batch: list) -> bytes:
    """A batch of completions ``(key, branch)`` (lean keys: ``(layer, items, shape,
    blocked)``, ``items`` the branch's frontier) as an Arrow record batch in an IPC stream:
    a column per scalar field, a list column of 64-bit words per tuple; ``blocked``, a
    mask over pairs of components, may pass 64 bits: its bytes, little-endian."""
    import pyarrow as pa

    scalars: dict[str, list] = {name: [] for name in SCALARS}
    lists: dict[str, tuple[list, list]] = {name: ([], [0]) for name in LISTS}
    for key, branch in batch:
        for name in SCALARS[:-1]:
            scalars[name].append(getattr(branch, name))
        scalars["blocked"].append(key[3].to_bytes((key[3].bit_length() + 7) // 8, "little"))
        for name, items in (("comps", branch.comps), ("frontier_masks", [item[0] for item in branch.frontier]),
                            ("frontier_messages", [item[1] for item in branch.frontier]),
                            ("joins", branch.joins), ("shape", key[2])):
            values, offsets = lists[name]
            values.extend(items)
            offsets.append(len(values))
    types = {"cost": pa.float64(), "estimate": pa.float64(), "bound": pa.float64(), "fixed": pa.uint64(),
             "blocked": pa.binary()}
    columns = [pa.array(scalars[name], types.get(name, pa.int64())) for name in SCALARS]
    columns += [pa.ListArray.from_arrays(pa.array(lists[name][1], pa.int32()), pa.array(lists[name][0], pa.uint64()))
                for name in LISTS]
    table = pa.RecordBatch.from_arrays(columns, names=[*SCALARS, *LISTS])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_batch(table)
    return sink.getvalue().to_pybytes()


def arrow_unpacked(data: bytes) -> list:
    """The completions of :func:`arrow_packed`'s bytes, as the search holds them."""
    import pyarrow as pa

    from dcmap_dist.search.branch import Branch

    table = pa.ipc.open_stream(data).read_next_batch()
    scalars = {name: table.column(name).to_numpy(zero_copy_only=False).tolist() for name in SCALARS}
    lists = {name: (table.column(name).values.to_numpy().tolist(), table.column(name).offsets.to_numpy().tolist())
             for name in LISTS}
    (comps, at_comps), (masks, at_items), (messages, _), (joins, at_joins), (shape, at_shape) = (
        lists[name] for name in LISTS)
    out = []
    for row, (layer, assigned, cost, link, estimate, bound, fixed, blocked) in enumerate(
            zip(*(scalars[name] for name in SCALARS))):
        start, end = at_items[row], at_items[row + 1]
        frontier = tuple(zip(masks[start:end], messages[start:end]))
        branch = Branch(layer, assigned, tuple(comps[at_comps[row]:at_comps[row + 1]]), frontier, cost,
                        tuple(joins[at_joins[row]:at_joins[row + 1]]), link, estimate, bound, fixed)
        key = (layer, frontier, tuple(shape[at_shape[row]:at_shape[row + 1]]), int.from_bytes(blocked, "little"))
        out.append((key, branch))
    return out


def fastest(passes: int, function, *args) -> tuple[float, object]:
    """The least CPU time of ``passes`` calls of ``function(*args)``, and its answer."""
    best = math.inf
    for _ in range(passes):
        clock = time.process_time()
        answer = function(*args)
        best = min(best, time.process_time() - clock)
    return best, answer


def formats(args: argparse.Namespace) -> None:
    import gc

    from dcmap_dist.run.ray.batches import packed, unpacked

    for label in args.networks.split(","):
        sent: list = []
        in_process(label, 2, args.iterations, sent)
        completions = [row for batch in sent for row in batch]
        expected = [(key, branch.fields()) for key, branch in completions]
        rows = []
        gc.disable()  # as when a worker reads a batch (worker.unpacked)
        try:
            for name, pack, unpack in (("marshal", lambda rows: packed(rows, True), unpacked),
                                       ("arrow", arrow_packed, arrow_unpacked)):
                pack_seconds, data = fastest(max(args.repeat, 5), pack, completions)
                unpack_seconds, back = fastest(max(args.repeat, 5), unpack, data)
                if [(key, branch.fields()) for key, branch in back] != expected:
                    raise SystemExit(f"{label}: the {name} batch did not read back what was sent")
                n = len(completions)
                rows.append({"network": label, "format": name, "completions": n, "batches": len(sent),
                             "pack_us": round(pack_seconds / n * 1e6, 2),
                             "unpack_us": round(unpack_seconds / n * 1e6, 2),
                             "bytes_per_completion": round(len(data) / n)})
        finally:
            gc.enable()
        for row in rows:
            print(row, flush=True)
        stamp(rows, args)
        append(RESULTS / "distributed-batch-formats.csv", rows)


def stamp(rows: list[dict], args: argparse.Namespace) -> None:
    command = "python scripts/benchmark_distributed.py " + " ".join(sys.argv[1:])
    day = datetime.date.today().isoformat()
    for row in rows:
        row["date"] = day
        row["command"] = command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("proof", "scaling", "latency", "overhead", "formats"))
    parser.add_argument("--networks", default="insurance,water,seagrass-2slices")
    parser.add_argument("--link-tables", default=None,
                        help="proof: sharded (the default), scaling: sharded,coordinator (the default)")
    parser.add_argument("--delays", type=lambda text: [int(d) for d in text.split(",")], default=[100, 1000, 3000],
                        help="latency: iterations a completed branch waits, besides 0")
    parser.add_argument("--time-limit", type=float, default=3600.0)
    parser.add_argument("--memory-limit", type=float, default=None,
                        help="proof: MiB per process (the serial search; each Ray worker)")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--workers", type=lambda text: [int(w) for w in text.split(",")], default=[1, 2],
                        help="proof: the Ray worker counts run after the serial search (1,2)")
    parser.add_argument("--capacity", action="store_true",
                        help="proof: also run two serial searches at once (the machine's two-core ceiling)")
    parser.add_argument("--iterations", type=int, default=200_000, help="overhead, formats: expansions per run")
    parser.add_argument("--repeat", type=int, default=1,
                        help="proof, overhead: run the serial search and the Ray runs this many times, alternating;"
                             " formats: passes over the batches (at least 5)")
    args = parser.parse_args()
    if args.link_tables is None:
        args.link_tables = "sharded,coordinator" if args.part == "scaling" else "sharded"
    os.nice(15 - os.nice(0))  # the serial run at the niceness Ray gives its workers (15): same footing
    if args.part in ("latency", "overhead", "formats"):  # no Ray
        {"latency": latency, "overhead": overhead, "formats": formats}[args.part](args)
        return
    import ray

    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    try:
        (proof if args.part == "proof" else scaling)(args)
    finally:
        distributed.disconnect()


if __name__ == "__main__":
    main()
