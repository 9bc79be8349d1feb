"""Tests of search/explorer.py's queue of open branches."""

from __future__ import annotations

from dcmap_dist.search.explorer import BranchQueue
from dcmap_dist.search.problem import Branch


def test_a_branch_queued_again_is_listed_and_popped_once():
    # popped by layer, a branch leaves its entry by cost behind; queued again (a limit
    # interrupted its expansion, and the search pushes it back before a checkpoint),
    # it must be saved once and expanded once, or a resumed search repeats its subtree
    queue = BranchQueue()
    branch = Branch(1, 0, (), (), 5.0, estimate=5.0, bound=5.0)
    other = Branch(2, 0, (), (), 7.0, estimate=7.0, bound=7.0)
    queue.push(branch)
    queue.push(other)
    assert queue.pop(cheapest=False) is branch
    queue.push(branch)
    assert queue.branches() == [branch, other] and queue.size == 2
    assert [queue.pop(cheapest=True), queue.pop(cheapest=True), queue.pop(cheapest=True)] == [branch, other, None]
    assert queue.pop(cheapest=False) is None and queue.size == 0
