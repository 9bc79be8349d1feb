"""Power-law fits on log-log axes and the t quantiles of their intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dcmap_dist.study.growth import fit_power, regularized_beta, t_cdf, t_quantile


@pytest.mark.parametrize("p, degrees, table", [
    (0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 5, 2.571), (0.975, 10, 2.228), (0.975, 30, 2.042),
    (0.95, 10, 1.812), (0.995, 3, 5.841), (0.9995, 20, 3.850), (0.975, 10**6, 1.960),
])
def test_t_quantiles_match_the_table(p, degrees, table):
    assert t_quantile(p, degrees) == pytest.approx(table, abs=5e-4)
    assert t_quantile(1 - p, degrees) == pytest.approx(-table, abs=5e-4)


def test_t_distribution_closed_forms():
    for t in (-30.0, -1.0, 0.0, 0.3, 2.0, 12.706):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-13)  # Cauchy
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-13)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-12)
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-11)


def test_regularized_beta_special_cases():
    for x in (0.0, 0.01, 0.3, 0.5, 0.9, 1.0):
        assert regularized_beta(x, 1, 1) == pytest.approx(x, abs=1e-14)
        assert regularized_beta(x, 3.5, 1) == pytest.approx(x ** 3.5, abs=1e-14)
        assert regularized_beta(x, 2, 3) == pytest.approx(1 - regularized_beta(1 - x, 3, 2), abs=1e-14)


def test_exact_power_data_give_the_exponent():
    n = [5, 10, 20, 40, 80]
    fit = fit_power(n, [3 * x ** 2.5 for x in n])
    assert fit.slope == pytest.approx(2.5, abs=1e-12)
    assert fit.intercept == pytest.approx(math.log10(3), abs=1e-12)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.high - fit.low < 1e-9 and fit.points == 5
    assert fit.predict(160) == pytest.approx(3 * 160 ** 2.5, rel=1e-9)


def test_three_points_by_hand():
    # log10: x = 0, 1, 2 and v = 0, 2, 3: slope 3 / 2, intercept 5/3 - 3/2 = 1/6,
    # residuals -1/6, 1/3, -1/6: SSE 1/6, se = sqrt(SSE / 1 / Sxx) = sqrt(1/12), Syy = 14/3
    fit = fit_power([1, 10, 100], [1, 100, 1000])
    assert fit.slope == pytest.approx(1.5)
    assert fit.intercept == pytest.approx(1 / 6)
    assert fit.r_squared == pytest.approx(1 - (1 / 6) / (14 / 3))
    half = 12.7062047362 * math.sqrt(1 / 12)
    assert (fit.low, fit.high) == (pytest.approx(1.5 - half), pytest.approx(1.5 + half))
    assert fit.supports(2) and fit.supports(-2) and not fit.supports(5.2)


def test_noisy_data_cover_the_true_exponent_at_the_stated_rate():
    rng = np.random.default_rng(12)
    n = np.geomspace(8, 200, 25)
    fit = fit_power(n, 5 * n ** 2 * rng.lognormal(0, 0.3, n.size))
    assert fit.supports(2.0) and not fit.supports(3.0)
    covered = sum(fit_power(n, 5 * n ** 2 * rng.lognormal(0, 0.3, n.size)).supports(2.0) for _ in range(400))
    assert 0.92 <= covered / 400 <= 0.98  # 95% intervals


def test_a_wider_confidence_gives_a_wider_interval():
    n = [10, 20, 30, 40, 50]
    y = [110, 390, 950, 1580, 2600]
    narrow, wide = fit_power(n, y, 0.8), fit_power(n, y, 0.99)
    assert wide.low < narrow.low < narrow.slope < narrow.high < wide.high


@pytest.mark.parametrize("n, y, confidence, message", [
    ([1, 2], [1, 4], 0.95, "at least 3 points"),
    ([1, 2, 3], [1, 4], 0.95, "same length"),
    ([1, 2, 3], [1, 0, 9], 0.95, "positive finite values: y holds 0"),
    ([-1, 2, 3], [1, 4, 9], 0.95, "n holds -1"),
    ([1, 2, math.inf], [1, 4, 9], 0.95, "n holds inf"),
    ([4, 4, 4], [1, 4, 9], 0.95, "all n are equal"),
    ([1, 2, 3], [1, 4, 9], 1.0, "confidence must be between 0 and 1"),
])
def test_bad_input_is_refused(n, y, confidence, message):
    with pytest.raises(ValueError) as error:
        fit_power(n, y, confidence)
    assert message in str(error.value)
