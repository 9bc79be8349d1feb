"""Tests of the BIF reader on the bnlearn files and on small bad inputs."""

from __future__ import annotations

import gzip
from pathlib import Path

import networkx as nx
import pytest
from shared_networks import NETWORKS

from dcmap_dist.io.bif import parse_bif, read_bif
from dcmap_dist.model.network import NetworkError

if not NETWORKS.is_dir():
    pytest.skip(f"no network directory {NETWORKS}", allow_module_level=True)

# (nodes, arcs) as published by the bnlearn repository.
PUBLISHED = {
    "asia": (8, 8),
    "cancer": (5, 4),
    "earthquake": (5, 4),
    "sachs": (11, 17),
    "survey": (6, 6),
    "alarm": (37, 46),
    "barley": (48, 84),
    "child": (20, 25),
    "insurance": (27, 52),
    "mildew": (35, 46),
    "water": (32, 66),
    "hailfinder": (56, 66),
    "hepar2": (70, 123),
    "win95pts": (76, 112),
    "pathfinder": (109, 195),
    "andes": (223, 338),
    "diabetes": (413, 602),
    "pigs": (441, 592),
    "link": (724, 1125),
    "munin1": (186, 273),
    "munin2": (1003, 1244),
    "munin3": (1041, 1306),
    "munin4": (1038, 1388),
    "munin": (1041, 1397),
}

SMALL = """
network test {
}
variable a {
  type discrete [ 2 ] { yes, no };
}
variable b {
  type discrete [ 3 ] { x, y, z };
}
probability ( a ) {
  table 0.5, 0.5;
}
probability ( b | a ) {
  (yes) 0.1, 0.2, 0.7;
  (no) 0.3, 0.3, 0.4;
}
"""


def test_every_file_is_present() -> None:
    files = sorted(p.name for p in NETWORKS.glob("*.bif.gz"))
    assert files == sorted(f"{n}.bif.gz" for n in PUBLISHED)


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_counts(name: str) -> None:
    net = read_bif(NETWORKS / f"{name}.bif.gz")
    assert net.name == name
    assert (len(net.nodes), len(net.edges)) == PUBLISHED[name]


def test_asia_facts() -> None:
    net = read_bif(NETWORKS / "asia.bif.gz")
    assert net.nodes[:4] == ("asia", "tub", "smoke", "lung")
    assert net.parents["tub"] == ("asia",)
    assert set(net.states.values()) == {2}
    assert net.edges[:2] == (("asia", "tub"), ("smoke", "lung"))


def test_alarm_long_arcs() -> None:
    net = read_bif(NETWORKS / "alarm.bif.gz")
    graph = net.digraph()
    layer: dict[str, int] = {}
    for x in reversed(list(nx.topological_sort(graph))):
        layer[x] = max((layer[c] + 1 for c in graph.successors(x)), default=0)
    assert sum(1 for u, v in net.edges if layer[u] - layer[v] > 1) == 18


def test_small_text_with_comments_and_odd_names() -> None:
    text = """// a line comment
    network unknown { property "x"; }
    /* a block
       comment */
    variable n.1-a_2 { property foo = bar; type discrete [ 3 ] { <5, 5-12, 12+ }; }
    variable 2b
    {
      type discrete[2]{Asy/Patch,Transp.};   // trailing
    }
    probability(n.1-a_2){table 0.2,0.3,0.5;}
    probability ( 2b |
                  n.1-a_2 ) { (<5) 0.1, 0.9; (5-12) 0.5, 0.5; (12+) 0.3, 0.7; }
    """
    net = parse_bif(text, "mine")
    assert net.name == "mine"
    assert net.nodes == ("n.1-a_2", "2b")
    assert net.states == {"n.1-a_2": 3, "2b": 2}
    assert net.edges == (("n.1-a_2", "2b"),)


def test_network_name_and_edge_order() -> None:
    text = SMALL + """
variable c {
  type discrete [ 2 ] { t, f };
}
probability ( c | b, a ) {
  table 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5;
}
"""
    net = parse_bif(text, "ignored")
    assert net.name == "test"
    assert net.edges == (("a", "b"), ("b", "c"), ("a", "c"))
    assert net.parents["c"] == ("a", "b")


def test_undeclared_variable() -> None:
    text = SMALL + "probability ( ghost | a ) { (yes) 1.0; (no) 1.0; }\n"
    with pytest.raises(NetworkError, match="undeclared variable 'ghost'"):
        parse_bif(text)


def test_undeclared_parent() -> None:
    text = SMALL.replace("( b | a )", "( b | ghost )")
    with pytest.raises(NetworkError, match="parent 'ghost' of 'b'"):
        parse_bif(text)


def test_duplicate_variable() -> None:
    again = "variable a {\n  type discrete [ 2 ] { yes, no };\n}\n"
    text = SMALL.replace("variable b {", again + "variable b {")
    message = r"line 7: variable 'a' is declared twice \(first at line 4\)"
    with pytest.raises(NetworkError, match=message):
        parse_bif(text)


def test_duplicate_probability_block() -> None:
    text = SMALL + "probability ( a ) {\n  table 0.5, 0.5;\n}\n"
    with pytest.raises(NetworkError, match="second probability block for 'a'"):
        parse_bif(text)


def test_state_count_mismatch() -> None:
    text = SMALL.replace("[ 3 ] { x, y, z }", "[ 3 ] { x, y }")
    with pytest.raises(NetworkError, match="variable 'b' declares 3 states but lists 2"):
        parse_bif(text)


def test_missing_probability_block() -> None:
    text = SMALL + "variable lonely {\n  type discrete [ 2 ] { p, q };\n}\n"
    with pytest.raises(NetworkError, match="variable 'lonely' has no probability block"):
        parse_bif(text)


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "probability ( a ) {",
            "probabilty ( a ) {",
            r"line 10: expected 'variable NAME \{' or 'probability",
        ),
        (
            "type discrete [ 3 ]",
            "type discrete [ three ]",
            r"line 8: expected 'type discrete .* in variable 'b'",
        ),
        ("( b | a )", "( b | a | a )", r"line 13: malformed probability block head \( b \| a \| a \)"),
        ("network test {", "net test {", r"line 2: expected 'network NAME \{', found 'net test \{'"),
        (
            "(no) 0.3, 0.3, 0.4;\n}",
            "(no) 0.3, 0.3, 0.4;\n",
            r"line 13: the probability block for 'b' is not closed",
        ),
    ],
)
def test_malformed_text(old: str, new: str, message: str) -> None:
    with pytest.raises(NetworkError, match=message):
        parse_bif(SMALL.replace(old, new))


def test_cycle() -> None:
    text = SMALL.replace("probability ( a ) {", "probability ( a | b ) {")
    with pytest.raises(NetworkError, match="cycle"):
        parse_bif(text)


@pytest.mark.parametrize("text", ["", "  \n\n", "// only a comment\n"])
def test_empty_file(text: str) -> None:
    with pytest.raises(NetworkError, match="empty"):
        parse_bif(text)


def test_read_plain_and_gzipped(tmp_path: Path) -> None:
    plain = tmp_path / "small.bif"
    plain.write_text(SMALL.replace("network test", "network unknown"), encoding="utf-8")
    packed = tmp_path / "packed.bif.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(SMALL.replace("network test", "network unknown"))
    for path, name in [(plain, "small"), (str(packed), "packed")]:
        net = read_bif(path)
        assert net.name == name
        assert net.nodes == ("a", "b")
        assert net.edges == (("a", "b"),)


def test_read_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.bif"
    path.write_text(SMALL.replace("[ 3 ]", "[ 4 ]"), encoding="utf-8")
    with pytest.raises(NetworkError, match="bad.bif: line 8: variable 'b'"):
        read_bif(path)
    with pytest.raises(NetworkError, match="no such file"):
        read_bif(tmp_path / "missing.bif")


def test_latin1_and_byte_order_mark(tmp_path: Path) -> None:
    """BIF files written by some tools are Latin-1; others start with a UTF-8 BOM."""
    text = SMALL.replace("variable a", "variable caf\u00e9").replace("( a )", "( caf\u00e9 )")
    text = text.replace("( b | a )", "( b | caf\u00e9 )")
    latin = tmp_path / "latin.bif"
    latin.write_bytes(text.encode("latin-1"))
    assert read_bif(latin).nodes == ("caf\u00e9", "b")
    bom = tmp_path / "bom.bif"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_bif(bom).nodes == ("caf\u00e9", "b")
