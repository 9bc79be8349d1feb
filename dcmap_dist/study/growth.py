"""Growth rates: fit ``y = c * n ** b`` by least squares on log-log axes, with a
confidence interval for the exponent ``b`` from Student's t distribution.

The fit is ordinary least squares of ``log10 y`` on ``log10 n``. The slope's
standard error is ``sqrt(SSE / (N - 2) / Sxx)`` and its interval ``b +- t * se``,
``t`` the ``(1 + confidence) / 2`` quantile of the t distribution with ``N - 2``
degrees of freedom, computed here (no scipy) by bisection on its distribution
function, which is a regularized incomplete beta function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PowerFit", "fit_power", "regularized_beta", "t_cdf", "t_quantile"]


@dataclass(frozen=True)
class PowerFit:
    """A fit of ``y = c * n ** slope``: ``intercept`` is ``log10 c``; ``low`` and ``high``
    bound the slope at the ``confidence`` level; ``r_squared`` is that of the
    log-log line; ``points`` how many (n, y) pairs were fitted."""

    slope: float
    low: float
    high: float
    intercept: float
    r_squared: float
    points: int
    confidence: float

    def supports(self, exponent: float) -> bool:
        """Whether ``exponent`` lies inside the slope's confidence interval."""
        return self.low <= exponent <= self.high

    def predict(self, n: float | np.ndarray) -> float | np.ndarray:
        """The fitted ``c * n ** slope``."""
        return 10.0 ** self.intercept * np.asarray(n, dtype=float) ** self.slope


def fit_power(n: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> PowerFit:
    """Fit ``y = c * n ** b`` by least squares on log-log axes (see the module's docstring).

    Raises ValueError when the lengths differ, there are fewer than 3 points, a value
    is not a positive finite number, all ``n`` are equal, or ``confidence`` is not
    between 0 and 1.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    if len(n) != len(y):
        raise ValueError(f"n and y must have the same length, got {len(n)} and {len(y)}")
    if len(n) < 3:
        raise ValueError(f"a power fit needs at least 3 points (its interval has N - 2 degrees of freedom), "
                         f"got {len(n)}")
    for name, values in (("n", n), ("y", y)):
        bad = [v for v in values if not (isinstance(v, (int, float, np.number)) and 0 < v < math.inf)]
        if bad:
            raise ValueError(f"a power fit needs positive finite values: {name} holds {bad[0]!r}")
    x = np.log10(np.asarray(n, dtype=float))
    v = np.log10(np.asarray(y, dtype=float))
    sxx = float(np.sum((x - x.mean()) ** 2))
    if sxx == 0:
        raise ValueError("all n are equal: the growth exponent is undefined")
    slope = float(np.sum((x - x.mean()) * (v - v.mean()))) / sxx
    intercept = float(v.mean() - slope * x.mean())
    sse = float(np.sum((v - intercept - slope * x) ** 2))
    syy = float(np.sum((v - v.mean()) ** 2))
    degrees = len(x) - 2
    half = t_quantile((1 + confidence) / 2, degrees) * math.sqrt(sse / degrees / sxx)
    return PowerFit(slope=slope, low=slope - half, high=slope + half, intercept=intercept,
                    r_squared=1 - sse / syy if syy > 0 else 1.0, points=len(x), confidence=confidence)


def t_quantile(p: float, degrees: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``degrees`` degrees of freedom
    (e.g. ``t_quantile(0.975, 5) = 2.5706``), to about 1e-12 relative."""
    if not 0 < p < 1:
        raise ValueError(f"p must be between 0 and 1, got {p!r}")
    if not degrees > 0:
        raise ValueError(f"the degrees of freedom must be positive, got {degrees!r}")
    if p < 0.5:
        return -t_quantile(1 - p, degrees)
    low, high = 0.0, 1.0
    while t_cdf(high, degrees) < p:
        low, high = high, 2 * high
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        if t_cdf(middle, degrees) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def t_cdf(t: float, degrees: float) -> float:
    """Student's t distribution function: ``P(T <= t)`` with ``degrees`` degrees of freedom."""
    tail = 0.5 * regularized_beta(degrees / (degrees + t * t), degrees / 2, 0.5)
    return 1 - tail if t > 0 else tail


def regularized_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)``, by its continued fraction."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):  # where the fraction converges fast
        return front * _beta_fraction(x, a, b) / a
    return 1 - front * _beta_fraction(1 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz method)."""
    tiny = 1e-300
    c = 1.0
    d = 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 1000):
        for step in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                     -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + step * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + step / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-15:
            return fraction
    raise ArithmeticError(f"the incomplete beta fraction did not converge (x={x}, a={a}, b={b})")
