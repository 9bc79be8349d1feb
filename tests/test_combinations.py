"""Tests of search/combinations.py: generatecombos, the proposals of one expansion."""

from __future__ import annotations

from dcmap_dist.search.combinations import generatecombos


def test_generatecombos_paper_example():
    """Equation egUhat: proposals {2: X2, X3; 3: X1, X2, X3}. X1 is proposed only by
    cluster 3 (Z1 = {X1}); nothing is mapped yet (Z3 = {})."""
    proposals = {2: ["X2", "X3"], 3: ["X1", "X2", "X3"]}
    only = {x for x in proposals[3] if all(x not in proposals[k] for k in proposals if k != 3)}
    assert only == {"X1"}
    combos = generatecombos(proposals[3], only, set())
    assert len(combos) == len(set(combos)) == 4
    assert set(combos) == {frozenset({"X1"}), frozenset({"X1", "X2"}), frozenset({"X1", "X3"}),
                           frozenset({"X1", "X2", "X3"})}
    # as cluster vectors u(X1, X2, X3): a node not taken by cluster 3 goes to cluster 2
    u = sorted(tuple(3 if x in c else 2 for x in ("X1", "X2", "X3")) for c in combos)
    assert u == [(3, 2, 2), (3, 2, 3), (3, 3, 2), (3, 3, 3)]
    # the first combination is Z1 alone
    assert combos[0] == frozenset({"X1"})


def test_generatecombos_with_nodes_mapped_elsewhere():
    # X2 already mapped elsewhere (Z3): only X3 is optional
    combos = generatecombos(["X1", "X2", "X3"], {"X1"}, {"X2"})
    assert sorted(map(sorted, combos)) == [["X1"], ["X1", "X3"]]
    # everything already decided: one combination, Z1 itself
    assert generatecombos(["X1", "X2"], {"X1"}, {"X2"}) == [frozenset({"X1"})]
    # nothing forced: the empty combination is included (the cluster takes no node)
    combos = generatecombos(["a", "b", "c"], set(), {"c"})
    assert set(combos) == {frozenset(), frozenset("a"), frozenset("b"), frozenset("ab")}
    # subsets of size k for every k: 2^|Z2| combinations, no duplicates
    z = [f"x{i}" for i in range(6)]
    combos = generatecombos(z, {"x0"}, {"x5"})
    assert len(combos) == len(set(combos)) == 2 ** 4
    assert all("x0" in c and "x5" not in c for c in combos)
