"""Tests of dcmap_dist/cost/user.py: user cost functions and models loaded by
load_cost (FunctionCost, UserCost, tests/user_costs.py), the checks that guard their
answers and hooks (malformed costs, messages, bounds, params; exceptions and exits named
after the model), bad cost specs, and pickling a guarded model."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import pytest
from cost_helpers import OPTIMAL, total

from dcmap_dist.cost.base import ChildClusterLayer, CostError, evaluate_mapping
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import HOOKS, FunctionCost, UserCost, load_cost

TESTS = Path(__file__).resolve().parent


# --------------------------------------------------------------------------- user costs


@pytest.fixture
def user_costs(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    import user_costs as module

    return module


def test_user_function_cost(paper, user_costs):
    model = load_cost("user_costs:count_nodes")
    assert isinstance(model, UserCost) and isinstance(model.model, FunctionCost)
    assert model.name == "user_costs:count_nodes"
    # 7 cluster-layers of one node
    got = evaluate_mapping(paper, OPTIMAL[0], model)
    assert [c.cost for c in got] == [1.5] * 7
    # one cluster: cluster-layers {F,G}, {D,E}, {A,B,C}
    assert total(paper, [list(paper.nodes)], model) == pytest.approx(2.5 + 2.5 + 3.5)


def test_user_function_default_message_is_the_node_set(paper):
    seen = []

    def spy(ctx):
        for child in ctx.children:
            seen.append(child)
            assert child.message == child.nodes
        return 1.0

    evaluate_mapping(paper, OPTIMAL[0], load_cost(spy))
    assert len(seen) == 6  # D<-G, E<-G, A<-D, A<-F, B<-D, C<-E


def test_user_function_with_message(paper, user_costs):
    model = load_cost("user_costs:tagged")
    # 2 per node, plus 1 per child cluster-layer (each passed a tagged message):
    # F 2, G 2, D 2+1, E 2+1, A 2+2, B 2+1, C 2+1 = 20
    got = {c.nodes: c.cost for c in evaluate_mapping(paper, OPTIMAL[0], model)}
    assert got == {
        frozenset("F"): 2.0, frozenset("G"): 2.0, frozenset("D"): 3.0, frozenset("E"): 3.0,
        frozenset("A"): 4.0, frozenset("B"): 3.0, frozenset("C"): 3.0,
    }


def test_user_class_model(paper, user_costs):
    model = load_cost("user_costs:ChildCounter")
    assert isinstance(model.model, user_costs.ChildCounter)
    assert model.name == "child_counter"
    # F 1, G 1, D 1 + 1 + 0.25 (G same cluster), E 2, A 1 + 2, B 2, C 2 = 13.25
    assert total(paper, OPTIMAL[0], model) == pytest.approx(13.25)
    contexts = {ctx.nodes: ctx for ctx in model.model.contexts}
    d = contexts[frozenset("D")]
    assert d.layer == 1 and d.graph is paper
    assert d.children == (ChildClusterLayer(frozenset("G"), 0, True, frozenset("G")),)
    a = contexts[frozenset("A")]
    # children sorted by (layer, sorted node names)
    assert a.children == (
        ChildClusterLayer(frozenset("F"), 0, False, frozenset("F")),
        ChildClusterLayer(frozenset("D"), 1, False, frozenset("D")),
    )
    # a model object and a nameless class
    assert load_cost("user_costs:MODEL").model is user_costs.MODEL
    nameless = load_cost("user_costs:Nameless")
    assert nameless.name == "user_costs:Nameless"
    assert total(paper, OPTIMAL[0], nameless) == pytest.approx(7.0)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "cheap", None, True])
def test_bad_user_costs(paper, bad):
    def cost(ctx):
        return bad if ctx.nodes == frozenset("AB") else 1.0

    def pair(ctx):
        return (bad, ctx.nodes) if ctx.nodes == frozenset("AB") else (1.0, ctx.nodes)

    for function in (cost, pair):
        with pytest.raises(CostError, match=r"\['A', 'B'\] \(layer 2\)"):
            evaluate_mapping(paper, [list("ABDF"), list("CEG")], load_cost(function))


def test_user_cost_tuple_of_wrong_length(paper):
    model = load_cost(FunctionCost(lambda ctx: (1.0, ctx.nodes, "extra"), name="three"))
    with pytest.raises(CostError, match=r"three: evaluate returned \(1\.0, .*'extra'\) on cluster-layer \['F'\].*\(cost, message\)"):
        evaluate_mapping(paper, OPTIMAL[0], model)


def test_bad_cost_specs(user_costs):
    assert importlib.util.find_spec("nomodule") is None
    with pytest.raises(ValueError, match=r"cannot import cost module 'nomodule'"):
        load_cost("nomodule:x")
    with pytest.raises(ValueError, match=r"module 'user_costs' has no cost 'missing'"):
        load_cost("user_costs:missing")
    for spec in ("justaname", ":count_nodes", "user_costs:"):
        with pytest.raises(ValueError, match=r"'dcmap' or 'package\.module:name'"):
            load_cost(spec)
    with pytest.raises(ValueError, match="neither a cost function nor a cost model"):
        load_cost("user_costs:NOT_A_COST")


def test_load_cost_passes_the_built_in_model_through_and_guards_the_rest():
    model = DcmapCost(order="paper")
    assert load_cost(model) is model
    wrapped = load_cost(len)
    assert isinstance(wrapped, UserCost) and wrapped.model.function is len and wrapped.name == "len"
    assert load_cost(wrapped) is wrapped
    counter = load_cost(FunctionCost(len, "counted"))
    assert counter.name == "counted" and counter.model.function is len


# --------------------------------------------------------------------------- user-code failures


def test_user_cost_exceptions_name_the_model_and_the_cluster_layer(paper):
    def fragile(ctx):
        return 1.0 / (len(ctx.nodes) != 2)  # divides by zero on the only two-node cluster-layer

    model = load_cost(FunctionCost(fragile, "mine:fragile"))
    with pytest.raises(CostError, match=r"cost model mine:fragile: evaluate failed on cluster-layer "
                                        r"\['A', 'B'\] \(layer 2\): ZeroDivisionError") as caught:
        evaluate_mapping(paper, [list("ABDF"), list("CEG")], model)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


class _Model:
    """A model object with every hook; each test spoils one thing."""

    name = "spoilt"

    def __init__(self, **spoil):
        self.spoil = spoil

    def params(self):
        return self.spoil.get("params", {"k": 1})

    def evaluate(self, ctx):
        return self.spoil.get("evaluate", (1.0, ctx.nodes))

    def node_lower_bounds(self, graph):
        return self.spoil.get("bounds", {x: 0.5 for x in graph.nodes})

    def message_lower_bound(self, graph, nodes, message):
        return self.spoil.get("message_bound", 0.0)

    def absorption_lower_bound(self, graph, absorber, children):
        return self.spoil.get("absorption", 0.5)

    def grouping_lower_bound(self, graph, nodes, message, parents, layer_nodes):
        return self.spoil.get("grouping", 0.0)

    def absorber_lower_bounds(self, graph):
        return self.spoil.get("absorber", {x: 0.25 for x in graph.nodes})

    def absorbed_lower_bounds(self, graph):
        return self.spoil.get("absorbed", {})

    def estimate(self, graph, nodes):
        if "estimate" in self.spoil:
            raise RuntimeError(self.spoil["estimate"])
        return float(len(nodes))


def test_a_sound_user_model_passes_its_hooks_through(paper):
    model = load_cost(_Model())
    assert model.name == "spoilt" and model.params() == {"k": 1}
    assert model.node_lower_bounds(paper) == {x: 0.5 for x in paper.nodes}
    assert model.message_lower_bound(paper, frozenset("A"), frozenset("A")) == 0.0
    assert model.absorption_lower_bound(paper, "A", ((frozenset("D"), frozenset("A")),)) == 0.5
    assert model.grouping_lower_bound(paper, frozenset("D"), frozenset("AB"), ("A", "B"), frozenset("ABC")) == 0.0
    assert model.absorber_lower_bounds(paper) == {x: 0.25 for x in paper.nodes}
    assert model.absorbed_lower_bounds(paper) == {}
    assert model.estimate(paper, frozenset("AB")) == 2.0
    assert total(paper, OPTIMAL[0], model) == 7.0
    # a hook the model lacks is absent, as the search expects
    plain = load_cost(lambda ctx: 1.0)
    for hook in HOOKS:
        assert getattr(plain, hook, None) is None


@pytest.mark.parametrize("spoil, call, message", [
    ({"evaluate": 1.0}, "evaluate", r"returned 1\.0 on cluster-layer \['F'\] \(layer 0\); expected \(cost, message\)"),
    ({"evaluate": (1.0, ["F"])}, "evaluate", r"the message on cluster-layer \['F'\] \(layer 0\) is a list, which is not hashable"),
    ({"evaluate": (float("inf"), "m")}, "evaluate", r"\['F'\] \(layer 0\) is inf; a cost must be a finite positive number"),
    ({"bounds": [1.0]}, "bounds", r"node_lower_bounds returned \[1\.0\]; expected a dict"),
    ({"bounds": {"Z": 1.0}}, "bounds", r"node_lower_bounds names 'Z', which is not a node"),
    ({"bounds": {"A": float("nan")}}, "bounds", r"node_lower_bounds returned nan for node 'A'; expected a finite number"),
    ({"message_bound": None}, "message", r"message_lower_bound returned None for cluster-layer \['A'\]"),
    ({"absorption": float("inf")}, "absorption", r"absorption_lower_bound returned inf for node 'A'; expected a finite"),
    ({"grouping": "x"}, "grouping", r"grouping_lower_bound returned 'x' for cluster-layer \['D'\]; expected a finite"),
    ({"absorber": [1.0]}, "absorber", r"absorber_lower_bounds returned \[1\.0\]; expected a dict"),
    ({"absorbed": {"A": "x"}}, "absorbed", r"absorbed_lower_bounds returned 'x' for node 'A'; expected a finite number"),
    ({"estimate": "boom"}, "estimate", r"estimate failed: RuntimeError: boom"),
], ids=["bare-cost", "unhashable-message", "infinite-cost", "bounds-not-a-dict", "bounds-unknown-node",
        "bounds-nan", "message-bound-none", "absorption-inf", "grouping-not-a-number", "absorber-not-a-dict", "absorbed-not-a-number", "estimate-raises"])
def test_malformed_user_model_answers(paper, spoil, call, message):
    model = load_cost(_Model(**spoil))
    calls = {
        "evaluate": lambda: evaluate_mapping(paper, OPTIMAL[0], model),
        "bounds": lambda: model.node_lower_bounds(paper),
        "message": lambda: model.message_lower_bound(paper, frozenset("A"), frozenset("A")),
        "absorption": lambda: model.absorption_lower_bound(paper, "A", ((frozenset("D"), frozenset("A")),)),
        "grouping": lambda: model.grouping_lower_bound(paper, frozenset("D"), frozenset("AB"), ("A", "B"),
                                                       frozenset("ABC")),
        "absorber": lambda: model.absorber_lower_bounds(paper),
        "absorbed": lambda: model.absorbed_lower_bounds(paper),
        "estimate": lambda: model.estimate(paper, frozenset("AB")),
    }
    with pytest.raises(CostError, match=r"cost model spoilt: .*" + message):
        calls[call]()


@pytest.mark.parametrize("params, message", [
    ({"when": object()}, "not JSON serializable"),
    ({"x": float("nan")}, "Out of range float"),
    (["order"], r"it returned \['order'\]"),
])
def test_user_params_must_be_json_and_are_checked_when_loaded(params, message):
    with pytest.raises(CostError, match=r"cost model spoilt: params\(\) must return a dict of JSON values.*" + message):
        load_cost(_Model(params=params))


def test_a_failing_user_class_or_module(tmp_path, monkeypatch):
    (tmp_path / "broken_costs.py").write_text(
        "class Picky:\n"
        "    def __init__(self):\n"
        "        raise KeyError('config')\n"
        "    def evaluate(self, ctx):\n"
        "        return 1.0, ctx.nodes\n"
    )
    (tmp_path / "syntax_costs.py").write_text("def f(ctx:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CostError, match=r"cannot create cost model broken_costs:Picky: KeyError: 'config'"):
        load_cost("broken_costs:Picky")
    with pytest.raises(CostError, match=r"cannot import cost module 'syntax_costs': SyntaxError"):
        load_cost("syntax_costs:f")


def test_a_guarded_user_model_pickles_with_its_hooks(paper):
    """The distributed search sends the model to other processes."""
    model = pickle.loads(pickle.dumps(load_cost(_Model())))
    assert model.name == "spoilt" and model.estimate(paper, frozenset("AB")) == 2.0
    assert total(paper, OPTIMAL[0], model) == 7.0


# -- a user cost that exits (issue 30) -----------------------------------------------------------


@pytest.mark.parametrize("raised", [SystemExit(0), SystemExit("bye"), KeyboardInterrupt()])
def test_a_cost_function_that_exits_is_an_error_of_that_function(raised):
    """sys.exit() or KeyboardInterrupt from a user's cost is a CostError naming it (before,
    the solve ended with exit code 0 and no output)."""
    from dcmap_dist.cost.base import CostError
    from dcmap_dist.cost.user import load_cost
    from dcmap_dist.solve import solve

    def leaving(ctx):
        raise raised

    with pytest.raises(CostError, match=f"raised {type(raised).__name__}.*must return, not exit"):
        solve("asia", load_cost(leaving))
