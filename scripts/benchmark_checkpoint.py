"""Checkpoint benchmark: size and write time of a checkpoint against the open branches
and link records it holds, the overhead of the default interval, and the time to resume.

For each network, a serial search runs for ``--seconds`` with ``--checkpoint`` and
``--checkpoint-every`` set so that several checkpoints are written as the state grows;
each write is timed (wall and CPU) with the table row counts and the generation's size
on disk. Then the search is resumed from the last checkpoint and the time until it is
searching again (reading the tables and rebuilding the state) is measured. The overhead
of the default interval (600 s) is the write time of the largest checkpoint divided by
600. Rows are appended to ``results/checkpoints.csv`` with the command and date.

    python scripts/benchmark_checkpoint.py --networks insurance,water,seagrass-2slices --seconds 60
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dcmap_dist import solve  # noqa: E402  (checkpointing imports pyarrow)
from dcmap_dist.checkpoint import session as checkpointing
from dcmap_dist.checkpoint.arrow import generations  # noqa: E402
from dcmap_dist.cost.user import load_cost  # noqa: E402
from dcmap_dist.search.problem import Problem  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from benchmark_distributed import append, network  # noqa: E402

DEFAULT_EVERY = checkpointing.CHECKPOINT_EVERY


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir())


def measure(label: str, seconds: float, every: float) -> list[dict]:
    net, order = network(label)
    writes: list[dict] = []
    real_save = checkpointing.Checkpointer.save

    def timed_save(self, parts, counters):
        wall, cpu = time.perf_counter(), time.process_time()
        real_save(self, parts, counters)
        newest = generations(self.directory)[0]
        import json
        rows = json.loads((newest / "metadata.json").read_text())["rows"]
        writes.append({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                       "bytes": folder_size(newest), **rows})

    checkpointing.Checkpointer.save = timed_save
    folder = Path(tempfile.mkdtemp(prefix="dcmap-bench-ck-"))
    try:
        run_wall = time.perf_counter()
        solve(net, order=order, time_limit=seconds, checkpoint=folder, checkpoint_every=every)
        run_wall = time.perf_counter() - run_wall
        checkpointing.Checkpointer.save = real_save
        start = time.perf_counter()
        resumed = checkpointing.Resume(folder)
        problems = [Problem(part, load_cost("dcmap", order=order), graph=net) for part in net.components()]
        resumed.verify(problems)
        finished = resumed.finished()
        state = resumed.in_progress(problems[len(finished)]) if len(finished) < len(problems) else None
        resume_seconds = time.perf_counter() - start
    finally:
        checkpointing.Checkpointer.save = real_save
        shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for k, w in enumerate(writes):
        rows.append({
            "network": label, "write": k + 1, "open_branches": w["branches"], "link_records": w["links"],
            "histories": w["histories"], "dominated": w["dominated"], "megabytes": round(w["bytes"] / 2**20, 2),
            "write_seconds": round(w["wall"], 3), "write_cpu_seconds": round(w["cpu"], 3),
            "overhead_at_default_interval": round(w["wall"] / DEFAULT_EVERY, 5),
            "run_seconds": round(run_wall, 1), "resume_seconds": round(resume_seconds, 2) if k == len(writes) - 1
            else "", "iterations_at_end": state.iterations if state else "",
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="insurance,water,seagrass-2slices")
    parser.add_argument("--seconds", type=float, default=60.0, help="search time per network")
    parser.add_argument("--every", type=float, default=15.0, help="seconds between checkpoints")
    args = parser.parse_args()
    command = "python scripts/benchmark_checkpoint.py " + " ".join(sys.argv[1:])
    for label in args.networks.split(","):
        rows = measure(label, args.seconds, args.every)
        for row in rows:
            row.update(date=datetime.date.today().isoformat(), command=command)
            print(row, flush=True)
        append(ROOT / "results" / "checkpoints.csv", rows)


if __name__ == "__main__":
    main()
