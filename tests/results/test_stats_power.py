"""The statistics gdpo compare and the power plan read (gdpo_trl/results/stats.py): Student's t quantile, Welch's
interval, the paired t-test, McNemar's exact test and the power functions, on hand-computed values and against scipy
(a dev dependency: the stats oracle; the package itself computes them without it)."""

import math
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from gdpo_trl.results import stats as rs


@pytest.mark.parametrize(("p", "df"), [(0.975, 1), (0.975, 2), (0.975, 4), (0.995, 20), (0.6, 7.5), (0.025, 3.3),
                                       (0.9999, 2.2), (0.8, 1000)])  # fmt: skip
def test_t_quantile_against_scipy(p, df):
    assert rs.t_quantile(p, df) == pytest.approx(sps.t.ppf(p, df), rel=1e-12, abs=1e-12)
    assert rs.t_cdf(rs.t_quantile(p, df), df) == pytest.approx(p, abs=1e-13)


def test_t_quantile_hand_values():
    # df = 1 is Cauchy: the p quantile is tan(pi (p - 1/2)); df = 2: t = (2p - 1) sqrt(2 / (4p(1 - p))).
    assert rs.t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-12)
    assert rs.t_quantile(0.9, 2) == pytest.approx(0.8 * math.sqrt(2 / (4 * 0.9 * 0.1)), rel=1e-12)
    assert rs.t_quantile(0.5, 3) == 0.0
    with pytest.raises(ValueError):
        rs.t_quantile(1.0, 3)


def test_welch_interval_hand_values_and_scipy():
    # a: mean 2.5, var 5/3; b: mean 6, var 10: se^2 = 5/12 + 2 = 29/12, df 5.520788 (test_results_stats.py).
    a, b = [1, 2, 3, 4], [2, 4, 6, 8, 10]
    found = rs.welch_ci(a, b)
    half = rs.t_quantile(0.975, found.df) * math.sqrt(29 / 12)
    assert (found.diff, found.low, found.high) == pytest.approx((-3.5, -3.5 - half, -3.5 + half), abs=1e-12)
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert (found.low, found.high) == pytest.approx(tuple(ref.confidence_interval(0.95)), abs=1e-10)
    assert (found.t, found.df, found.p) == pytest.approx((ref.statistic, ref.df, ref.pvalue), abs=1e-10)
    ninety = rs.welch_ci(a, b, level=0.9)
    assert (ninety.low, ninety.high) == pytest.approx(tuple(ref.confidence_interval(0.9)), abs=1e-10)
    flat = rs.welch_ci([1, 1], [0, 0])  # no spread: the interval is the difference itself
    assert (flat.low, flat.high, flat.p) == (1, 1, 0.0)


def test_paired_t_against_scipy():
    rng = np.random.default_rng(4)
    x = list(rng.normal(0.5, 1, 40))
    y = [v + d for v, d in zip(x, rng.normal(-0.2, 0.5, 40), strict=True)]
    found, ref = rs.paired_t(x, y), sps.ttest_rel(x, y)
    assert (found.t, found.df, found.p) == pytest.approx((ref.statistic, ref.df, ref.pvalue), abs=1e-10)
    assert (found.low, found.high) == pytest.approx(tuple(ref.confidence_interval()), abs=1e-10)
    # By hand: differences 1, 2, 3 -> mean 2, sd 1, t = 2 sqrt(3) with 2 df.
    hand = rs.paired_t([2, 4, 6], [1, 2, 3])
    assert (hand.diff, hand.t, hand.df) == pytest.approx((2.0, 2 * math.sqrt(3), 2), abs=1e-12)
    assert rs.paired_t([1, 2], [1, 2]).p == 1.0 and rs.paired_t([2, 3], [1, 2]).p == 0.0


@pytest.mark.parametrize(("first", "second"), [(0, 0), (3, 0), (0, 7), (5, 5), (12, 4), (40, 61), (300, 340)])
def test_mcnemar_exact_against_scipy_binomtest(first, second):
    expected = 1.0 if first + second == 0 else sps.binomtest(first, first + second, 0.5).pvalue
    assert rs.mcnemar_exact_p(first, second) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_mcnemar_hand_values():
    # 4 discordant pairs all one way: p = 2 / 2^4 = 0.125; 6 pairs split 5-1: 2 (1 + 6) / 64 = 0.21875.
    assert rs.mcnemar_exact_p(4, 0) == 0.125 and rs.mcnemar_exact_p(1, 5) == 0.21875
    found = rs.mcnemar([1, 1, 0, 0, 1, 1], [0, 1, 0, 1, 0, 0])
    assert (found.first_only, found.second_only, found.problems) == (3, 1, 6)
    assert found.p == pytest.approx(2 * 5 / 16) and found.diff == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="0/1"):
        rs.mcnemar([0.5, 1], [0, 1])


@pytest.mark.parametrize(("delta", "df", "level"), [(2.0, 4, 0.05), (3.0, 2, 0.0167), (1.0, 1, 0.05), (0.0, 10, 0.05),
                                                    (2.8, 30, 0.05), (5.0, 10_000, 0.01)])  # fmt: skip
def test_t_test_power_against_scipy_noncentral_t(delta, df, level):
    c = sps.t.ppf(1 - level / 2, df)
    expected = sps.nct.sf(c, df, delta) + sps.nct.cdf(-c, df, delta)
    assert rs.t_test_power(delta, df, level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("seeds", "sds", "level"), [(2, 3.0, 0.05), (3, 3.5, 0.05 / 3), (5, 2.7, 0.05 / 3), (17, 1.0, 0.05)]
)
def test_welch_power_against_a_simulated_welch_test(seeds, sds, level):
    """Welch's exact power (its estimated df integrated out) against scipy's Welch test on 100,000 simulated pairs of
    samples: within four Monte Carlo standard errors. At 3 seeds and 0.05 / 3 it is 0.47, the pooled t's 0.64."""
    rng = np.random.default_rng(0)
    draws = 100_000
    x, y = rng.normal(sds, 1.0, (draws, seeds)), rng.normal(0.0, 1.0, (draws, seeds))
    simulated = float((sps.ttest_ind(x, y, axis=1, equal_var=False).pvalue < level).mean())
    exact = rs.welch_test_power(sds / math.sqrt(2 / seeds), seeds, level)
    assert abs(exact - simulated) < 4 * math.sqrt(simulated * (1 - simulated) / draws), (exact, simulated)
    if seeds == 3:
        assert round(exact, 2) == 0.47 and round(rs.t_test_power(sds / math.sqrt(2 / 3), 4, level), 2) == 0.64


def test_seeds_for_power_hand_values():
    # Cohen (1988), two-sample t at 0.05, power 0.8: d = 0.5, 0.8, 1.0 need 64, 26 and 17 per group.
    assert [rs.seeds_for_power(d, 1.0, holm=False) for d in (0.5, 0.8, 1.0)] == [64, 26, 17]
    # The answer is the least n: its power reaches 0.8, one fewer does not.
    n = rs.seeds_for_power(0.03, 0.05, rewards=3)
    level = 0.05 / 3
    assert rs.planned_level(0.05, 3) == level
    for seeds, reached in ((n, True), (n - 1, False)):
        assert (rs.welch_test_power(0.03 / (0.05 * math.sqrt(2 / seeds)), seeds, level) >= 0.8) == reached
    # Above the normal approximation 2 (z + z)^2 sd^2 / d^2 by a seed or two.
    z = statistics.NormalDist().inv_cdf
    assert 0 <= n - 2 * (z(1 - level / 2) + z(0.8)) ** 2 * (0.05 / 0.03) ** 2 < 2
    assert rs.seeds_for_power(0.03, 0.0) == 2
    with pytest.raises(ValueError):
        rs.seeds_for_power(0.0, 0.05)


def test_detectable_difference_inverts_seeds_for_power():
    assert rs.detectable_difference(1, 0.05) == math.inf
    d = rs.detectable_difference(17, 1.0, holm=False)  # 17 seeds reach 0.8 at d = 1 (Cohen), so d is a bit below 1
    assert 0.95 < d < 1.0 and rs.seeds_for_power(d * 1.0001, 1.0, holm=False) == 17
    # The sd scales it: twice the spread, twice the difference.
    assert rs.detectable_difference(3, 0.1, rewards=3) == pytest.approx(
        2 * rs.detectable_difference(3, 0.05, rewards=3)
    )


def test_evaluation_size_hand_values():
    # Paired t (one-sample on the differences), Cohen: d = 0.5 at 0.05 and 80% needs 34 pairs.
    assert rs.evaluation_size_for_power(0.5, sd=1.0, holm=False) == 34
    # McNemar, Connor's formula by hand: discordant 0.2, difference 0.05, 0.05 two-sided, power 0.8:
    # ((1.959964 sqrt(0.2) + 0.841621 sqrt(0.1975)) / 0.05)^2 = 625.6 -> 626.
    z = statistics.NormalDist().inv_cdf
    by_hand = ((z(0.975) * math.sqrt(0.2) + z(0.8) * math.sqrt(0.2 - 0.05**2)) / 0.05) ** 2
    assert 625 < by_hand < 626 and rs.evaluation_size_for_power(0.05, discordant=0.2, holm=False) == 626
    # Holm over three rewards asks for more: the level is 0.05 / 3.
    assert rs.evaluation_size_for_power(0.05, discordant=0.2, rewards=3) > 626
    with pytest.raises(ValueError, match="exactly one"):
        rs.evaluation_size_for_power(0.05)
    with pytest.raises(ValueError):
        rs.evaluation_size_for_power(0.3, discordant=0.2)  # |p10 - p01| cannot exceed p10 + p01
