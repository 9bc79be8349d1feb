"""The audit of reported mappings (dcmap_dist/search/audit.py): it prices a mapping exactly as
``cost.evaluate_mapping`` does, and refuses an infeasible mapping or a wrong cost with an
error that names the mapping."""

from __future__ import annotations

import math

import pytest

from dcmap_dist.search.audit import Audit, AuditError
from dcmap_dist.cost.base import evaluate_mapping
from dcmap_dist.cost.dcmap import DcmapCost
from dcmap_dist.cost.user import FunctionCost
from dcmap_dist.search.problem import Problem
from dcmap_dist.model.mappings import enumerate_mappings, mapping_names

from search_costs import random_network, tie_cost

MODELS = [DcmapCost("cpt"), DcmapCost("paper"), FunctionCost(tie_cost)]


def audit_of(network, model, scheme="merge") -> Audit:
    problem = Problem(network, model, scheme)
    return Audit(network, network, model, scheme, problem.topo)


@pytest.mark.parametrize("seed", range(12))
def test_the_audit_prices_every_mapping_as_evaluate_mapping_does(seed):
    network = random_network(seed, 5, 8)
    for model in MODELS:
        audit = audit_of(network, model)
        for clusters in enumerate_mappings(network):
            names = mapping_names(audit.topo, clusters)
            expected = sum(c.cost for c in evaluate_mapping(network, names, model))
            assert math.isclose(audit.cost(clusters), expected, rel_tol=1e-12)
            audit.check(clusters, expected)


def test_the_audit_refuses_an_infeasible_mapping_and_a_wrong_cost():
    network = random_network(3, 7, 7)
    audit = audit_of(network, DcmapCost())
    clusters = next(iter(enumerate_mappings(network)))
    right = audit.cost(clusters)
    with pytest.raises(AuditError, match="not the 1.0 the search gave it"):
        audit.check(clusters, 1.0)
    everything = (audit.topo.all_nodes,)
    with pytest.raises(AuditError, match="infeasible|not a partition"):
        audit.check(everything, right)  # one cluster of every node: not layer-connected here
    with pytest.raises(AuditError, match="leaves nodes out"):
        audit.check(clusters[1:], right)
