"""Statistics of a seed study: per-run final values, Welch's t-test and interval, a bootstrap CI of a difference, a
verdict; paired tests on one shared evaluation set; and the power plan (how many seeds, how many problems).

Pure Python and numpy (scipy is not a dependency; the tests check every function here against scipy). The statistic
of a seed study (docs/results/README.md) is fixed in advance: a run's *final* value of a reward is the mean of its last
``tail`` logged steps; methods are compared by the difference of their mean finals over seeds, with Welch's
two-sided t-test and a seeded percentile-bootstrap 95% confidence interval; the verdict reads the interval only.
``gdpo compare`` reads the same difference by Welch's t interval instead (:func:`welch_ci`), the bootstrap only as a
second reading from :data:`MIN_BOOTSTRAP_SEEDS` seeds up: with 3 seeds per arm a nominal 95% percentile bootstrap
covers far less than 95% (it resamples 3 values, whose spread understates the population's).

Rows (the JSON a study exports) are dicts ``{"task", "method", "seed", "reward", "final"}``, one per run and reward.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

ROW_KEYS = ("task", "method", "seed", "reward", "final")
AHEAD, LEVEL, BEHIND = "ahead", "level", "behind"


# --- Welch's t-test ---------------------------------------------------------------------------------------------


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function, evaluated with the modified Lentz method."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        # Even step, then odd step, of the continued fraction's coefficients.
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < eps:
            return result
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if a <= 0 or b <= 0 or not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs a, b > 0 and 0 <= x <= 1, got a={a}, b={b}, x={x}")
    if x in (0.0, 1.0):
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    # The fraction converges fast for x < (a + 1) / (a + b + 2); otherwise use I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` (real, > 0) degrees of freedom: P(|T| >= |t|)."""
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


@dataclass(frozen=True)
class Welch:
    t: float
    df: float
    p: float


def welch_t_test(a: list[float], b: list[float]) -> Welch:
    """Welch's unequal-variance t-test of mean(a) - mean(b): t, Welch-Satterthwaite df and the two-sided p-value.

    With no spread in either sample the test is degenerate: p is 1 when the means are equal, 0 when they differ.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's test needs at least 2 values per sample, got {len(a)} and {len(b)}")
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.mean(a) - statistics.mean(b)
    if va + vb == 0:
        return Welch(t=0.0 if diff == 0 else math.copysign(math.inf, diff), df=math.nan, p=1.0 if diff == 0 else 0.0)
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return Welch(t=t, df=df, p=t_two_sided_p(t, df))


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` (real, > 0) degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))  # P(T >= |t|)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` (real, > 0) degrees of freedom: the t with ``t_cdf(t) = p``,
    found by safeguarded Newton steps on :func:`t_cdf` to double precision (the CDF is increasing; the bracket
    doubles until it holds the answer)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p}")
    if df <= 0:
        raise ValueError(f"t_quantile needs df > 0, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, 2.0 * high
    # Newton's steps on the CDF (its derivative is the density), kept inside the bracket [low, high], which each
    # step narrows; a step that would leave it bisects instead.
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    t = 0.5 * (low + high)
    for _ in range(200):
        gap = t_cdf(t, df) - p
        if gap == 0:
            return t
        low, high = (t, high) if gap < 0 else (low, t)
        density = math.exp(log_scale - (df + 1) / 2 * math.log1p(t * t / df))
        step = t - gap / density
        t = step if low < step < high else 0.5 * (low + high)
        if high - low <= 4e-16 * high or abs(gap) < 1e-17:
            break
    return t


@dataclass(frozen=True)
class Interval:
    """A difference of means with its two-sided confidence interval at ``level`` and the test behind it."""

    diff: float
    low: float
    high: float
    t: float
    df: float
    p: float
    level: float = 0.95


def welch_ci(a: list[float], b: list[float], level: float = 0.95) -> Interval:
    """Welch's interval for mean(a) - mean(b): ``diff ± t_{(1+level)/2, df} * sqrt(var(a)/n_a + var(b)/n_b)`` with
    the Welch-Satterthwaite df, and Welch's test (:func:`welch_t_test`). Needs 2 values per sample; with no spread
    in either the interval is the difference itself (the test's degenerate case)."""
    welch = welch_t_test(a, b)
    diff = statistics.mean(a) - statistics.mean(b)
    se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    half = 0.0 if se == 0 else t_quantile((1 + level) / 2, welch.df) * se
    return Interval(diff, diff - half, diff + half, welch.t, welch.df, welch.p, level)


# --- paired tests on one shared evaluation set -------------------------------------------------------------------


def paired_t(x: list[float], y: list[float], level: float = 0.95) -> Interval:
    """The paired t-test and interval of mean(x - y), pairs in order (the same problem under two runs): t = mean(d) /
    (sd(d) / sqrt(n)) with n - 1 df. With no spread in the differences the test is degenerate: p is 1 when they are
    all 0, else 0, and the interval is the mean difference itself."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"a paired test needs two samples of one length >= 2, got {len(x)} and {len(y)}")
    d = [xi - yi for xi, yi in zip(x, y, strict=True)]
    mean, n = statistics.fmean(d), len(d)
    se = statistics.stdev(d) / math.sqrt(n)
    if se == 0:
        t = 0.0 if mean == 0 else math.copysign(math.inf, mean)
        return Interval(mean, mean, mean, t, n - 1, 1.0 if mean == 0 else 0.0, level)
    t = mean / se
    half = t_quantile((1 + level) / 2, n - 1) * se
    return Interval(mean, mean - half, mean + half, t, n - 1, t_two_sided_p(t, n - 1), level)


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on 0/1 outcomes paired by problem: ``first_only`` problems scored 1 by the first run
    alone, ``second_only`` by the second alone (the discordant pairs), out of ``problems``."""

    first_only: int
    second_only: int
    problems: int
    p: float

    @property
    def diff(self) -> float:
        """The difference of the two runs' rates: (first_only - second_only) / problems."""
        return (self.first_only - self.second_only) / self.problems


def mcnemar_exact_p(first_only: int, second_only: int) -> float:
    """McNemar's exact two-sided p: under no difference each of the n = first_only + second_only discordant pairs
    goes either way with probability 1/2, so p = min(1, 2 P(X <= min)) for X ~ Binomial(n, 1/2), in exact integer
    arithmetic (1 without discordant pairs)."""
    n, k = first_only + second_only, min(first_only, second_only)
    if n == 0:
        return 1.0
    return min(1.0, float(Fraction(2 * sum(math.comb(n, i) for i in range(k + 1)), 2**n)))


def mcnemar(x: list[float], y: list[float]) -> McNemar:
    """McNemar's exact test of two runs' 0/1 outcomes on the same problems, pairs in order."""
    if len(x) != len(y) or not x:
        raise ValueError(f"McNemar's test needs two samples of one length >= 1, got {len(x)} and {len(y)}")
    if any(v not in (0, 1) for v in (*x, *y)):
        raise ValueError("McNemar's test needs 0/1 outcomes; use paired_t for other scores")
    first = sum(1 for a, b in zip(x, y, strict=True) if a == 1 and b == 0)
    second = sum(1 for a, b in zip(x, y, strict=True) if a == 0 and b == 1)
    return McNemar(first, second, len(x), mcnemar_exact_p(first, second))


# --- bootstrap and verdict -------------------------------------------------------------------------------------


def bootstrap_diff_ci(
    a: list[float], b: list[float], *, resamples: int = 10_000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of mean(a) - mean(b): each sample resampled with replacement on its
    own (the samples are independent runs), ``resamples`` times, from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    means_a = xa[rng.integers(0, len(xa), size=(resamples, len(xa)))].mean(axis=1)
    means_b = xb[rng.integers(0, len(xb), size=(resamples, len(xb)))].mean(axis=1)
    low, high = np.quantile(means_a - means_b, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def verdict(ci: tuple[float, float], *, higher_is_better: bool = True) -> str:
    """``ahead`` when the CI of (GDPO - other) lies wholly on GDPO's better side of 0, ``behind`` when wholly on the
    other side, else ``level``."""
    low, high = ci if higher_is_better else (-ci[1], -ci[0])
    if low > 0:
        return AHEAD
    if high < 0:
        return BEHIND
    return LEVEL


@dataclass(frozen=True)
class Comparison:
    """One reward, GDPO (``method``) against ``other``: means, their difference, Welch's test, CI and verdict."""

    reward: str
    method: str
    other: str
    mean: float
    other_mean: float
    diff: float
    welch: Welch
    ci: tuple[float, float]
    verdict: str


def compare(
    rows: list[dict], reward: str, method: str, other: str, *, resamples: int = 10_000, seed: int = 0
) -> Comparison:
    """Compare ``method`` with ``other`` on ``reward``'s finals in ``rows`` (the pre-registered statistic)."""
    a, b = finals(rows, method, reward), finals(rows, other, reward)
    ci = bootstrap_diff_ci(a, b, resamples=resamples, seed=seed)
    ma, mb = statistics.mean(a), statistics.mean(b)
    return Comparison(reward, method, other, ma, mb, ma - mb, welch_t_test(a, b), ci, verdict(ci))


def holm_adjusted(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order: sorted ascending, the j-th smallest (1-based) of m
    becomes ``max over i <= j of min(1, (m - i + 1) p_(i))``. A comparison holds at family-wise level alpha under
    Holm's procedure exactly when its adjusted p is at most alpha."""
    m = len(pvalues)
    adjusted, running = [0.0] * m, 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


# --- rows: from runs, to and from JSON --------------------------------------------------------------------------


def final_value(values: list[float], tail: int = 10) -> float:
    """A run's final value of a metric: the mean of its last ``tail`` logged values."""
    if len(values) < tail:
        raise ValueError(f"a run needs at least {tail} logged values for its final value, got {len(values)}")
    return statistics.fmean(values[-tail:])


def run_rows(task: str, method: str, seed: int, series: dict[str, list[float]], tail: int = 10) -> list[dict]:
    """The rows of one run: ``series`` maps each reward name to its logged values, in step order."""
    return [
        {"task": task, "method": method, "seed": seed, "reward": reward, "final": final_value(values, tail)}
        for reward, values in series.items()
    ]


def finals(rows: list[dict], method: str, reward: str) -> list[float]:
    """The finals of ``method`` on ``reward``, ordered by seed."""
    picked = sorted((r["seed"], r["final"]) for r in rows if r["method"] == method and r["reward"] == reward)
    if not picked:
        raise KeyError(f"no rows for method {method!r} and reward {reward!r}")
    return [final for _, final in picked]


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1); the std of one value is 0."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def ordered_unique(values) -> list:
    return list(dict.fromkeys(values))


def write_rows(rows: list[dict], path: str | Path) -> Path:
    """Write rows as a JSON list (keys in ROW_KEYS order), floats in full precision."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{k: r[k] for k in ROW_KEYS} for r in rows], indent=1) + "\n", encoding="utf-8")
    return path


def read_rows(path: str | Path) -> list[dict]:
    """Read rows written by :func:`write_rows`, checking their keys."""
    rows = json.loads(Path(path).read_text(encoding="utf-8"))
    for row in rows:
        if set(row) != set(ROW_KEYS):
            raise ValueError(f"{path}: row {row} does not have exactly the keys {ROW_KEYS}")
    return rows


# --- markdown ---------------------------------------------------------------------------------------------------


def summary_table(rows: list[dict], labels: dict[str, str] | None = None) -> str:
    """Markdown: per method and reward, the mean ± std of the finals over seeds and the number of seeds."""
    labels = labels or {}
    lines = ["| method | reward | final, mean ± std over seeds | seeds |", "|---|---|---:|---:|"]
    for method in ordered_unique(r["method"] for r in rows):
        for reward in ordered_unique(r["reward"] for r in rows if r["method"] == method):
            values = finals(rows, method, reward)
            mean, std = mean_std(values)
            lines.append(f"| {labels.get(method, method)} | {reward} | {mean:.3f} ± {std:.3f} | {len(values)} |")
    return "\n".join(lines)


def format_p(p: float) -> str:
    """A p-value to 3 decimals, or in scientific notation below 0.001 (so a small p is not shown as 0)."""
    return f"{p:.3f}" if p >= 0.001 or p == 0 else f"{p:.1e}"


def comparison_table(
    comparisons: list[Comparison],
    labels: dict[str, str] | None = None,
    *,
    bonferroni_m: int | None = None,
    holm: dict[int, float] | None = None,
) -> str:
    """Markdown: per reward and baseline, GDPO's mean minus the baseline's, Welch's t, df and p, the bootstrap CI
    and the verdict; with ``bonferroni_m``, whether a non-level verdict's p is also below 0.05 / m; with ``holm``
    (comparison index -> Holm-adjusted p, :func:`holm_adjusted` over the family), instead the adjusted p and
    whether a non-level verdict also holds under Holm at 0.05 (``-`` for a comparison outside the family)."""
    labels = labels or {}
    extra = bonferroni_m is not None and holm is None
    head = "| reward | GDPO − baseline | baseline | difference | Welch t (df) | Welch p | 95% bootstrap CI | verdict |"
    lines = [
        head + (f" p < 0.05/{bonferroni_m} |" if extra else "") + (" Holm p | holds under Holm |" if holm else ""),
        "|---|---|---:|---:|---:|---:|---:|---|" + ("---|" if extra else "") + ("---:|---|" if holm else ""),
    ]
    for c in comparisons:
        name = f"{labels.get(c.method, c.method)} − {labels.get(c.other, c.other)}"
        line = (
            f"| {c.reward} | {name} | {c.other_mean:.3f} | {c.diff:+.3f} | {c.welch.t:.2f} ({c.welch.df:.1f}) | "
            f"{format_p(c.welch.p)} | [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}] | **{c.verdict}** |"
        )
        if extra:
            line += " - |" if c.verdict == LEVEL else (" yes |" if c.welch.p < 0.05 / bonferroni_m else " no |")
        if holm:
            index = len(lines) - 2
            held = "-" if index not in holm or c.verdict == LEVEL else "yes" if holm[index] <= 0.05 else "no"
            line += f" {format_p(holm[index]) if index in holm else '-'} | {held} |"
        lines.append(line)
    return "\n".join(lines)


# --- the power plan: how many seeds, how many problems ------------------------------------------------------------

# Below this many seeds per arm the percentile bootstrap is not shown at all: it resamples so few values that its
# interval is too narrow (at 3 seeds a nominal 95% covers well under 90% for normal data).
MIN_BOOTSTRAP_SEEDS = 8
# Simpson's rule over the chi distribution of the t statistic's denominator (odd: Simpson needs an even count of
# intervals). 1001 points put the power within 1e-9 of scipy's noncentral t from 1 to 10,000 df (the tests check).
_POWER_POINTS = 1001
# Simpson's nodes over the share of the two samples' sums of squares (Welch's estimated df): within 1e-5 of 41 nodes
# from 2 to 200 seeds, and within Monte Carlo error of a simulated Welch test (the tests check).
_WELCH_POINTS = 21


def normal_quantile(p: float) -> float:
    """The ``p`` quantile of the standard normal distribution."""
    return statistics.NormalDist().inv_cdf(p)


def planned_level(alpha: float = 0.05, rewards: int = 1, holm: bool = True) -> float:
    """The level each reward's test is planned at: Holm's strictest step, ``alpha / rewards`` (what the first of
    ``rewards`` comparisons must clear; planning every reward for it keeps each one's power whichever comes first),
    or ``alpha`` itself without ``holm``."""
    if not 0 < alpha < 1 or rewards < 1:
        raise ValueError(f"need 0 < alpha < 1 and rewards >= 1, got alpha={alpha}, rewards={rewards}")
    return alpha / rewards if holm else alpha


def _simpson_weights(points: int) -> np.ndarray:
    """Simpson's rule's weights on ``points`` (odd) equally spaced nodes, without the spacing's factor h / 3."""
    weights = np.ones(points)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return weights


def _t_tails(noncentrality: float, df: float, criticals) -> np.ndarray:
    """P(|T'| > c) for each c of ``criticals``, T' noncentral t with ``df`` degrees of freedom and noncentrality
    δ. With T' = (Z + δ) / S, Z standard normal, S = sqrt(V / df) and V chi-squared with df:

        P(|T'| > c) = E_S[ Φ(δ - c S) + Φ(-δ - c S) ],

    integrated over S's density (2 df s f_chi2(df s^2)) by Simpson's rule on [0, sqrt(V's mean + 40 of its sd + 60
    over df)], where the density's remaining mass is below 1e-100."""
    top = math.sqrt((df + 40 * math.sqrt(2 * df) + 60) / df)
    s = np.linspace(0.0, top, _POWER_POINTS)
    # The density of S = sqrt(V / df): 2 df s f_chi2(df s^2), in logs so that large df neither overflow nor vanish.
    with np.errstate(divide="ignore"):  # log(0) at s = 0: density 0 there, except for 1 df (s^0)
        power_of_s = (df - 1) * np.log(s) if df != 1 else np.zeros_like(s)
        log_density = (
            math.log(2 * df)
            + power_of_s
            + (df / 2 - 1) * math.log(df)
            - df * s**2 / 2
            - (df / 2) * math.log(2)
            - math.lgamma(df / 2)
        )
    density = np.exp(log_density) * _simpson_weights(_POWER_POINTS) * (s[1] - s[0]) / 3
    kept = density > 1e-20 * density.max()  # nodes whose weight cannot move the sum: left out, for speed
    density, s = density[kept], s[kept]
    c = np.asarray(criticals, dtype=float)[:, None] * s[None, :]
    phi = np.vectorize(statistics.NormalDist().cdf, otypes=[float])
    return np.minimum(1.0, (phi(noncentrality - c) + phi(-noncentrality - c)) @ density)


def t_test_power(noncentrality: float, df: float, level: float) -> float:
    """The power of a two-sided t-test at ``level`` whose statistic is noncentral t with ``df`` degrees of freedom
    and noncentrality ``noncentrality`` (the true difference over its standard error): P(|T'| > c) with
    c = t_{1-level/2, df} (:func:`_t_tails`). Exact for the paired t and the pooled two-sample t."""
    if df < 1 or not 0 < level < 1:
        raise ValueError(f"t_test_power needs df >= 1 and 0 < level < 1, got df={df}, level={level}")
    return float(_t_tails(noncentrality, df, [t_quantile(1 - level / 2, df)])[0])


def welch_test_power(noncentrality: float, seeds: int, level: float) -> float:
    """The power of Welch's two-sided test at ``level`` with ``seeds`` values per sample from two normal
    populations of equal standard deviation σ, for a true difference of ``noncentrality`` σ sqrt(2 / seeds).

    Welch's statistic is then exactly noncentral t with 2k degrees of freedom (k = seeds - 1: its denominator is
    the pooled one at equal sizes), but it is compared with the quantile at the *estimated* degrees of freedom
    ν = k / (R^2 + (1 - R)^2), R = V1 / (V1 + V2) the share of one sample's sum of squares, which is Beta(k/2, k/2)
    and independent of the pooled sum (Lukacs). So

        power = E_R[ P(|T'_{2k}| > t_{1-level/2, ν(R)}) ],

    integrated over R = sin^2 θ, θ in [0, π/4] (R and 1 - R give the same ν) by Simpson's rule. Below about ten
    seeds this is well under the pooled t's power: 0.47 against 0.64 for 3.5 σ at 3 seeds and 0.05 / 3."""
    if seeds < 2 or not 0 < level < 1:
        raise ValueError(f"welch_test_power needs seeds >= 2 and 0 < level < 1, got {seeds}, {level}")
    weight, criticals = _welch_nodes(seeds, level)
    return float(np.dot(weight, _t_tails(noncentrality, 2 * (seeds - 1), criticals)))


@functools.lru_cache(maxsize=256)
def _welch_nodes(seeds: int, level: float) -> tuple[np.ndarray, tuple[float, ...]]:
    """:func:`welch_test_power`'s Simpson weights over θ (normalized to sum 1) and the critical value at each node's
    estimated df: they depend on the seeds and the level only, so a search over differences computes them once."""
    k = seeds - 1
    theta = np.linspace(0.0, math.pi / 4, _WELCH_POINTS)
    r = np.sin(theta) ** 2
    nu = k / (r**2 + (1 - r) ** 2)
    with np.errstate(divide="ignore"):  # (sin θ cos θ)^(k-1) at θ = 0: 0 there, except for k = 1
        weight = np.exp((k - 1) * np.log(np.sin(theta) * np.cos(theta))) if k != 1 else np.ones_like(theta)
    weight *= _simpson_weights(_WELCH_POINTS)
    return weight / weight.sum(), tuple(t_quantile(1 - level / 2, float(v)) for v in nu)


def _two_sample_power(difference: float, sd: float, seeds: int, level: float) -> float:
    """Power of Welch's test with ``seeds`` per arm for a true ``difference`` at a between-seed ``sd``."""
    return welch_test_power(difference / (sd * math.sqrt(2 / seeds)), seeds, level)


def _paired_power(difference: float, sd: float, problems: int, level: float) -> float:
    """Power of the paired t-test on ``problems`` pairs for a true mean ``difference`` at a per-pair ``sd``."""
    return t_test_power(difference / (sd / math.sqrt(problems)), problems - 1, level)


def _least(enough, start: int, limit: int) -> int:
    """The least whole n >= ``start`` for which ``enough(n)`` holds (it is monotone in n), by doubling then
    bisection; ``limit`` bounds the search."""
    if enough(start):
        return start
    low, high = start, start * 2
    while not enough(high):
        if high >= limit:
            raise ValueError(f"more than {limit} would be needed: the difference is too small for its spread")
        low, high = high, min(high * 2, limit)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def _check_plan(difference: float, sd: float, power: float) -> None:
    if not difference > 0 or not sd >= 0 or not 0 < power < 1:
        raise ValueError(
            f"a power plan needs difference > 0, sd >= 0 and 0 < power < 1, got {difference}, {sd}, {power}"
        )


def seeds_for_power(
    difference: float,
    sd: float,
    rewards: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    holm: bool = True,
    max_seeds: int = 1_000_000,
) -> int:
    """Seeds per arm for Welch's two-sided test to detect a true ``difference`` of one reward's mean final between
    two methods with probability ``power``, when the finals vary between seeds with standard deviation ``sd`` in
    both arms (normal): the least n >= 2 with

        welch_test_power(difference / (sd sqrt(2 / n)), n, planned_level(alpha, rewards, holm)) >= power,

    at Holm's strictest level ``alpha / rewards`` across ``rewards`` rewards (:func:`planned_level`), Welch's power
    computed exactly (:func:`welch_test_power`). The normal approximation ``2 (z_{1-level/2} + z_power)^2 sd^2 /
    difference^2`` is a seed or two lower. Cohen's textbook case, difference = sd at 0.05 and 80%, needs 17 per arm
    (as for the pooled t: the two differ only below about ten seeds)."""
    _check_plan(difference, sd, power)
    level = planned_level(alpha, rewards, holm)
    if sd == 0:
        return 2
    return _least(lambda n: _two_sample_power(difference, sd, n, level) >= power, 2, max_seeds)


@functools.lru_cache(maxsize=256)
def _detectable_noncentrality(seeds: int, level: float, power: float) -> float:
    """The noncentrality at which Welch's test with ``seeds`` per arm at ``level`` has ``power`` (bisection to 1e-6
    relative): it depends on neither the spread nor the difference, so one reward's plan serves every reward's."""
    low, high = 0.0, 1.0
    while welch_test_power(high, seeds, level) < power:
        low, high = high, 2 * high
    while high - low > 1e-6 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if welch_test_power(middle, seeds, level) < power else (low, middle)
    return high


def detectable_difference(
    seeds: int, sd: float, rewards: int = 1, alpha: float = 0.05, power: float = 0.8, holm: bool = True
) -> float:
    """The least true difference :func:`seeds_for_power`'s test detects with probability ``power`` with ``seeds``
    per arm at a between-seed ``sd`` (its inverse): what a comparison of that many seeds can show. ``math.inf``
    below 2 seeds (no spread, no test)."""
    if seeds < 2:
        return math.inf
    return _detectable_noncentrality(seeds, planned_level(alpha, rewards, holm), power) * sd * math.sqrt(2 / seeds)


def evaluation_size_for_power(
    difference: float,
    *,
    discordant: float | None = None,
    sd: float | None = None,
    rewards: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    holm: bool = True,
    max_problems: int = 10_000_000,
) -> int:
    """Problems in one shared evaluation set for a paired test between two runs to detect a true ``difference`` of
    their mean rewards with probability ``power`` at Holm's strictest level (:func:`planned_level`). Give one of:

    * ``discordant``, for 0/1 rewards (McNemar's test): the share of problems the two runs score differently
      (p10 + p01, with difference = p10 - p01). Connor's (1987, Biometrics 43:207) formula,
      ``n = ((z_{1-level/2} sqrt(discordant) + z_power sqrt(discordant - difference^2)) / difference)^2``, rounded up.
    * ``sd``, for other rewards (the paired t-test): the standard deviation of the per-problem differences; the least
      n >= 2 with ``t_test_power(difference / (sd / sqrt(n)), n - 1, level) >= power`` (exact, noncentral t).

    This sizes the evaluation of two given models; the seeds a method comparison needs are :func:`seeds_for_power`'s
    (the problems' noise and the seeds' are different noises: more problems do not replace seeds)."""
    if (discordant is None) == (sd is None):
        raise ValueError("give exactly one of discordant (0/1 rewards) or sd (other rewards)")
    level = planned_level(alpha, rewards, holm)
    if discordant is not None:
        if not 0 < difference <= discordant <= 1 or not 0 < power < 1:
            raise ValueError(
                f"need 0 < difference <= discordant <= 1 and 0 < power < 1, got {difference}, {discordant}, {power}"
            )
        root = normal_quantile(1 - level / 2) * math.sqrt(discordant)
        root += normal_quantile(power) * math.sqrt(discordant - difference**2)
        return max(1, math.ceil((root / difference) ** 2 - 1e-9))
    _check_plan(difference, sd, power)
    if sd == 0:
        return 2
    return _least(lambda n: _paired_power(difference, sd, n, level) >= power, 2, max_problems)
