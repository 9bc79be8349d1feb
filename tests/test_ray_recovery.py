"""What a lost worker costs (issue 50), on the session's local Ray: snapshots are taken
as the search goes, at intervals set from their measured cost, so a worker killed late
in a run without ``--checkpoint`` undoes a bounded share of it (before, the only
snapshot was often the empty one of the start: everything was done again); the
recovery says how many iterations it undid. (Fewer workers going on from the
snapshot's state re-homed over them: tests/test_ray_node_faults.py, where a lost
node leaves no CPU for a replacement.)"""

from __future__ import annotations

import os
import signal

import pytest

from dcmap_dist.io.load import load_network
from dcmap_dist.progress import Progress
from dcmap_dist.run.ray.protocol import WorkerLostWarning
from dcmap_dist.run.ray.snapshots import LEAST_SNAPSHOT_SECONDS, ROLLBACK_SHARE, SNAPSHOT_SPACING, Snapshots
from dcmap_dist.solve import solve
from shared_networks import shared

pytestmark = pytest.mark.usefixtures("ray_session")


def kill_a_worker() -> int:
    import ray

    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a["namespace"] == "dcmap" and a["name"].startswith("dcmap-worker-")]
    pid = ray.get(ray.get_actor(names[-1], namespace="dcmap").pid.remote())
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.slow
def test_a_worker_killed_late_without_a_checkpoint_undoes_a_bounded_share(recwarn):
    """hepar2 on two workers, no checkpoint, default snapshots: a worker killed after
    seven tenths of an undisturbed two-worker run's iterations (about 10 s into a
    search of 15 s). The recovery undoes at most the work the snapshot interval
    allows: 10% of the search so far, or 20 times the longest snapshot's duration
    when snapshots cost more (plus a turn of 1 s, when the interval is looked at);
    before, the search went back to iteration 0 (only the start's empty snapshot was
    taken). Water, this test's network before, is proven by native workers in 2 to 5
    s, before a snapshot's interval has passed and, at three quarters of its
    iterations, at its last progress report: the kill found the search ended. The
    result is exact: the undisturbed run's cost, proven."""
    network = load_network(shared("hepar2.bif.gz"))
    undisturbed = solve(network, max_solutions=1, workers=2)
    at = []

    def kill_late(stats: Progress) -> None:
        if not at and stats.iterations >= 0.7 * undisturbed.iterations:
            at.append((stats.iterations, stats.elapsed_seconds))
            kill_a_worker()

    result = solve(network, max_solutions=1, workers=2, on_progress=kill_late)
    assert at, "the run ended before a worker could be killed"
    stats = result.components[0]["distributed"]
    assert result.optimal_cost == pytest.approx(undisturbed.optimal_cost, rel=1e-9) and result.proven_optimal
    assert stats["recoveries"] == 1 and stats["workers_lost"] == 0
    iterations, elapsed = at[0]
    rolled = stats["rolled_back"]
    snapshot = stats["snapshot_longest_seconds"]
    allowed = max(ROLLBACK_SHARE * elapsed, SNAPSHOT_SPACING * snapshot, LEAST_SNAPSHOT_SECONDS) + 1.0
    rate = iterations / elapsed
    print(f"killed at {iterations:,} iterations ({elapsed:.1f} s); {rolled:,} rolled back "
          f"({rolled / iterations:.1%}, {rolled / rate:.1f} s of work); {stats['snapshots']} snapshots, the "
          f"longest {snapshot * 1000:.0f} ms; allowed {allowed:.1f} s of work")
    assert 0 < rolled <= rate * allowed, (rolled, rate * allowed)
    assert rolled < iterations  # not back to the start
    said = [str(w.message) for w in recwarn if issubclass(w.category, WorkerLostWarning)]
    assert len(said) == 1 and f"({rolled:,} iterations to do again)" in said[0], said


def test_the_snapshot_interval_follows_the_measured_cost():
    """10% of the search so far, at most ``every``, at least 0.5 s; at least 20 times
    the last snapshot's measured duration, scaled to the items held now from a snapshot
    of 1,000 items or more (a small one's is taken as it is: mostly fixed costs)."""
    snaps = Snapshots(30.0)
    assert snaps.interval(100.0, 10) == pytest.approx(10.0)
    assert snaps.interval(1000.0, 10) == pytest.approx(30.0)
    assert snaps.interval(1.0, 10) == pytest.approx(0.5)
    snaps.took, snaps.size = 0.2, 10  # a small snapshot: not scaled
    assert snaps.interval(100.0, 1_000_000) == pytest.approx(10.0)
    snaps.took, snaps.size = 0.2, 100_000  # 20 x 0.2 s x 5
    assert snaps.interval(100.0, 500_000) == pytest.approx(20.0)
    assert Snapshots(None).due(1e9, 1) is False


def test_what_ends_on_the_lost_ray_path():
    """The driver ends a search as a lost Ray (exit 5, the best result and a checkpoint of
    the last snapshot) for WorkersLost and Ray's own errors, also when they come wrapped
    in the coordinator's task error (before, a worker's RayActorError raised in the
    coordinator was an internal error); a user cost's error or a bug stays an error."""
    import ray

    from dcmap_dist.run.ray.crew import WorkerSilent
    from dcmap_dist.run.ray.distributed import is_lost
    from dcmap_dist.run.ray.protocol import WorkersLost

    def wrapped(cause: Exception) -> ray.exceptions.RayTaskError:
        return ray.exceptions.RayTaskError("Coordinator.advance", "traceback", cause)

    assert is_lost(WorkersLost("every worker was lost"))
    assert is_lost(wrapped(WorkersLost("every worker was lost")))
    assert is_lost(wrapped(ray.exceptions.ActorDiedError()))
    assert is_lost(wrapped(WorkerSilent("a worker has not answered for 20 s")))
    assert is_lost(ray.exceptions.ActorDiedError())
    assert not is_lost(wrapped(ValueError("a user's cost failed")))
    assert not is_lost(wrapped(wrapped(ValueError("a user's cost failed, in a worker"))))
    assert not is_lost(ValueError("a bug"))


def test_a_pool_that_cannot_replace_its_lost_workers_keeps_nothing_of_its_last_search(monkeypatch):
    """A pool whose workers were all lost in an interrupted search, asked for a new one
    with no CPU free for a replacement: the replacements wait their full time (the old
    search's interruption is not this one's), and the WorkersLost that ends it leaves no
    snapshot of the old search to be saved as this one's checkpoint."""
    from dcmap_dist.limits import Limits, StopReason
    from dcmap_dist.run.ray import coordinator as coordinator_module
    from dcmap_dist.run.ray.protocol import RayOptions, WorkersLost

    monkeypatch.setattr(coordinator_module.Crew, "spawn", lambda self, node=None: object())
    coordinator = coordinator_module.Coordinator(2, 1.0)
    coordinator.crew.actors = []  # lost in the last search
    coordinator.search.stop, coordinator.search.halted = StopReason.INTERRUPTED, 1.0
    coordinator.search.snapshots.latest = object()  # the last search's snapshot
    waits = []

    def replacements(wanted, suspects):
        waits.append(coordinator.search.interrupted())
        return []

    monkeypatch.setattr(coordinator.recovery, "replacements", replacements)
    with pytest.raises(WorkersLost):
        coordinator.begin(None, RayOptions(workers=2), Limits(), 100.0)
    assert waits == [None]
    assert coordinator.kept() is None
