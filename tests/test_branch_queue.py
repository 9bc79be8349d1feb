"""Tests of search/branch_queue.py: the queue of open branches."""

from __future__ import annotations

import random

from dcmap_dist.search import branch_queue
from dcmap_dist.search.branch_queue import BranchQueue
from dcmap_dist.search.branch import Branch


def test_a_branch_queued_again_is_listed_and_popped_once():
    # popped by layer, a branch leaves its entry by cost behind; queued again (a limit
    # interrupted its expansion, and the search pushes it back before a checkpoint),
    # it must be saved once and expanded once, or a resumed search repeats its subtree
    queue = BranchQueue()
    branch = Branch(1, 0, (), (), 5.0, estimate=5.0, bound=5.0)
    other = Branch(2, 0, (), (), 7.0, estimate=7.0, bound=7.0)
    listed = [branch.fields(), other.fields()]  # a queued branch's own comps are the queue's codes
    queue.push(branch)
    queue.push(other)
    assert queue.pop(cheapest=False) is branch
    queue.push(branch)
    assert [b.fields() for b in queue.branches()] == listed and queue.size == 2
    assert [queue.pop(cheapest=True), queue.pop(cheapest=True), queue.pop(cheapest=True)] == [branch, other, None]
    assert queue.pop(cheapest=False) is None and queue.size == 0


def test_an_entry_left_behind_does_not_hold_its_branch():
    # a branch popped from one heap leaves its entry in the other: that entry must not keep
    # the branch (its components, trail and costs) alive until it comes up or is compacted
    queue = BranchQueue()
    branches = [Branch(layer, 0, (), (), float(g), estimate=float(g), bound=float(g))
                for layer in range(3) for g in range(10)]
    for branch in branches:
        queue.push(branch)
    popped = {id(queue.pop(cheapest=True)) for _ in range(12)} | {id(queue.pop(cheapest=False)) for _ in range(6)}
    held = [entry.branch for heap in (queue.by_cost, *queue.by_layer) for entry in heap]
    assert len(held) > queue.size  # entries were left behind
    assert not popped & {id(branch) for branch in held}
    assert queue.size == len(branches) - 18 == len({id(branch) for branch in held if branch is not None})


def test_the_queue_pops_as_one_sorted_list_would(monkeypatch):
    # random pushes (ties of g_hat included), pops of both kinds and branches pushed again;
    # a small floor makes the heaps compact often. The reference: the cheapest live branch
    # by (g_hat, push number), or by (layer, g_hat, push number)
    monkeypatch.setattr(branch_queue, "STALE_FLOOR", 8)
    rng = random.Random(7)
    for trial in range(20):
        queue = BranchQueue()
        live: dict[int, tuple] = {}  # id(branch) -> (layer, g_hat, push number, branch)
        pushes = 0
        popped: list[Branch] = []
        for _ in range(600):
            action = rng.random()
            if action < 0.5 or not live:
                if popped and rng.random() < 0.2:
                    branch = popped.pop(rng.randrange(len(popped)))
                else:
                    g_hat = float(rng.randrange(8))  # the cost names the branch (listed ones are copies)
                    branch = Branch(rng.randrange(5), 0, (), (), float(pushes), estimate=g_hat, bound=g_hat)
                if id(branch) in live:
                    continue
                pushes += 1
                queue.push(branch)
                live[id(branch)] = (branch.layer, branch.estimate, pushes, branch)
            else:
                cheapest = action < 0.75
                order = (lambda e: e[1:3]) if cheapest else (lambda e: e[:3])
                expected = min(live.values(), key=order)[3]
                got = queue.pop(cheapest)
                assert got is expected, trial
                del live[id(got)]
                popped.append(got)
            assert queue.size == len(live)
            by_cost = sorted(live.values(), key=lambda e: e[1:3])
            assert [b.cost for b in queue.branches()] == [e[3].cost for e in by_cost]
        while live:
            expected = min(live.values(), key=lambda e: e[:3])[3]
            assert queue.pop(cheapest=False) is expected
            del live[id(expected)]
        assert queue.pop(cheapest=True) is None and queue.pop(cheapest=False) is None


def test_queued_components_come_back_as_they_went_in(monkeypatch):
    # a queued branch holds its components as two-byte codes; popped or listed, it has
    # them back in order, and once the codes run out a branch keeps its tuple
    monkeypatch.setattr(branch_queue, "CODES_KEPT", 40)
    rng = random.Random(11)
    masks = [rng.getrandbits(90) for _ in range(60)]
    queue = BranchQueue()
    pushed = {}
    for i in range(200):
        comps = tuple(rng.sample(masks, rng.randrange(0, 12)))
        branch = Branch(i % 3, 0, comps, (), float(i), estimate=float(rng.randrange(50)), bound=float(i))
        pushed[id(branch)] = comps
        queue.push(branch)
    assert len(queue.codes._masks) == 40  # the codes ran out: some branches kept their tuples
    assert sorted(b.comps for b in queue.branches()) == sorted(pushed.values())
    popped = [queue.pop(cheapest=rng.random() < 0.5) for _ in range(200)]
    assert all(branch.comps == pushed[id(branch)] for branch in popped)
    assert queue.pop(cheapest=True) is None
