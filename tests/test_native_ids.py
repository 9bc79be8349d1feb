"""The core's ids are typed (search/native/ids.hpp, docs/engine.md "Typed ids"): a mix-up of
one kind of id for another is found by the compiler, not at run time. The tests compile a
few lines against the headers (syntax only: g++ -fsyntax-only): concepts that say which
calls take which ids, and a planted mix-up; skipped where there is no g++."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[1] / "dcmap_dist" / "search" / "native"
GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="no g++ to compile the headers with")

# each line: whether the call compiles with these kinds of id (true: the right kinds)
CHECKS = """#include <type_traits>
#include <vector>
#include "branch.hpp"
#include "store.hpp"
using namespace dcmap;
using S = Store<1>;
template <class A> concept mask_of = requires(S s, A a) { s.mask(a); };
template <class A, class B> concept item_of = requires(S s, A a, B b) { s.item(a, b); };
template <class A> concept items_of = requires(S s, A a) { s.items_of(a); };
template <class A> concept seq_of = requires(S s, std::vector<A> a) { s.seq(a); };
template <class A, class B> concept full_key = requires(A a, B b) { Key::full_done(0, a, b); };
template <class A, class B> concept comparable = requires(A a, B b) { a == b; };

static_assert(mask_of<MaskId> && !mask_of<ItemId> && !mask_of<SeqId> && !mask_of<uint32_t>);
static_assert(item_of<MaskId, MessageId> && !item_of<ItemId, MessageId> && !item_of<MaskId, MaskId>);
static_assert(items_of<SeqId> && !items_of<MaskId> && !items_of<ItemId>);
static_assert(seq_of<MaskId> && seq_of<ItemId> && !seq_of<SeqId> && !seq_of<MessageId>);
static_assert(full_key<SeqId, SeqId> && !full_key<MaskId, SeqId> && !full_key<SeqId, ItemId>);
static_assert(comparable<MaskId, MaskId> && !comparable<MaskId, ItemId> && !comparable<SeqId, uint32_t>);
static_assert(!std::is_convertible_v<uint32_t, MaskId> && !std::is_convertible_v<uint32_t, ItemId> &&
              !std::is_convertible_v<uint32_t, SeqId> && !std::is_convertible_v<uint32_t, MessageId> &&
              !std::is_convertible_v<uint32_t, BigMaskId> && std::is_constructible_v<MaskId, uint32_t>);
static_assert(!std::is_convertible_v<MaskId, uint32_t>);  // nor read as one but by value()
static_assert(MaskId(7).value() == 7 && MaskId::none().is_none() && MaskId(1) < MaskId(2));
"""

PLANTED = """#include "store.hpp"
int main() {
    dcmap::Store<1> s;
    dcmap::MaskId m = s.mask(dcmap::Bits<1>::bit(0));
    dcmap::ItemId i = s.item(m, dcmap::MessageId(0));
    return s.mask(i).count();  // an item id where a mask id is expected
}
"""


def compile_errors(tmp_path: Path, source: str) -> str | None:
    """g++'s errors for ``source``, or None if it compiles."""
    path = tmp_path / "ids.cpp"
    path.write_text(source)
    run = subprocess.run([GXX, "-std=c++20", "-fsyntax-only", f"-I{NATIVE}", str(path)], capture_output=True,
                         text=True)
    return None if run.returncode == 0 else run.stderr


def test_each_call_takes_ids_of_its_kinds_only(tmp_path):
    assert compile_errors(tmp_path, CHECKS) is None


def test_a_planted_mix_up_does_not_compile(tmp_path):
    errors = compile_errors(tmp_path, PLANTED)
    assert errors is not None and "dcmap::Store<1>::mask(dcmap::ItemId&)" in errors, errors
