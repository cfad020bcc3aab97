"""Statistics of a seed study: per-run final values, Welch's t-test, a bootstrap CI of a difference, a verdict.

Pure Python and numpy (scipy is not a dependency). The statistic of a seed study (docs/results/README.md) is fixed
in advance: a run's *final* value of a reward is the mean of its last ``tail`` logged steps; methods are compared
by the difference of their mean finals over seeds, with Welch's two-sided t-test and a seeded percentile-bootstrap
95% confidence interval; the verdict reads the interval only.

Rows (the JSON a study exports) are dicts ``{"task", "method", "seed", "reward", "final"}``, one per run and reward.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
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
