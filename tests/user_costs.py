"""User cost models for tests/test_cost_user.py, loaded as ``user_costs:<name>``."""

from __future__ import annotations


def count_nodes(ctx):
    """A plain function: cost only, so the cluster-layer passes its node set up."""
    return len(ctx.nodes) + 0.5


def tagged(ctx):
    """A function returning (cost, message): 2 per node plus 1 per child whose
    message this function made."""
    seen = sum(
        1 for c in ctx.children if isinstance(c.message, tuple) and c.message[:1] == ("tag",)
    )
    return 2.0 * len(ctx.nodes) + seen, ("tag", ctx.layer, tuple(sorted(ctx.nodes)))


class ChildCounter:
    """A class-based model: 1 + 1 per child cluster-layer + 0.25 per child in the same
    cluster. It records every context it sees."""

    name = "child_counter"

    def __init__(self) -> None:
        self.contexts = []

    def params(self):
        return {}

    def evaluate(self, ctx):
        self.contexts.append(ctx)
        same = sum(1 for c in ctx.children if c.same_cluster)
        return 1.0 + len(ctx.children) + 0.25 * same, ctx.nodes


class Nameless:
    """A class-based model without a ``name``: load_cost names it after the spec."""

    def evaluate(self, ctx):
        return 1.0, ctx.nodes


MODEL = ChildCounter()

NOT_A_COST = 42
