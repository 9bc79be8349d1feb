"""Tests of dcmap_dist/cost/dcmap.py, the built-in DcmapCost model (SPEC sections 3 and
4): the paper's example worked by hand, the elimination orders (cpt, paper, canonical)
and the addition weight, the seagrass figures, the admissibility of the node bounds and
each part of the absorption and grouping bounds against an oracle on random networks,
tables past the float range, and the elimination-order cache."""

from __future__ import annotations

import gc
import itertools
import json
import math
import random

import pytest
from cost_helpers import OPTIMAL, total
from search_costs import random_network
from shared_networks import shared

from dcmap_dist.cost.base import (ChildClusterLayer, ClusterLayerCost, CostContext, CostError, child_order,
                                  evaluate_mapping, sort_children)
from dcmap_dist.cost.dcmap import DcmapCost, elimination_positions
from dcmap_dist.cost.user import load_cost
from dcmap_dist.io.load import load_network
from dcmap_dist.model.mappings import check_mapping, enumerate_mappings
from dcmap_dist.model.network import Network, NetworkError
from dcmap_dist.model.topology import Topology, layers
from dcmap_dist.search.bounds import least_grouping


def partition(clusters) -> frozenset[frozenset[str]]:
    return frozenset(frozenset(c) for c in clusters)


# --------------------------------------------------------------------------- the paper's example


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_naive_cost_of_the_paper_example(paper, order):
    # One cluster-layer, every node internal, in order of layer then elimination
    # order; for both orders that is F, G, E, D, A, B, C (E's CPT, 4, is below D's, 8).
    # Each step: R = R | {x} | Par(x); cost += |R| * (1 + 0.6 * 1/2); R -= {x}.
    #   F: R={F,A}     4 -> 5.2   R={A}
    #   G: R={A,G,D,E} 16 -> 20.8 R={A,D,E}
    #   E: R={A,D,E,C} 16 -> 20.8 R={A,D,C}
    #   D: R={A,D,C,B} 16 -> 20.8 R={A,B,C}
    #   A: 8 -> 10.4;  B: 4 -> 5.2;  C: 2 -> 2.6
    # 5.2 + 3 * 20.8 + 10.4 + 5.2 + 2.6 = 85.8
    assert DcmapCost(order=order).naive(paper) == pytest.approx(85.8, rel=1e-12)


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_optimal_mapping_by_hand(paper, order):
    # Mapping {A},{F},{D,G},{E},{B},{C}; all nodes binary, addition 0.6.
    # layer 0
    #   {F}: no children. R={F,A}: +4; F internal: +0.6*4/2 = 1.2.      = 5.2, J={A}
    #   {G}: no children. R={G,D,E}: +8; G internal: +0.6*8/2 = 2.4.    = 10.4, J={D,E}
    # layer 1
    #   {D}: Jcpt={D,A,B}; child {G} (same cluster), J={D,E}: m={D}:
    #        +0.6*(4-2) = 1.2, R={D}: +2; eliminate D: R={D,A,B}: +8,
    #        D internal (G same cluster): +0.6*8/2 = 2.4.               = 13.6, J={A,B}
    #   {E}: Jcpt={E,C}; child {G}, J={D,E}: m={E}: +1.2, R={E}: +2;
    #        eliminate E: R={E,C}: +4; E is a link node (G elsewhere).   = 7.2, J={E,C}
    # layer 2
    #   {A}: Jcpt={A}; children in order D, F: {D} J={A,B}: m={A}: +0.6*(4-2)=1.2,
    #        R={A}: +2; {F} J={A}: m={A}: +0, R={A}: +2; eliminate A: +2, link. = 7.2
    #   {B}: {D} J={A,B}: m={B}: +1.2, +2; eliminate B: +2, link.          = 5.2
    #   {C}: {E} J={E,C}: m={C}: +1.2, +2; eliminate C: +2, link.          = 5.2
    # total 5.2 + 10.4 + 13.6 + 7.2 + 7.2 + 5.2 + 5.2 = 54.0
    hand = [
        (frozenset("F"), 0, 5.2),
        (frozenset("G"), 0, 10.4),
        (frozenset("D"), 1, 13.6),
        (frozenset("E"), 1, 7.2),
        (frozenset("A"), 2, 7.2),
        (frozenset("B"), 2, 5.2),
        (frozenset("C"), 2, 5.2),
    ]
    got = evaluate_mapping(paper, OPTIMAL[0], DcmapCost(order=order))
    assert all(isinstance(c, ClusterLayerCost) for c in got)
    assert [(c.nodes, c.layer) for c in got] == [(n, l) for n, l, _ in hand]
    assert [c.cost for c in got] == pytest.approx([v for _, _, v in hand], rel=1e-12)
    assert sum(c.cost for c in got) == pytest.approx(54.0, rel=1e-12)


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_other_optimal_mappings(paper, order):
    model = DcmapCost(order=order)
    for clusters in OPTIMAL:
        check_mapping(paper, clusters)
        assert total(paper, clusters, model) == pytest.approx(54.0, rel=1e-12)


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_brute_force_optimum_of_the_paper_example(paper, order):
    model = DcmapCost(order=order)
    topo = Topology(paper)
    costs = {}
    for mapping in enumerate_mappings(paper, "merge"):
        clusters = [sorted(topo.names(c)) for c in mapping]
        costs[partition(clusters)] = total(paper, clusters, model)
    assert len(costs) == 56
    best = min(costs.values())
    assert best == pytest.approx(54.0, rel=1e-12)
    argmin = {p for p, v in costs.items() if math.isclose(v, best, rel_tol=1e-9)}
    assert argmin == {partition(c) for c in OPTIMAL}
    # the naive mapping (one cluster) is not feasible, but costs no less than the optimum
    assert all(v >= best for v in costs.values())


@pytest.mark.parametrize("order", ["cpt", "paper"])
def test_absorbed_message_and_link_node_by_hand(paper, order):
    # Mapping {A,B,D,F},{C,E,G} (feasible under merge, not single).
    #   {G} layer 0: R={G,D,E}: 8 + 0.6*8/2 = 10.4, J={D,E}.
    #   {D} layer 1, cluster {A,B,D,F}: Jcpt={D,A,B}. Child {G} is in the other
    #       cluster, so D is a link node. Absorb J={D,E}: m={D}: 0.6*(4-2) = 1.2,
    #       R={D}: +2 (3.2). Eliminate D: R={D,A,B}: +8 (11.2); link: D stays.
    #       = 11.2, J={A,B,D}
    #   {A,B} layer 2: Jcpt={A,B}. Children in order of first appearance: A's
    #       children D then F, so {D} then {F}. {D}: J={A,B,D}, m={A,B}:
    #       0.6*(8-4) = 2.4, R={A,B}: +4 (6.4). {F}: J={A}, m={A}: +0, R={A,B}: +4 (10.4).
    #       Eliminate A (CPT 2, before B by input order): R={A,B}: +4 (14.4), internal:
    #       +0.6*4/2 = 1.2 (15.6), R={B}. B: R={B}: +2 (17.6), internal: +0.6 (18.2).
    #       = 18.2, J={}
    #   {E} layer 1, cluster {C,E,G}: child {G} same cluster: m={E}: 1.2, R={E}: +2,
    #       eliminate E: R={E,C}: +4, internal: +1.2. = 8.4, J={C}
    #   {C} layer 2: child {E} J={C}: m={C}: +0, R={C}: +2; eliminate: +2, +0.6. = 4.6
    got = {c.nodes: c.cost for c in evaluate_mapping(paper, [list("ABDF"), list("CEG")],
                                                     DcmapCost(order=order))}
    assert got == pytest.approx({
        frozenset("F"): 5.2,
        frozenset("G"): 10.4,
        frozenset("D"): 11.2,
        frozenset("E"): 8.4,
        frozenset("AB"): 18.2,
        frozenset("C"): 4.6,
    }, rel=1e-12)
    # the message of {D} directly, through the model interface
    model = DcmapCost(order=order)
    g_ctx = CostContext(frozenset("G"), 0, paper, ())
    g_cost, g_msg = model.evaluate(g_ctx)
    assert g_cost == pytest.approx(10.4) and g_msg == frozenset("DE")
    d_ctx = CostContext(frozenset("D"), 1, paper,
                        (ChildClusterLayer(frozenset("G"), 0, False, g_msg),))
    d_cost, d_msg = model.evaluate(d_ctx)
    assert d_cost == pytest.approx(11.2) and d_msg == frozenset("ABD")
    # the same child in the same cluster: D is internal
    d_cost, d_msg = model.evaluate(d_ctx._replace(
        children=(ChildClusterLayer(frozenset("G"), 0, True, g_msg),)))
    assert d_cost == pytest.approx(13.6) and d_msg == frozenset("AB")


def test_elimination_orders_differ():
    # three roots of CPT sizes 3, 1, 2 (input order n0, n1, n2) above a leaf z.
    # cpt: n1, n2, n0. paper: argsort s = [1, 2, 0], n_j gets position s[j]:
    # n0 -> 1, n1 -> 2, n2 -> 0, so n2, n0, n1.
    # naive: z: R={z,n0,n1,n2} 12 -> 12 + 3.6 = 15.6, R={n0,n1,n2} (6)
    #   cpt:   n1: 6 + 0 ; n2: 6 + 1.8 ; n0: 3 + 1.2  -> 18.0, total 33.6
    #   paper: n2: 6 + 1.8; n0: 3 + 1.2 ; n1: 1 + 0   -> 13.0, total 28.6
    network = Network("orders", ["n0", "n1", "n2", "z"], {"n0": 3, "n1": 1, "n2": 2, "z": 2},
                      [("n0", "z"), ("n1", "z"), ("n2", "z")])
    assert DcmapCost(order="cpt").naive(network) == pytest.approx(33.6, rel=1e-12)
    assert DcmapCost(order="paper").naive(network) == pytest.approx(28.6, rel=1e-12)
    # the same as one cluster-layer evaluated through evaluate (children absorbed)
    layer1 = [frozenset({"n0", "n1", "n2"})]
    z_cost, z_msg = DcmapCost().evaluate(CostContext(frozenset("z"), 0, network, ()))
    assert z_cost == pytest.approx(15.6) and z_msg == frozenset({"n0", "n1", "n2"})
    child = (ChildClusterLayer(frozenset("z"), 0, True, z_msg),)
    # absorbing: m = J, +0; R = {n0,n1,n2}: +6; then the eliminations as above
    cpt_cost, _ = DcmapCost(order="cpt").evaluate(CostContext(layer1[0], 1, network, child))
    paper_cost, _ = DcmapCost(order="paper").evaluate(CostContext(layer1[0], 1, network, child))
    assert cpt_cost == pytest.approx(6 + 18.0)
    assert paper_cost == pytest.approx(6 + 13.0)


def test_addition_weight(paper):
    # with addition 0 only the multiplications count: naive = 4 + 16*3 + 8 + 4 + 2 = 66
    assert DcmapCost(addition=0.0).naive(paper) == pytest.approx(66.0)
    assert DcmapCost(addition=1.0).naive(paper) == pytest.approx(66.0 + 33.0)


def test_dcmap_rejects_bad_parameters():
    with pytest.raises(ValueError, match="unknown elimination order 'fifo'"):
        DcmapCost(order="fifo")
    with pytest.raises(ValueError, match="addition weight"):
        DcmapCost(addition=-0.1)
    with pytest.raises(ValueError, match="addition weight"):
        DcmapCost(addition=float("nan"))
    with pytest.raises(ValueError, match="unknown elimination order"):
        load_cost("dcmap", order="fifo")
    assert DcmapCost().params() == {"order": "cpt", "addition": 0.6}
    assert load_cost("dcmap", order="paper", addition=0.5) == DcmapCost(order="paper", addition=0.5)


# --------------------------------------------------------------------------- seagrass


def test_seagrass_naive_costs():
    path = shared("seagrass-2tbn.json")
    model = DcmapCost(order="paper")
    one = load_network(path, slices=1)
    two = load_network(path, slices=2)
    assert one.observed == frozenset({"Time_of_Year_0", "Genera_Presence_0", "Location_Type_0"})
    assert len(two.observed) == 6
    assert model.naive(one) == pytest.approx(34444.0, rel=1e-9)
    assert model.naive(two) == pytest.approx(3148386.4, rel=1e-9)


def test_seagrass_paper_final_mapping():
    network = load_network(shared("seagrass-2tbn.json"), slices=1)
    clusters = json.loads(shared("seagrass-paper-final-mapping.json").read_text())["clusters"]
    check_mapping(network, clusters, "merge")
    cost = total(network, clusters, DcmapCost(order="paper"))
    assert cost == pytest.approx(1386.6, rel=1e-9)
    # below the naive cost, as an optimum must be
    assert cost < DcmapCost(order="paper").naive(network)


def test_observe_on_an_unrolled_template():
    path = shared("seagrass-2tbn.json")
    plain = load_network(path, slices=2)
    network = load_network(path, slices=2, observe=["Salinity"])
    assert network.observed == plain.observed | {"Salinity_0", "Salinity_1"}
    assert network.card("Salinity_0") == 1 and network.card("Salinity_1") == 1
    assert plain.card("Salinity_0") > 1
    # an unrolled node's own name observes only that node
    only = load_network(path, slices=2, observe=["Salinity_1"])
    assert only.observed == plain.observed | {"Salinity_1"}
    # observing lowers the naive cost
    model = DcmapCost(order="paper")
    assert model.naive(network) < model.naive(plain)
    with pytest.raises(NetworkError, match="'Salinty'"):
        load_network(path, slices=2, observe=["Salinty"])


# --------------------------------------------------------------------------- random graphs


def test_node_lower_bounds_are_admissible():
    rng = random.Random(11)
    models = [DcmapCost(), DcmapCost(order="paper"), DcmapCost(addition=1.5)]
    checks = 0
    for g in range(30):
        network = random_network(11000 + g, 4, 8)
        layer = layers(network)
        l_max = max(layer.values())
        topo = Topology(network)
        mappings = list(enumerate_mappings(network))
        if len(mappings) > 150:
            mappings = rng.sample(mappings, 150)
        for model in models:
            bound = model.node_lower_bounds(network)
            assert set(bound) == set(network.nodes)
            for x in network.nodes:
                # at least the CPT multiplication
                assert bound[x] >= math.prod(network.card(y) for y in (x, *network.parents[x]))
            for mapping in mappings:
                clusters = [topo.names(c) for c in mapping]
                parts = evaluate_mapping(network, clusters, model)
                for l in range(-1, l_max + 1):
                    # U = every node in layers > l, plus any set of cluster-layers of layer l
                    upper = [c for c in parts if c.layer > l]
                    upper_cost = sum(c.cost for c in upper)
                    upper_bound = sum(bound[x] for c in upper for x in c.nodes)
                    level = [c for c in parts if c.layer == l]
                    for r in range(len(level) + 1):
                        for subset in itertools.combinations(level, r):
                            cost = upper_cost + sum(c.cost for c in subset)
                            lower = upper_bound + sum(bound[x] for c in subset for x in c.nodes)
                            assert cost >= lower - 1e-9 * max(1.0, lower), (
                                network.nodes, network.edges, clusters, l, subset)
                            checks += 1
    assert checks > 2000


def absorption_terms(network: Network, clusters: list, model: DcmapCost) -> dict:
    """The terms of the dcmap cost of a mapping that the absorption bounds draw on,
    counted here independently of the model (an oracle): per absorption ``(P, K)`` its
    cost (marginalising plus multiplying in) and ``mu``, the cards of two states or more
    of ``P``'s nodes that are parents of ``K``; per cluster-layer, the excess of its
    eliminations over their nodes' CPTs, and its link nodes' summing-out shares."""
    layer = layers(network)
    cluster_of = {x: k for k, cluster in enumerate(clusters) for x in cluster}
    groups: dict = {}
    for x in network.nodes:
        groups.setdefault((layer[x], cluster_of[x]), set()).add(x)
    card, parents, a = network.card, network.parents, model.addition
    size = lambda nodes: math.prod(card(x) for x in nodes)  # noqa: E731
    position = elimination_positions(network, model.order)
    done: dict = {}
    terms = {"absorb": {}, "excess": {}, "links": {}, "layer": layer, "message": {}}
    for (l, k), members in sorted(groups.items(), key=lambda item: (item[0][0], sorted(item[1]))):
        nodes = frozenset(members)
        kids = {}
        for x in nodes:
            for y in network.children[x]:
                kid_nodes, kid_layer, message = done[y]
                kids.setdefault(kid_nodes, ChildClusterLayer(kid_nodes, kid_layer, cluster_of[y] == k, message))
        ctx = CostContext(nodes, l, network, tuple(sorted(kids.values(), key=lambda c: (c.layer, sorted(c.nodes)))))
        jcpt = nodes | {p for x in nodes for p in parents[x]}
        link = {x for c in ctx.children if not c.same_cluster for x in nodes
                if any(x in parents[y] for y in c.nodes)}
        scope: set = set()
        for child in child_order(ctx):
            kept = child.message & jcpt
            scope |= kept
            mu = sum(card(x) for x in nodes if card(x) >= 2 and any(x in parents[y] for y in child.nodes))
            terms["absorb"][(nodes, child.nodes)] = (a * (size(child.message) - size(kept)) + size(scope), mu)
        terms["excess"][nodes] = 0
        for x in sorted(nodes, key=position.__getitem__):
            scope |= {x, *parents[x]}
            terms["excess"][nodes] += size(scope) - size({x, *parents[x]})
            if x not in link:
                scope.discard(x)
        terms["links"][nodes] = sum(a * size({x, *parents[x]}) * (card(x) - 1) / card(x)
                                    for x in link if parents[x])
        assert model.evaluate(ctx)[1] == frozenset(scope)  # the oracle follows the model
        terms["message"][nodes] = frozenset(scope)
        for x in nodes:
            done[x] = (nodes, l, frozenset(scope))
    return terms


def layered_network(seed: int) -> Network:
    """2 or 3 layers of 1 to 4 nodes, each with random parents in the layer above (and
    sometimes an arc that skips a layer), 1 to 4 states."""
    rng = random.Random(seed)
    names = [[f"L{l}N{i}" for i in range(rng.randint(1, 4))] for l in range(rng.randint(2, 3))]
    edges = set()
    for upper, lower in zip(names, names[1:]):
        for child in lower:
            edges |= {(p, child) for p in rng.sample(upper, rng.randint(1, len(upper)))}
        edges |= {(p, rng.choice(lower)) for p in upper if not any(e[0] == p for e in edges)}
    if len(names) == 3 and rng.random() < 0.5:
        edges.add((names[0][0], names[2][0]))
    nodes = [x for level in names for x in level]
    rng.shuffle(nodes)
    return Network(f"layered{seed}", nodes, {x: rng.randint(1, 4) for x in nodes}, sorted(edges))


def check_absorption_bounds(network: Network, mappings: list, model: DcmapCost) -> tuple[int, int]:
    """Check each part of the absorption bounds against the terms it claims, in every
    mapping given; the number of checks and of tight ones (equal to the terms)."""
    topo = Topology(network)
    absorber = model.absorber_lower_bounds(network)
    absorbed = model.absorbed_lower_bounds(network)
    additive = model.additive_absorbed_lower_bounds(network)
    checks = tight = 0
    for mapping in mappings:
        terms = absorption_terms(network, [topo.names(c) for c in mapping], model)
        absorb, layer = terms["absorb"], terms["layer"]
        for absorber_layer in {P for P, _ in absorb}:
            # the absorber part: each node, once per layer of its children, within the mus
            charge = sum(absorber.get(x, 0.0) * len({layer[c] for c in network.children[x]}) for x in absorber_layer)
            room = sum(mu for (P, _), (_, mu) in absorb.items() if P == absorber_layer)
            assert charge <= room + 1e-9, (network.edges, mapping, sorted(absorber_layer))
            checks, tight = checks + 1, tight + (charge == room > 0)
        for y, bound in absorbed.items():
            # the absorbed part: what K's absorptions leave beyond the mus and the link
            # shares, plus the eliminations of the absorbers just above holding two or
            # more of y's parents
            K = next(K for _, K in absorb if y in K)
            room = sum(cost - mu for (_, K2), (cost, mu) in absorb.items() if K2 == K) - terms["links"][K]
            room += sum(terms["excess"][P] for P, K2 in absorb if K2 == K
                        and layer[next(iter(P))] == layer[y] + 1 and len(P & set(network.parents[y])) >= 2)
            assert bound <= room + 1e-9 * max(1.0, bound), (network.edges, mapping, y, bound, room)
            checks, tight = checks + 1, tight + math.isclose(bound, room)
        for nodes in spread_sets(network, additive):
            # the additive parts: those of a set with spread parents add up within what the
            # absorptions of the cluster-layers holding them leave beyond the mus and links
            held = {K for _, K in absorb if K & nodes}
            room = sum(cost - mu for (_, K), (cost, mu) in absorb.items() if K in held)
            room -= sum(terms["links"][K] for K in held)
            claim = sum(additive[y][0] for y in nodes)
            assert claim <= room + 1e-9 * max(1.0, claim), (network.edges, mapping, sorted(nodes), claim, room)
            checks, tight = checks + 1, tight + math.isclose(claim, room)
    return checks, tight


def spread_sets(network: Network, additive: dict) -> list[frozenset]:
    """Every set of two to four nodes of one layer, each with an additive part, whose
    parents are spread (every subset: the sum of the sizes of its nodes' parents is at most
    the size of their union)."""
    size = lambda nodes: math.prod(network.card(x) for x in nodes)  # noqa: E731
    layer = layers(network)
    found = []
    for l in set(layer.values()):
        members = [y for y in network.nodes if layer[y] == l and y in additive]
        for r in range(2, min(4, len(members)) + 1):
            for nodes in itertools.combinations(members, r):
                if all(sum(size(additive[y][1]) for y in sub) <= size(set().union(*(additive[y][1] for y in sub)))
                       for k in range(2, r + 1) for sub in itertools.combinations(nodes, k)):
                    found.append(frozenset(nodes))
    return found


ORACLE_MODELS = [DcmapCost(), DcmapCost(order="paper"), DcmapCost(addition=1.5), DcmapCost(addition=0.0)]


def oracle_networks(count: int, most: int, seed: int):
    """``count`` random networks (every other one layered, every third with an observed
    node), each with at most ``most`` of its feasible mappings (a seeded sample)."""
    rng = random.Random(seed)
    for index in range(count):
        network = random_network(index, 4, 8) if index % 2 else layered_network(index)
        if index % 3 == 0:
            network = network.with_observed(network.nodes[:1])
        mappings = list(enumerate_mappings(network))
        yield network, (rng.sample(mappings, most) if len(mappings) > most else mappings)


def oracle_layers(count: int, most: int, seed: int):
    """For the mappings of :func:`oracle_networks` and every model of :data:`ORACLE_MODELS`:
    ``(network, model, mapping, terms, level)`` per layer of each mapping, ``terms`` the
    oracle's (:func:`absorption_terms`) and ``level`` the layer's cluster-layers."""
    for network, mappings in oracle_networks(count, most, seed):
        topo = Topology(network)
        for model in ORACLE_MODELS:
            for mapping in mappings:
                terms = absorption_terms(network, [topo.names(c) for c in mapping], model)
                layer = terms["layer"]
                for L in sorted({layer[next(iter(P))] for P in terms["excess"]}):
                    yield network, model, mapping, terms, [P for P in terms["excess"] if layer[next(iter(P))] == L]


def test_each_part_of_the_absorption_bounds_holds_in_every_mapping():
    checks = tight = 0
    for network, mappings in oracle_networks(120, 150, seed=5):
        for model in ORACLE_MODELS:
            got = check_absorption_bounds(network, mappings, model)
            checks, tight = checks + got[0], tight + got[1]
    assert checks > 30000 and tight > 1000  # the parts are often exactly what they claim


def test_the_absorptions_of_placed_cluster_layers_cost_at_least_their_bound():
    # the contract of absorption_lower_bound: in every mapping, the cluster-layer P that
    # holds the absorber pays at least the bound to absorb the children given to it
    # (any set of P's child cluster-layers that hold a child of the absorber), counted
    # by the oracle; the search gives each child to one absorber per layer
    checks = tight = ordered = 0
    for network, mappings in oracle_networks(80, 60, seed=7):
        topo = Topology(network)
        for model in ORACLE_MODELS:
            for mapping in mappings:
                terms = absorption_terms(network, [topo.names(c) for c in mapping], model)
                for P in {P for P, _ in terms["absorb"]}:
                    for x in P:
                        kids = sorted((K for P2, K in terms["absorb"] if P2 == P
                                       and any(x in network.parents[y] for y in K)), key=sorted)
                        for r in range(1, len(kids) + 1):
                            for given in itertools.combinations(kids, r):
                                cost = sum(terms["absorb"][(P, K)][0] for K in given)
                                bound = model.absorption_lower_bound(
                                    network, x, tuple((K, terms["message"][K]) for K in given))
                                assert bound <= cost + 1e-9 * max(1.0, cost), (
                                    network.edges, mapping, sorted(P), x, [sorted(K) for K in given])
                                checks += 1
                                tight += math.isclose(bound, cost)
                                ordered += r > 1 and math.isclose(bound, cost)
    assert checks > 100_000 and tight > 50_000 and ordered > 20_000


def test_parents_apart_or_together_cost_at_least_their_grouping_bound():
    # the contract of grouping_trade_offs: in every mapping, for the placed cluster-layers K
    # below a layer L and any set of whole cluster-layers of L (the unplaced part of the
    # next layer to build), each K with two or more parents there, those cluster-layers pay
    # at least least_grouping of the Ks' trade-offs: in further absorptions of each K's
    # message (all but the one holding its first parent) and in the excess of their
    # eliminations, counted by the oracle; for one K alone, the least excess + absorptions
    checks = tight = joint = 0
    for network, model, mapping, terms, level in oracle_layers(80, 60, seed=9):
        absorb, excess, layer = terms["absorb"], terms["excess"], terms["layer"]
        below = [K for K in terms["message"] if layer[next(iter(K))] < layer[next(iter(level[0]))]]
        for r in range(1, len(level) + 1):
            for unplaced in itertools.combinations(level, r):
                nodes = frozenset().union(*unplaced)
                fronts, costs = [], []
                for K in below:
                    parents = tuple(x for x in network.nodes if x in nodes and any(x in network.parents[y] for y in K))
                    if len(parents) < 2:
                        continue
                    fronts.append(model.grouping_trade_offs(network, K, terms["message"][K], parents, nodes))
                    costs.append(sum(absorb[(P, K)][0] for P in unplaced if (P, K) in absorb and parents[0] not in P))
                    alone = min(e + a for e, a in fronts[-1])
                    cost = costs[-1] + sum(excess[P] for P in unplaced if len(P & set(parents)) >= 2)
                    assert alone <= cost + 1e-9 * max(1.0, cost), (network.edges, mapping, sorted(K), parents,
                                                                    sorted(nodes))
                    checks += 1
                    tight += alone > 0 and math.isclose(alone, cost)
                if len(fronts) >= 2:
                    bound = least_grouping(fronts)
                    cost = sum(costs) + sum(excess[P] for P in unplaced)
                    assert bound <= cost + 1e-9 * max(1.0, cost), (network.edges, mapping, sorted(nodes))
                    joint += bound > max(min(e + a for e, a in front) for front in fronts)
    assert checks > 20_000 and tight > 2_000 and joint > 100


def test_a_layer_costs_at_least_its_bound_for_the_children_below():
    # the contract of layer_lower_bound: in every mapping, the cluster-layers of a layer L
    # pay at least the bound, for the cluster-layers below L with parents in L, in
    # absorptions of their messages and in the excess of their eliminations (the oracle's)
    checks = tight = 0
    for network, model, mapping, terms, level in oracle_layers(80, 60, seed=11):
        absorb, excess, layer = terms["absorb"], terms["excess"], terms["layer"]
        L = layer[next(iter(level[0]))]
        nodes = tuple(x for x in network.nodes if layer[x] == L)
        children = tuple((K, terms["message"][K]) for K in terms["message"] if layer[next(iter(K))] < L
                         and any(p in nodes for y in K for p in network.parents[y]))
        if not children:
            continue
        cost = sum(absorb[(P, K)][0] for P in level for K, _ in children if (P, K) in absorb)
        cost += sum(excess[P] for P in level)
        bound = model.layer_lower_bound(network, children, nodes)
        assert bound <= cost + 1e-9 * max(1.0, cost), (network.edges, mapping, L)
        checks += 1
        tight += bound > 0 and math.isclose(bound, cost)
    assert checks > 1_000 and tight > 100


def test_the_grouping_bound_takes_the_cheaper_of_apart_and_together():
    # hailfinder's top: CombVerMo's message holds its three parents (4 states each, roots),
    # all in the last layer. Together, the first elimination multiplies the other two in
    # and the second the third (4 (16 - 1) + 4 (4 - 1) = 72); all apart, two more absorptions of the 64-entry message that keep
    # 4 entries each (0.6 (64 - 4) + 4 = 40 each); the other two together, one more
    # absorption keeping 16 entries (0.6 (64 - 16) + 16) and an excess of 4 (4 - 1) = 56.8;
    # cheapest: the first with one other (an excess of 12), the third apart (40)
    states = {"N0": 4, "Subj": 4, "QG": 4, "Comb": 3}
    network = Network("top", list(states), states, [("N0", "Comb"), ("Subj", "Comb"), ("QG", "Comb")])
    model = DcmapCost()
    message = frozenset({"N0", "Subj", "QG"})
    front = model.grouping_trade_offs(network, frozenset({"Comb"}), message, ("N0", "Subj", "QG"),
                                      frozenset({"N0", "Subj", "QG"}))
    assert min(e + a for e, a in front) == pytest.approx(12 + 0.6 * 60 + 4)
    # the trade-offs: all apart (no excess, 80), the first with one other (12, 40), all
    # together (72, none)
    assert front == (pytest.approx((0.0, 80.0)), pytest.approx((12.0, 40.0)), pytest.approx((72.0, 0.0)))


def test_the_absorption_bound_takes_the_cheapest_order_of_absorption():
    # x (2 states, parent p of 3) absorbs the messages of y1 {x} and y2 {x, p}: alone,
    # 2 and 6 to multiply in; together the running scope holds {x, p} for whichever comes
    # second, so the least total is 2 + 6 (y1 first), not 6 + 6
    states = {"p": 3, "x": 2, "y1": 2, "y2": 2}
    network = Network("order", list(states), states, [("p", "x"), ("x", "y1"), ("x", "y2"), ("p", "y2")])
    model = DcmapCost()
    y1 = (frozenset({"y1"}), frozenset({"x"}))
    y2 = (frozenset({"y2"}), frozenset({"x", "p"}))
    assert model.absorption_lower_bound(network, "x", (y1,)) == pytest.approx(2.0)
    assert model.absorption_lower_bound(network, "x", (y2,)) == pytest.approx(6.0)
    assert model.absorption_lower_bound(network, "x", (y1, y2)) == pytest.approx(8.0)
    assert model.absorption_lower_bound(network, "x", (y2, y1)) == pytest.approx(8.0)
    # the cost of {x} absorbing both, with its elimination (6 to multiply, x summed out)
    ctx = CostContext(frozenset({"x"}), 1, network, sort_children([
        ChildClusterLayer(y1[0], 0, True, y1[1]), ChildClusterLayer(y2[0], 0, True, y2[1])]))
    assert model.evaluate(ctx)[0] == pytest.approx(8.0 + 6 + 0.6 * 6 / 2)


def test_grouped_parents_are_charged_for_their_own_eliminations():
    # y's parents x1, x2 (layer 2) share a cluster-layer with z, a parent of y's
    # cluster-layer mate y2 with the smallest CPT: z is eliminated first and multiplies
    # x1 and x2 in (3 more than its CPT), then x1 finds x2 in the scope (4 (2 - 1) more).
    # The bound charges x1's elimination: the terms of the grouped parents' own
    # eliminations, whatever the cluster-layer eliminates before them
    states = {"r": 2, "x1": 2, "x2": 2, "z": 1, "u": 4, "y": 2, "y2": 2, "v": 2}
    edges = [("r", "x1"), ("r", "x2"), ("r", "u"), ("x1", "y"), ("x2", "y"), ("u", "y"), ("z", "y2"), ("y", "v"),
             ("y2", "v")]
    network = Network("grouped", list(states), states, edges)
    clusters = [["x1", "x2", "z", "y", "y2", "v"], ["r"], ["u"]]
    check_mapping(network, clusters)
    model = DcmapCost()
    # x1 and x2 grouped: 0.6 (16 - 4) + 4 (2 - 1); u apart: 0.6 (16 - 4)
    assert model.absorbed_lower_bounds(network)["y"] == pytest.approx(0.6 * 12 + 4 + 0.6 * 12)
    mapping = [Topology(network).mask(c) for c in clusters]
    checks, tight = check_absorption_bounds(network, [mapping], model)
    assert checks and tight >= 1  # v's absorbed part


# --------------------------------------------------------------------------- tables past the float range


def huge_network(states: int) -> Network:
    """Y below X1 (parents P1, P2) and X2 (parents P3, P4); the roots have ``states`` states."""
    states_of = {p: states for p in ("P1", "P2", "P3", "P4")} | {"X1": 2, "X2": 2, "Y": 2}
    edges = [("P1", "X1"), ("P2", "X1"), ("P3", "X2"), ("P4", "X2"), ("X1", "Y"), ("X2", "Y")]
    return Network("huge", list(states_of), states_of, edges)


def test_a_table_past_the_float_range_costs_inf_and_is_never_optimal():
    # X1's and X2's CPTs have 2e220 entries each, but a cluster-layer {X1, X2} holds
    # all four roots: 1e440 entries. Before, this raised OverflowError.
    from dcmap_dist.solve import solve

    network = huge_network(10**110)
    model = DcmapCost()
    assert model.naive(network) == math.inf
    merged = evaluate_mapping(network, [["X1", "X2", "Y"], ["P1"], ["P2"], ["P3"], ["P4"]], model)
    assert {c.nodes: c.cost for c in merged}[frozenset({"X1", "X2"})] == math.inf
    assert all(math.isfinite(b) for b in model.node_lower_bounds(network).values())
    children = ((frozenset({"X1", "X2"}), frozenset({"P1", "P2", "P3", "P4"})),)
    assert model.absorption_lower_bound(network, "P1", children) == math.inf
    brute = solve(network, method="brute")
    assert math.isfinite(brute.optimal_cost) and brute.proven_optimal
    for method in ("dcmap", "bfs"):
        result = solve(network, method=method)
        assert result.proven_optimal
        assert result.optimal_cost == pytest.approx(brute.optimal_cost, rel=1e-9)
        assert ({partition(s.clusters) for s in result.solutions}
                == {partition(s.clusters) for s in brute.solutions})


def test_absorption_bound_with_a_zero_addition_weight_is_not_nan():
    # nothing to marginalise: what P1's cluster-layer keeps of the message, {P1}
    network = huge_network(10**200)
    children = ((frozenset({"X1"}), frozenset({"P1", "P2", "X1"})),)
    assert DcmapCost(addition=0.0).absorption_lower_bound(network, "P1", children) == float(network.card("P1"))


def test_a_network_whose_single_nodes_pass_the_float_range_is_an_error():
    network = huge_network(10**200)  # X1's CPT alone: 2e400 entries
    with pytest.raises(CostError, match=r"dcmap cost of 'huge' passes the floating-point range.*"
                                        r"node 'X1' alone has a table of 2\.000e\+400 entries"):
        DcmapCost().evaluate(CostContext(frozenset({"Y"}), 0, network, ()))
    with pytest.raises(CostError, match="floating-point range"):
        DcmapCost().node_lower_bounds(network)
    assert DcmapCost().naive(network) == math.inf  # `dcmap info` still works


def test_a_node_with_more_states_than_a_float_holds_is_counted_not_an_overflow():
    network = Network("vast", ["A", "B"], {"A": 10**400, "B": 2}, [("A", "B")])
    assert DcmapCost().naive(network) == math.inf  # `dcmap info` prints "past the float range"
    with pytest.raises(CostError, match="node 'B' alone has a table of 2.000e\\+400 entries"):
        DcmapCost().node_lower_bounds(network)
    small = Network("small", ["A"], {"A": 3}, [])
    assert DcmapCost().naive(small) == 3 + 0.6 * 3 * 2 / 3  # the weight is computed as before


# --------------------------------------------------------------------------- the canonical order


def relisted(network: Network, seed: int) -> Network:
    """The same network with its nodes and arcs listed in another order."""
    rng = random.Random(seed)
    nodes = list(network.nodes)
    edges = list(network.edges)
    rng.shuffle(nodes)
    rng.shuffle(edges)
    return Network(network.name, nodes, network.states, edges, network.observed)


def test_canonical_costs_do_not_depend_on_the_listing_order():
    differs = 0
    for seed in range(30):
        network = random_network(seed)
        other = relisted(network, seed + 1000)
        mappings = list(itertools.islice(enumerate_mappings(network), 200))
        topo = Topology(network)
        for clusters in mappings:
            names = [topo.names(c) for c in clusters]
            assert (total(network, names, DcmapCost(order="canonical"))
                    == total(other, names, DcmapCost(order="canonical")))
            differs += total(network, names, DcmapCost()) != total(other, names, DcmapCost())
    assert differs  # the cpt order does depend on it


def test_canonical_order_keeps_the_paper_figures(paper):
    model = DcmapCost(order="canonical")
    assert model.naive(paper) == pytest.approx(85.8)
    for clusters in OPTIMAL:
        assert total(paper, clusters, model) == pytest.approx(54.0)


def test_canonical_solutions_do_not_depend_on_the_listing_order():
    from dcmap_dist.solve import solve

    for seed in range(8):
        network = random_network(seed)
        results = [solve(n, order="canonical") for n in (network, relisted(network, seed))]
        assert results[0].optimal_cost == results[1].optimal_cost
        assert ({partition(s.clusters) for s in results[0].solutions}
                == {partition(s.clusters) for s in results[1].solutions})


# --------------------------------------------------------------------------- regression


@pytest.mark.slow
def test_elimination_order_is_not_stale_after_id_reuse():
    """Caches live on each network: networks created and discarded in turn (so that
    Python may reuse their ids) with the same names but other cards cost as they should."""
    model = DcmapCost()
    for k in range(200):
        cards = (2, 3) if k % 2 == 0 else (3, 2)
        network = Network("reuse", ["x", "y", "z"], {"x": cards[0], "y": cards[1], "z": 2},
                          [("x", "z"), ("y", "z")])
        unique = Network("fresh", [f"x{k}", f"y{k}", f"z{k}"],
                         {f"x{k}": cards[0], f"y{k}": cards[1], f"z{k}": 2},
                         [(f"x{k}", f"z{k}"), (f"y{k}", f"z{k}")])
        # x, y summed out in ascending CPT order: 6*1.3 + 3*1.4 = 12.0 (not 6*1.4 + 2*1.3 = 11.0)
        assert model.naive(network) == pytest.approx(model.naive(unique))
        assert model.naive(network) == pytest.approx(15.6 + 12.0)  # z: 12 * 1.3
        del network, unique
        gc.collect()
