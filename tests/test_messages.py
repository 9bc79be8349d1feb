"""The messages the search holds (dcmap_dist/search/messages.py): the built-in model's as
int codes that mean the same in every process and after a resume, a user model's as its
own objects, and the model always handed its own values back."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from search_costs import partition, random_network

from dcmap_dist import load_network, solve
from dcmap_dist.checkpoint.arrow import generations
from dcmap_dist.checkpoint.codec import decode_message
from dcmap_dist.checkpoint.session import Resume
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import FunctionCost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.messages import MessageCodes
from dcmap_dist.search.problem import Problem

SEARCH = """
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.limits import Limits, Stopwatch
from dcmap_dist.search.explorer import Explorer
from dcmap_dist.search.problem import Problem
from search_costs import random_network

def searched(seed, key):
    problem = Problem(random_network(seed, 9, 12), DcmapCost(), "merge", link_key=key)
    explorer = Explorer(problem, 0.6, 0, owner=1)
    root = problem.root()
    explorer.receive([(problem.link_key(root), root)])
    explorer.step(Stopwatch(Limits()), max_iterations=1500)
    return problem, explorer
"""


def summary(result) -> tuple:
    return (round(result.optimal_cost, 6), result.solution_count,
            frozenset(partition(s.clusters) for s in result.solutions))


def key_messages(key: tuple, kind: str) -> list:
    """The messages a link key holds."""
    return [message for _, message in key[2 if kind == "full" else 1]]


@pytest.mark.parametrize("key", ["lean", "full"])
def test_the_built_in_models_codes_are_the_same_in_every_process(tmp_path, key):
    """Keys and frontiers hold ints, and a process with another string-hash seed makes the
    very same keys: a key travels between workers and into checkpoints as it is."""
    namespace: dict = {}
    exec(SEARCH, namespace)
    keys, codes = [], []
    for seed in range(6):
        problem, explorer = namespace["searched"](seed, key)
        keys.append(sorted(explorer.shard.entries, key=repr))
        codes.append([m for k in explorer.shard.entries for m in key_messages(k, key)])
        assert codes[-1] and all(type(code) is int for code in codes[-1])
        for code in codes[-1]:  # each code decodes to the message the model passed
            assert problem.messages.held(problem.messages.value(code)) is code
    script = (f"import sys\nsys.path.insert(0, {os.path.dirname(__file__)!r})\n" + SEARCH
              + "print(repr([sorted(searched(seed, sys.argv[1])[1].shard.entries, key=repr) for seed in range(6)]))")
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        got = subprocess.run([sys.executable, "-c", script, key], env=env, capture_output=True,
                             text=True, check=True).stdout
        assert eval(got) == keys  # ints, tuples and floats only: their reprs read back


def test_a_code_is_the_mask_of_the_nodes_in_the_whole_networks_order():
    network = load_network("asia")
    codes = MessageCodes(network, True)
    message = frozenset({network.nodes[1], network.nodes[4]})
    code = codes.held(message)
    assert code == 0b10010 and codes.value(code) == message
    assert codes.held(frozenset(message)) is code  # one int object per code
    fresh = MessageCodes(network, True)  # another process, or a resume
    assert fresh.value(0b10010) == message and fresh.held(message) == code
    assert codes.held(frozenset()) == 0 and codes.value(0) == frozenset()
    with pytest.raises(ValueError, match="'nowhere'"):
        codes.held(frozenset({"nowhere"}))
    with pytest.raises(ValueError, match="frozenset"):
        codes.held(("asia",))
    with pytest.raises(ValueError, match="not the code"):
        codes.value(1 << len(network.nodes))


def test_a_user_models_messages_are_its_own_objects_one_per_value():
    network = random_network(3, 9, 12)
    seen = []

    def cost(ctx):
        message = ("scope", tuple(sorted(ctx.nodes)))
        seen.extend(child.message for child in ctx.children)
        return 1.0 + len(ctx.nodes) ** 1.5, message

    problem = Problem(network, FunctionCost(cost), "merge")
    explorer = Explorer(problem, 0.6, 0, owner=1)
    root = problem.root()
    explorer.receive([(problem.link_key(root), root)])
    explorer.step(Stopwatch(Limits()), max_iterations=300)
    held = [m for k in explorer.shard.entries for m in key_messages(k, "lean")]
    assert held and all(isinstance(m, tuple) and m[0] == "scope" for m in held)
    assert seen and all(isinstance(m, tuple) for m in seen)  # the model gets its own values
    copied = pickle.loads(pickle.dumps(root.frontier))  # as from another process
    adopted = problem.messages.adopted(copied)
    assert adopted == copied and all(m is problem.messages.held(m) for _, m in adopted)


def test_a_checkpoint_stores_the_node_sets_and_resumes_from_them(tmp_path):
    """The messages table holds the model's values (sets of node names), as checkpoints
    written before codes did; a resume reads them back as codes and finishes exactly."""
    folder = tmp_path / "ck"
    network = load_network("child")
    solve(network, max_iterations=3000, checkpoint=folder)
    import pandas

    messages = pandas.read_feather(generations(folder)[0] / "messages.arrow")
    assert len(messages) > 10 and set(messages["codec"]) == {"plain"}
    for text in messages["value"]:
        value = decode_message(text.decode())
        assert isinstance(value, frozenset) and value <= set(network.nodes), json.loads(text)
    resumed, whole = solve(None, resume=folder), solve(network)
    assert resumed.proven_optimal and summary(resumed) == summary(whole)


def test_a_checkpoint_written_before_the_codes_resumes_exactly(tmp_path):
    """tests/data/checkpoint-0ce4211-asia: asia stopped after 10 iterations by 0ce4211,
    whose search held the built-in model's messages as frozensets. Its messages are read
    back as codes, and the resumed search proves what a fresh one does."""
    folder = tmp_path / "ck"
    shutil.copytree(Path(__file__).parent / "data" / "checkpoint-0ce4211-asia", folder)
    resumed = Resume(folder)
    state = resumed.generation.state(resumed.metadata["component"])
    held = [message for branch in state.branches for _, message in branch.frontier]
    assert held and all(type(code) is int for code in held)
    result = solve(None, resume=resumed)
    assert result.proven_optimal and summary(result) == summary(solve(load_network("asia")))
