"""SPEC section 3's tolerance: two costs that differ by less than a relative 1e-9 are
equal (a sum taken in another order may differ in its last bits)."""

from __future__ import annotations

__all__ = ["TOLERANCE", "within"]

TOLERANCE = 1e-9


def within(cost: float, bound: float) -> bool:
    """``cost <= bound`` up to the relative tolerance of SPEC section 3."""
    return cost <= bound + TOLERANCE * abs(bound)
