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
second, the coordinator's busy fraction, each worker's idle fraction, steps, the peak of
the processes' memory together beside the serial search's peak.

``latency``: why a link table held by one process costs work, without Ray: the serial
loop in this process, except that a branch that completes a layer and goes on waits
``--delays`` iterations before it enters the queue (0, then each delay), as it waits for
a central table's answer before a worker can take it further; iterations to proof, to
the first optimal mapping, and their ratio to no delay.

``overhead``: the distributed code without Ray: the serial search against two sharded
engines (native where built) in this one process that take 100 ms turns and exchange
batches (search/batches.py), for ``--iterations`` expansions each, alternating ``--repeat``
times; CPU per expansion and its ratio to the serial engine's, the time spent writing
batches and receiving them (reading and settling), per arrival. What remains between
this and a Ray run is what Ray, the coordinator and the second core add.

``formats``: what a crossing adds per arrival, on the batches two native engines of
``overhead`` send in their first ``--iterations`` expansions: writing (timed in that run),
reading into a fresh engine's values without settling, reading and settling, and the
Python reference's encode and decode; bytes per arrival (:func:`formats`). Needs the
native engine.

``shares``: a worker's share of a snapshot as the engine's one buffer (``take_share``,
``load_share``) against its export pickled, after ``--iterations`` expansions
(:func:`shares`).

Rows go to ``results/distributed-proof.csv``, ``results/distributed-workers.csv``,
``results/distributed-latency.csv``, ``results/distributed-worker-overhead.csv``,
``results/distributed-crossing.csv`` and ``results/distributed-shares.csv`` (appended,
with the command and date).

    python scripts/benchmark_distributed.py proof --networks insurance,water,seagrass-2slices
    python scripts/benchmark_distributed.py proof --networks insurance --workers 2 --repeat 3
    python scripts/benchmark_distributed.py proof --networks seagrass-2slices --workers 2 --link-tables sharded,coordinator
    python scripts/benchmark_distributed.py scaling --networks seagrass-1slice,child
    python scripts/benchmark_distributed.py latency --networks seagrass-2slices --delays 100,1000,3000
    python scripts/benchmark_distributed.py overhead --networks insurance --iterations 200000 --repeat 3
    python scripts/benchmark_distributed.py formats --networks water,hepar2 --iterations 200000
    python scripts/benchmark_distributed.py shares --networks water,hepar2 --iterations 500000
"""

from __future__ import annotations

import argparse
import collections
import datetime
import math
import multiprocessing
import os
import pickle
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
from dcmap_dist.run.ray import cluster, distributed  # noqa: E402
from dcmap_dist.run.ray.protocol import RayOptions  # noqa: E402

LISTED = 100_000  # optimal mappings listed at most (hepar2's best cost has 53 million tied ones)
ALPHA, SEED = 0.6, 0  # what a forced W = 1 Ray run (and the pool's warm-up) searches with: solve()'s defaults
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

    distributed.distributed_search(Problem(load_network("asia"), DcmapCost(), "merge"), ALPHA, SEED,
                                   RayOptions(workers=workers), Limits())


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
    outcome = distributed.distributed_search(problem, ALPHA, SEED, RayOptions(workers=1, link_table=link_table),
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
            for workers in args.workers:
                got = run_ray(label, workers, args.time_limit, table)
                s = got["stats"]
                elapsed = s["elapsed"]
                idle = [round(1 - busy / elapsed, 3) for busy in s["worker_busy"]]
                loads = s["worker_iterations"]
                row = {
                    "network": label, "link_table": table, "workers": workers, "proven": got["proven"],
                    "serial_iterations": serial["iterations"], "iterations": got["iterations"],
                    "work": round(got["iterations"] / max(1, serial["iterations"]), 3),
                    "load_min": round(min(loads) * workers / max(1, sum(loads)), 3),
                    "load_max": round(max(loads) * workers / max(1, sum(loads)), 3),
                    "reports": s["sent"], "reports_per_expansion": round(s["sent"] / max(1, got["iterations"]), 3),
                    "bytes_per_report": round(s["bytes"] / max(1, s["sent"]), 1),
                    "reports_per_second": round(s["sent"] / elapsed), "bytes_per_second": round(s["bytes"] / elapsed),
                    "coordinator_busy": round(s["coordinator_busy"] / elapsed, 3),
                    "coordinator_cpu_share": round(s["coordinator_cpu"] / elapsed, 3),
                    "coordinator_memory_mb": round(s["coordinator_memory_mb"]),
                    "idle_min": min(idle), "idle_max": max(idle), "steps": s["steps"],
                    "search_seconds": round(elapsed, 2), "wall_seconds": got["wall_seconds"],
                    "cpu_seconds": got["cpu_seconds"], "peak_memory_mb": got["peak_memory_mb"],
                    "serial_peak_memory_mb": serial["peak_memory_mb"],
                }
                rows.append(row)
                print(row, flush=True)
        stamp(rows, args)
        append(RESULTS / "distributed-workers.csv", rows)


def overhead(args: argparse.Namespace) -> None:
    for label in args.networks.split(","):
        for _ in range(args.repeat):
            rows = [in_process(label, 1, args.iterations), in_process(label, 2, args.iterations)]
            for row in rows:
                row["per_expansion_ratio"] = round(row["us_per_expansion"] / rows[0]["us_per_expansion"], 3)
                print(row, flush=True)
            stamp(rows, args)
            append(RESULTS / "distributed-worker-overhead.csv", rows)


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
    """``iterations`` expansions of ``label`` by ``shards`` engines (the native one where it
    is built: :func:`~dcmap_dist.search.engine.new_engine`) in this process, each owning
    its shard of the link table (one: the serial search), taking 100 ms turns and
    exchanging batches between turns as the workers do (each batch added to ``sent`` if
    given); the CPU of writing the batches (``take_batches``) and of receiving them
    (``receive_batch``: reading and settling)."""
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.limits import Limits, Stopwatch
    from dcmap_dist.search.engine import new_engine
    from dcmap_dist.search.problem import Problem

    net, order = network(label)
    problems = [Problem(net, DcmapCost(order), "merge") for _ in range(shards)]
    engines = [new_engine(problems[i], 0.6, i, i + 1, i, shards) for i in range(shards)]
    root = problems[0].root()
    engines[0].receive([(problems[0].link_key(root), root)])
    inbox: list[list[bytes]] = [[] for _ in range(shards)]
    packing = receiving = 0.0
    arrived = 0
    cpu = time.process_time()
    while sum(e.iterations for e in engines) < iterations:
        idle = True
        for i, engine in enumerate(engines):
            with engine.collector_paused():  # as in Worker.step
                clock = time.process_time()
                for batch in inbox[i]:
                    arrived += engine.receive_batch(batch)
                receiving += time.process_time() - clock
                inbox[i] = []
                stop = engine.step(Stopwatch(Limits()), until=time.perf_counter() + 0.1, max_iterations=iterations)
                clock = time.process_time()
                out = engine.take_batches(shards) if shards > 1 else []
                packing += time.process_time() - clock
                for j, batch in enumerate(out):
                    if batch:
                        inbox[j].append(batch)
                        if sent is not None:
                            sent.append((j, batch))
            idle = idle and stop == "idle"
            g_min = min(e.g_min for e in engines)
            for other in engines:
                other.hear(g_min)
        if idle and not any(inbox):
            break
    cpu = time.process_time() - cpu
    done = sum(e.iterations for e in engines)
    return {"network": label, "explorers": shards, "engine": type(engines[0]).__name__, "iterations": done,
            "cpu_seconds": round(cpu, 2), "us_per_expansion": round(cpu / done * 1e6, 2),
            "packing_seconds": round(packing, 3), "receiving_seconds": round(receiving, 3), "arrivals": arrived,
            "us_per_arrival": round((packing + receiving) / arrived * 1e6, 3) if arrived else None}


def fastest(passes: int, function, *args) -> tuple[float, object]:
    """The least CPU time of ``passes`` calls of ``function(*args)``, and its answer."""
    best = math.inf
    for _ in range(passes):
        clock = time.process_time()
        answer = function(*args)
        best = min(best, time.process_time() - clock)
    return best, answer


def formats(args: argparse.Namespace) -> None:
    """What a crossing adds, per arrival, on the batches two engines of ``overhead`` send in
    their first ``--iterations`` expansions: writing them (``take_batches``, timed in the
    run), reading them into a fresh engine's values without settling (the native reader),
    reading and settling them (what a worker does with them; settling is the serial
    engine's own work), and the Python reference's encode and decode of the same arrivals;
    bytes per arrival. The fastest of ``--repeat`` (at least 5) passes."""
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.search import batches
    from dcmap_dist.search.engine import new_engine
    from dcmap_dist.search.problem import Problem

    for label in args.networks.split(","):
        sent: list = []
        run = in_process(label, 2, args.iterations, sent)
        n = sum(batches.rows_in(batch) for _, batch in sent)
        net, order = network(label)

        def fresh(j: int):
            return new_engine(Problem(net, DcmapCost(order), "merge"), 0.6, j, j + 1, j, 2)

        def received(settle: bool) -> int:
            engines = [fresh(0), fresh(1)]
            return sum(engines[j].receive_batch(batch, settle) for j, batch in sent)

        passes = max(args.repeat, 5)
        read, count = fastest(passes, received, False)
        settled, _ = fastest(passes, received, True)
        make, _ = fastest(passes, lambda: [fresh(0), fresh(1)])  # the engines' own making, taken off
        arrivals = [(j, batches.decode(batch, len(net.nodes))) for j, batch in sent]
        encode, written = fastest(passes, lambda: [batches.encode(a, len(net.nodes), True) for _, a in arrivals])
        decode, _ = fastest(passes, lambda: [batches.decode(batch, len(net.nodes)) for _, batch in sent])
        if count != n or written != [batch for _, batch in sent]:
            raise SystemExit(f"{label}: the batches did not read back what was sent")
        row = {"network": label, "engine": run["engine"], "arrivals": n, "batches": len(sent),
               "write_us": round(run["packing_seconds"] / n * 1e6, 3),
               "read_us": round((read - make) / n * 1e6, 3), "read_settle_us": round((settled - make) / n * 1e6, 3),
               "python_encode_us": round(encode / n * 1e6, 2), "python_decode_us": round(decode / n * 1e6, 2),
               "bytes_per_arrival": round(sum(len(batch) for _, batch in sent) / n, 1)}
        row["crossing_us"] = round(row["write_us"] + row["read_us"], 3)
        print(row, flush=True)
        stamp([row], args)
        append(RESULTS / "distributed-crossing.csv", [row])


def shares(args: argparse.Namespace) -> None:
    """A worker's share of a snapshot as its engine's one buffer against its export pickled
    (what a snapshot held before): after ``--iterations`` expansions of one engine that
    holds the whole link table (the serial search's share), the seconds to take it (``take_share``; ``export`` and ``pickle.dumps``) and
    to take it back into a fresh engine (``load_share``; ``pickle.loads`` and ``load``,
    the engine's own making taken off), and its bytes. The fastest of ``--repeat`` passes
    (at least 3)."""
    from dcmap_dist.cost.dcmap import DcmapCost
    from dcmap_dist.limits import Limits, Stopwatch
    from dcmap_dist.search.engine import new_engine
    from dcmap_dist.search.problem import Problem

    for label in args.networks.split(","):
        net, order = network(label)

        def fresh():
            return new_engine(Problem(net, DcmapCost(order), "merge"), 0.6, 0, 0)

        engine = fresh()
        root = engine.problem.root()
        engine.receive([(engine.problem.link_key(root), root)])
        engine.step(Stopwatch(Limits()), max_iterations=args.iterations)
        passes = max(args.repeat, 3)
        take, share = fastest(passes, engine.take_share)
        export, pickled = fastest(passes, lambda: pickle.dumps(engine.export(), protocol=5))
        make, _ = fastest(passes, fresh)
        load, _ = fastest(passes, lambda: fresh().load_share(share))
        unpickle, _ = fastest(passes, lambda: fresh().load(pickle.loads(pickled)))
        row = {"network": label, "engine": type(engine).__name__, "iterations": engine.iterations,
               "items": engine.open_count() + engine.link_records, "take_share_s": round(take, 4),
               "export_pickle_s": round(export, 4), "load_share_s": round(load - make, 4),
               "unpickle_load_s": round(unpickle - make, 4), "share_mb": round(len(share) / 2**20, 2),
               "pickle_mb": round(len(pickled) / 2**20, 2)}
        print(row, flush=True)
        stamp([row], args)
        append(RESULTS / "distributed-shares.csv", [row])


FIXED_CODE = """
import json, sys, time
from dcmap_dist import load_network, solve
from dcmap_dist.run.ray import cluster
variant = sys.argv[1]
start = time.perf_counter()
if variant == "solve":
    solve(load_network("asia"), workers=2)
    print(json.dumps({"solve": time.perf_counter() - start}))
    raise SystemExit
import ray
if variant == "lean":
    cluster.connect("local", 2)
else:
    ray.init(address="local", include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             configure_logging=False, num_cpus=2)
started = time.perf_counter()
solve(load_network("asia"), workers=2)  # the pool's actors start, a search of asia runs
searched = time.perf_counter()
cluster.disconnect()
print(json.dumps({"start": started - start, "pool_and_search": searched - started,
                  "stop": time.perf_counter() - searched}))
"""


def fixed(args: argparse.Namespace) -> None:
    """Ray's fixed cost for a local run of two workers, each figure in a fresh process, the
    variants alternating ``--repeat`` times: Ray's start as ``ray.init`` does it and as
    :func:`~dcmap_dist.run.ray.cluster.connect` does it (lean: no API server), the pool's
    start with a search of asia, Ray's stop; and ``solve(asia, workers=2)`` whole, whose
    stop overlaps the listing, against asia's serial solve."""
    import json
    import subprocess

    def measured(variant: str) -> dict:
        out = subprocess.run([sys.executable, "-c", FIXED_CODE, variant], capture_output=True, text=True,
                             check=True, cwd=ROOT).stdout
        return json.loads(out.strip().splitlines()[-1])

    figures: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(args.repeat):
        for variant in ("plain", "lean"):
            for name, seconds in measured(variant).items():
                figures[f"{variant} {name}"].append(seconds)
        figures["solve asia on 2 workers"].append(measured("solve")["solve"])
        clock = time.perf_counter()
        solve(load_network("asia"))
        figures["solve asia serially"].append(time.perf_counter() - clock)
    rows = [{"figure": name, "median_seconds": round(statistics.median(values), 2),
             "seconds": " ".join(f"{v:.2f}" for v in values)} for name, values in figures.items()]
    for row in rows:
        print(row, flush=True)
    stamp(rows, args)
    append(RESULTS / "ray-fixed-cost.csv", rows)


def stamp(rows: list[dict], args: argparse.Namespace) -> None:
    command = "python scripts/benchmark_distributed.py " + " ".join(sys.argv[1:])
    day = datetime.date.today().isoformat()
    for row in rows:
        row["date"] = day
        row["command"] = command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("proof", "scaling", "latency", "overhead", "formats", "shares", "fixed"))
    parser.add_argument("--networks", default="insurance,water,seagrass-2slices")
    parser.add_argument("--link-tables", default=None,
                        help="proof: sharded (the default), scaling: sharded,coordinator (the default)")
    parser.add_argument("--delays", type=lambda text: [int(d) for d in text.split(",")], default=[100, 1000, 3000],
                        help="latency: iterations a completed branch waits, besides 0")
    parser.add_argument("--time-limit", type=float, default=3600.0)
    parser.add_argument("--memory-limit", type=float, default=None,
                        help="proof: MiB per process (the serial search; each Ray worker)")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--workers", type=lambda text: [int(w) for w in text.split(",")], default=None,
                        help="proof: the Ray worker counts run after the serial search (1,2); scaling: 1,2,4,8")
    parser.add_argument("--capacity", action="store_true",
                        help="proof: also run two serial searches at once (the machine's two-core ceiling)")
    parser.add_argument("--iterations", type=int, default=200_000,
                        help="overhead, formats: expansions per run; shares: before the share is taken")
    parser.add_argument("--repeat", type=int, default=1,
                        help="proof, overhead: run the serial search and the Ray runs this many times, alternating;"
                             " formats: passes over the batches (at least 5)")
    args = parser.parse_args()
    if args.workers is None:
        args.workers = [1, 2, 4, 8] if args.part == "scaling" else [1, 2]
    if args.link_tables is None:
        args.link_tables = "sharded,coordinator" if args.part == "scaling" else "sharded"
    os.nice(15 - os.nice(0))  # the serial run at the niceness Ray gives its workers (15): same footing
    if args.part in ("latency", "overhead", "formats", "shares", "fixed"):  # no Ray (fixed: in fresh processes)
        {"latency": latency, "overhead": overhead, "formats": formats, "shares": shares, "fixed": fixed}[args.part](args)
        return
    import ray

    # scaling: Ray offers a CPU per worker (more than the machine's: they share its cores)
    cpus = max(args.cpus, *args.workers) if args.part == "scaling" else args.cpus
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        (proof if args.part == "proof" else scaling)(args)
    finally:
        cluster.disconnect()


if __name__ == "__main__":
    main()
