"""The lean dominance key is exact, and each of its parts is needed.

Weakening the key (dropping the pairwise merge blocks, or the reachable outside
ancestors), at completed layers or only inside a layer, must make the search disagree
with brute force on some seeded random graph; the real key must agree on all of them.
This shows the exactness tests can fail.
"""

from __future__ import annotations

import ast
import importlib
import os
import pickle
import subprocess
import sys
import zlib
from collections import Counter

import pytest

from dcmap_dist.checkpoint.codec import batch_keys
from dcmap_dist.checkpoint.write import Messages, link_batch
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import FunctionCost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.model.network import Network
from dcmap_dist.search import explorer as explorer_module
from dcmap_dist.search.audit import AuditError
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.histories import (HistoryTable, first_history, histories_of, history, history_fields,
                                         history_parts, history_record, record_id, trail_count)
from dcmap_dist.search.linking import CHEAPER, NEW, TIE, WORSE, LinkShard, route
from dcmap_dist.search.problem import Problem
from dcmap_dist.solve import solve
from search_costs import random_network
from search_helpers import walk_tree


def small_int_cost(ctx):
    """Costs 1..3 from a stable hash of the context: many mappings tie."""
    text = repr((sorted(ctx.nodes), [(sorted(c.nodes), c.same_cluster) for c in ctx.children]))
    return 1 + zlib.crc32(text.encode()) % 3


MODELS = [DcmapCost("cpt"), FunctionCost(small_int_cost)]


def optimal_sets(network: Network, model, scheme: str, method: str, key: str = "lean") -> tuple[float, set]:
    result = solve(network, model, scheme, method, link_key=key)
    return round(result.optimal_cost, 6), {frozenset(map(frozenset, s.clusters)) for s in result.solutions}


def count_disagreements(graphs: int, seed: int, key: str = "lean") -> int:
    """Cases where the search and brute force differ, or the search's reported mappings
    fail the audit (an infeasible or mispriced mapping: search/audit.py)."""
    wrong = 0
    for k in range(graphs):
        network = random_network(seed + k)
        for model in MODELS:
            for scheme in ("merge", "single"):
                try:
                    differ = optimal_sets(network, model, scheme, "dcmap", key) != optimal_sets(
                        network, model, scheme, "brute")
                except AuditError:
                    differ = True
                wrong += differ
    return wrong


def test_lean_key_agrees_with_brute_force(monkeypatch, python_engine):
    settled = Counter()  # (inside a layer, outcome) -> arrivals

    def counting(shard, key, *args):
        outcome = settle(shard, key, *args)
        settled[isinstance(key[0], tuple), outcome[0]] += 1
        return outcome

    settle = LinkShard.settle
    monkeypatch.setattr(LinkShard, "settle", counting)
    assert count_disagreements(40, seed=2024) == 0
    # the graphs link inside layers, and branches stop there (tied or worse)
    assert settled[True, "tie"] > 20 and settled[True, "worse"] > 5, settled


@pytest.mark.slow
def test_linking_inside_layers_changes_no_result_on_larger_graphs(monkeypatch, python_engine):
    """On graphs too large for brute force (12 to 18 nodes, where many more branches
    stop inside a layer), the search gives the same optimum, optimal partitions and
    count with and without linking inside layers (the search without it agrees with
    brute force above)."""
    settled = Counter()

    def counting(shard, key, *args):
        outcome = settle(shard, key, *args)
        settled[isinstance(key[0], tuple), outcome[0]] += 1
        return outcome

    def results() -> list:
        got = []
        for k in range(20):
            network = random_network(7000 + k, 12, 18)
            for model in MODELS:
                for scheme in ("merge", "single"):
                    result = solve(network, model, scheme)
                    listed = {frozenset(map(frozenset, s.clusters)) for s in result.solutions}
                    got.append((round(result.optimal_cost, 6), result.solution_count,
                                listed if result.solutions_complete else None))  # else the first 10,000
        return got

    settle = LinkShard.settle
    monkeypatch.setattr(LinkShard, "settle", counting)
    for trials_skipped in ("INSIDE_REST", "INSIDE_REST_MOST"):  # link every branch inside a layer
        monkeypatch.setattr(explorer_module, trials_skipped, 0)
    linked = results()
    assert settled[True, "tie"] > 1000 and settled[True, "worse"] > 100, settled  # 7,790 and 181 (2026-11-29)
    monkeypatch.setattr(Explorer, "_link_inside", lambda explorer, branch: branch)
    assert results() == linked


def test_full_key_agrees_with_brute_force():
    assert count_disagreements(40, seed=4048, key="full") == 0


@pytest.mark.slow
@pytest.mark.parametrize("where", ["everywhere", "inside a layer"])
@pytest.mark.parametrize("weakening", ["no merge blocks", "no outside ancestors"])
def test_weakened_lean_key_is_caught(monkeypatch, weakening, where, python_engine):
    # a subclass, since the compiled Problem's methods cannot be replaced on the class
    class Weakened(Problem):
        def link_key(self, branch):
            head, items, shape, blocked = super().link_key(branch)
            if where == "inside a layer" and branch.layer_done:
                return head, items, shape, blocked
            if weakening == "no merge blocks":
                return head, items, shape, 0
            unions = shape[::2]  # each part's outside ancestors dropped
            return head, items, tuple(x for union in unions for x in (union, 0)), blocked

    monkeypatch.setattr(importlib.import_module("dcmap_dist.solve"), "Problem", Weakened)
    assert count_disagreements(40, seed=2024) > 0


@pytest.mark.parametrize("key", ["lean", "full"])
def test_route_is_the_same_in_every_process_and_spreads_keys(tmp_path, key):
    """``route`` reads only a key's ints, so a process with another string-hash seed sends
    every key to the same shard (else two owners would settle one key); and it spreads
    the keys of a search evenly over the shards."""
    keys = []
    for seed in range(20):
        network = random_network(seed, 9, 10)
        problem = Problem(network, DcmapCost(), "merge", link_key=key)
        explorer = Explorer(problem, 0.6, 0, owner=1)
        root = problem.root()
        explorer.receive([(problem.link_key(root), root)])
        explorer.step(Stopwatch(Limits()), max_iterations=2000)
        keys += list(explorer.shard.entries)
    assert len(keys) > 600
    owners = [route(k, 4) for k in keys]
    (tmp_path / "keys.pickle").write_bytes(pickle.dumps(keys))
    script = ("import pickle, sys; from dcmap_dist.search.linking import route; "
              "keys = pickle.load(open(sys.argv[1], 'rb')); print([route(k, 4) for k in keys])")
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        got = subprocess.run([sys.executable, "-c", script, str(tmp_path / "keys.pickle")], env=env,
                             capture_output=True, text=True, check=True).stdout
        assert ast.literal_eval(got) == owners
    shares = [owners.count(shard) / len(owners) for shard in range(4)]
    assert min(shares) > 0.15 and max(shares) < 0.35, shares


@pytest.mark.parametrize("key", ["lean", "full"])
@pytest.mark.parametrize("model", ["dcmap", "tuples"], ids=["codes", "user-messages"])
def test_a_key_reads_back_from_its_checkpoint_columns_as_itself(key, model):
    # checkpoints store keys in named columns (checkpoint/write.py, checkpoint/codec.py): every
    # key of a search, inside a layer and at completed ones (whose cluster-layers are the
    # branch's frontier itself, sorted), must read back equal, or a resumed search would link less
    cost = DcmapCost() if model == "dcmap" else FunctionCost(lambda ctx: (small_int_cost(ctx), tuple(ctx.nodes)))
    seen = Counter()
    for seed in range(8):
        problem = Problem(random_network(seed, 9, 10), cost, "merge", link_key=key)
        explorer = Explorer(problem, 0.6, 0, owner=1)
        root = problem.root()
        explorer.receive([(problem.link_key(root), root)])
        explorer.step(Stopwatch(Limits()), max_iterations=1500)
        messages = Messages(lambda held: held)
        entries = list(explorer.shard.entries.items())
        batch = link_batch(7, entries, key, messages)
        numbers = {number: message for message, number in messages.ids.items()}
        assert batch_keys(batch, key, numbers.__getitem__) == [stored for stored, _ in entries]
        assert batch.select(["component", "best", "record"]).to_pylist() == [
            {"component": 7, "best": entry.best, "record": entry.record} for _, entry in entries]
        for stored, _ in entries:
            inside = isinstance(stored[0], tuple)
            items = stored[2 if key == "full" else 1]
            assert inside or list(items) == sorted(items)
            seen[inside] += 1
    assert seen[True] > 100 and seen[False] > 100, seen


@pytest.mark.parametrize("key", ["lean", "full"])
def test_a_completed_layers_key_holds_the_branchs_own_frontier(key):
    # the key shares the branch's frontier tuple (itself shared through the bound's memo:
    # docs/search.md, "The search's state in memory"), and its shape is one object per value
    problem = Problem(random_network(3, 7, 9), DcmapCost(), "merge", link_key=key)
    records, _ = walk_tree(problem)
    done = [branch for branch, _, _ in records if branch.layer_done and branch.layer > 0]
    keys = [problem.link_key(branch) for branch in done]
    assert len(done) > 50
    assert all(stored[2 if key == "full" else 1] is branch.frontier for stored, branch in zip(keys, done))
    if key == "lean":  # shapes, and the masks in them, are one object per value
        shapes = [stored[2] for stored in keys]
        assert len({id(x) for x in shapes}) == len(set(shapes)) < len(shapes)
        masks = [x for shape in set(shapes) for x in shape]
        assert len({id(x) for x in masks}) == len(set(masks)) < len(masks)
        kept = problem.keys._tuples  # each shape once, as its own key
        assert all(kept[shape] is shape for shape in shapes) and all(key is value for key, value in kept.items())
        inside = [problem.link_key(branch) for branch, _, _ in records if not branch.layer_done]
        assert len(inside) > 20
        for part in (0, 1, 3):  # inside a layer, its head, its cluster-layers and its blocked pairs too
            values = [stored[part] for stored in inside]
            assert len({id(x) for x in values}) == len(set(values)) < len(values)


def test_a_records_histories_are_kept_in_order_and_read_back():
    # a record's histories are one run of bytes (docs/search.md, "Tied histories"): every
    # tie is kept, in order, with its iteration and trail (masks of any width, none too),
    # a copy handed out stays as it was, and a cheaper arrival starts a new record
    shard = LinkShard(1)
    trails = [(None,), (None, 1 << 70, 5), (None, 0b1011), (None, 3, (1 << 200) - 1, 1)]
    assert shard.settle(("key",), 4.0, trails[0], 10)[0] == NEW
    record = shard.entries[("key",)].record
    copy = shard.lookup({record})[record]
    for iteration, trail in enumerate(trails[1:], 11):
        assert shard.settle(("key",), 4.0, trail, iteration) == (TIE, record, [])
    assert shard.settle(("key",), 4.5, (None, 9), 20) == (WORSE, record, [])
    assert [history_fields(data) for data in histories_of(shard.histories[record])] == list(enumerate(trails, 10))
    assert histories_of(copy) == [first_history(shard.histories[record])]
    assert shard.lookup({record, 12345}) == {record: shard.histories[record]}  # only the records it holds
    assert history_fields(first_history(shard.histories[record])) == (10, trails[0])
    outcome, newer, dominated = shard.settle(("key",), 3.0, (None, 2), 30)
    assert (outcome, dominated) == (CHEAPER, [record]) and histories_of(shard.histories[newer]) == \
        [first_history(shard.histories[newer])]
    # a tie through this record counts once per history of every record on its way
    shard.settle(("other",), 1.0, (None,), 31)
    other = shard.entries[("other",)].record
    shard.settle(("next",), 2.0, (record, 4), 32)
    shard.settle(("next",), 2.0, (other,), 33)
    later = shard.entries[("next",)].record
    assert [history_fields(data)[1] for data in histories_of(shard.histories[later])] == [(record, 4), (other,)]
    assert trail_count((later,), shard.histories) == len(trails) + 1


def test_a_history_table_holds_the_records_of_every_owner():
    # a shard's histories in one buffer (HistoryTable): records of several owners (a
    # resumed search holds those of its earlier runs) and sparse serials (a worker holds
    # some of another's), read back as runs of bytes in the order they came, built from
    # a dict, pickled (to another process) and added to
    first, second, third = record_id(3, 1), record_id(0, 7), record_id(3, 900)
    runs = {first: history(5, (None, 6)),
            second: history(1, (None,)) + history(2, (first, 1 << 80)),
            third: history(9, (None, 0))}
    table = HistoryTable(runs)
    assert dict(table) == runs and len(table) == 3 and set(table) == set(runs)
    for absent in (record_id(3, 2), record_id(3, 901), record_id(5, 1), -1, "first"):
        assert absent not in table
    with pytest.raises(KeyError):
        table[record_id(3, 2)]
    assert pickle.loads(pickle.dumps(table)) == table == runs
    assert HistoryTable.of(table) is table and HistoryTable.of(runs) == table
    table.add(first, history(7, (second, 3)))
    assert histories_of(table[first]) == [history(5, (None, 6)), history(7, (second, 3))]
    assert table[second] == runs[second] and len(table) == 3
    with pytest.raises(ValueError, match="not negative"):
        table.add(-2, history(1, (None,)))


def test_a_history_reads_back_whatever_the_widths_of_its_numbers():
    # a history's lengths are varints and its iteration and record take the bytes they
    # need (histories.history): small and wide values, a join of no nodes, masks and
    # histories longer than one varint byte can count
    wide = (1 << 1100) | 5  # 138 bytes
    for iteration in (0, 1, 127, 128, 2**40):
        for trail in ((None,), (0,), (record_id(7, 2**35), 0, wide, 5), (None, (1 << 1016) - 1), (2**63 - 2, 1)):
            data = history(iteration, trail)
            assert history_fields(data) == (iteration, trail) and history_record(data) == trail[0]
            other = history(3, (None, 1))
            assert histories_of(data + other) == [data, other] and first_history(data + other) == data
            assert list(history_parts(other + data))[1] == (iteration, trail[0], [
                (mask.to_bytes((mask.bit_length() + 7) >> 3, "little") or b"\0") for mask in trail[1:]])
