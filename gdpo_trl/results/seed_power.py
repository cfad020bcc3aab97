"""What a comparison's seeds can show: the caveat that opens ``gdpo compare``'s table, and the differences between its
methods' final values read by Welch's t interval (the percentile bootstrap only as a second reading, and only from
:data:`~gdpo_trl.results.stats.MIN_BOOTSTRAP_SEEDS` seeds per arm up).

The plan is :func:`gdpo_trl.results.stats.seeds_for_power`'s: seeds per arm for a two-sided two-sample t-test to see
a difference of interest (default :data:`DIFFERENCE`) on each reward with 80% power at Holm's strictest level across
the compared rewards (0.05 / K), at the spread between these seeds' finals (pooled over the methods), or with one
seed, where there is no spread to measure, at :data:`STUDY_SEED_SD`, the committed seed studies' typical spread.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from gdpo_trl.results.stats import (
    MIN_BOOTSTRAP_SEEDS,
    bootstrap_diff_ci,
    detectable_difference,
    format_p,
    holm_adjusted,
    seeds_for_power,
    welch_ci,
)

# The median, over the committed seed studies H1-H7 (docs/results/<task>.json: 83 method and reward cells whose
# finals lie in 0..1, 10 seeds each), of the standard deviation of a reward's final between seeds; the spread a
# one-seed comparison is planned at. tests/results/test_seed_power.py recomputes it from those files.
STUDY_SEED_SD = 0.032
DIFFERENCE = 0.03  # the difference of interest on each reward, as in the pilot's plan
ALPHA, POWER = 0.05, 0.8
MAX_SEEDS = 100_000  # beyond this the plan says "more than" instead of searching further
TOTAL = "reward"  # the total's log key: shown, but not one of the rewards Holm's family counts


@dataclass(frozen=True)
class SeedPlan:
    """What a comparison of ``seeds`` seeds per arm (the fewest any method has) can show on ``rewards``: the
    between-seed standard deviation each reward is planned at (``sds``, measured on these seeds, or
    :data:`STUDY_SEED_SD` for the rewards in ``assumed``), the difference each could detect with 80% power under Holm
    (``detectable``; inf with one seed) and the seeds per arm ``difference`` needs on every reward (``needed``)."""

    seeds: int
    rewards: list[str]
    sds: dict[str, float]
    assumed: list[str]
    detectable: dict[str, float]
    needed: int | float  # math.inf beyond MAX_SEEDS
    difference: float

    @property
    def enough(self) -> bool:
        return self.seeds >= self.needed


def finals(per_seed: list[list[float]], tail: int) -> list[float]:
    """Each seed's final value: the mean of its last ``tail`` logged values (as the comparison table's)."""
    return [statistics.fmean(values[-tail:]) for values in per_seed]


def pooled_sd(groups: list[list[float]]) -> float:
    """The pooled between-seed standard deviation of groups of finals (each method's): the square root of their
    variances' mean weighted by degrees of freedom; groups of one value add nothing."""
    spread = [(len(g) - 1, statistics.variance(g)) for g in groups if len(g) > 1]
    df = sum(d for d, _ in spread)
    return math.sqrt(sum(d * v for d, v in spread) / df) if df else 0.0


def seed_plan(curves, reward_names: list[str], tail: int, difference: float = DIFFERENCE) -> SeedPlan:
    """The plan for ``curves`` (:class:`gdpo_trl.results.compare.MethodCurves`) on ``reward_names`` (the total left
    out of Holm's family). A reward whose finals did not vary between seeds at all is planned at
    :data:`STUDY_SEED_SD` too (no spread measured is not a spread of zero)."""
    from gdpo_trl.results.runs import reward_key

    rewards = [n for n in reward_names if n != TOTAL and any(reward_key(n) in c.values for c in curves)]
    seeds = min(len(next(iter(c.values.values()))) for c in curves if c.values) if curves else 0
    sds, assumed = {}, []
    for name in rewards:
        sd = pooled_sd([finals(c.values[reward_key(name)], tail) for c in curves if reward_key(name) in c.values])
        if seeds < 2 or sd == 0:
            sd = STUDY_SEED_SD
            assumed.append(name)
        sds[name] = sd
    k = max(1, len(rewards))
    detectable = {name: detectable_difference(seeds, sd, k, ALPHA, POWER) for name, sd in sds.items()}
    needed = max((_seeds_needed(difference, sd, k) for sd in sds.values()), default=2)
    return SeedPlan(seeds, rewards, sds, assumed, detectable, needed, difference)


def _seeds_needed(difference: float, sd: float, rewards: int) -> int | float:
    """:func:`seeds_for_power`, or ``math.inf`` beyond :data:`MAX_SEEDS` (a difference far below the spread)."""
    try:
        return seeds_for_power(difference, sd, rewards, ALPHA, POWER, max_seeds=MAX_SEEDS)
    except ValueError:
        return math.inf


def _count(needed: int | float) -> str:
    return f"more than {MAX_SEEDS:,}" if math.isinf(needed) else str(needed)


def caveat(plan: SeedPlan) -> str:
    """The paragraph that opens a comparison's table: below the plan's seeds, what these seeds can and cannot show
    and how many the difference of interest needs; at or above them, that they suffice."""
    k = len(plan.rewards)
    holm = f"80% power under Holm across the {k} reward{'s' if k != 1 else ''}"
    per_arm = f"{plan.seeds} seed{'s' if plan.seeds != 1 else ''} per arm"
    studies = f"the committed seed studies' typical spread between seeds (sd {STUDY_SEED_SD} of a 0..1 reward's final)"
    if not plan.assumed:
        spread = "at the spread between these seeds' finals"
    elif len(plan.assumed) == len(plan.rewards):
        spread = f"at {studies}; this comparison measured none"
    else:
        spread = (
            f"at the spread between these seeds' finals, and for {', '.join(plan.assumed)}, whose finals did not "
            f"vary, at {studies}"
        )
    if plan.enough:
        return (
            f"{per_arm}: enough to detect a difference of {plan.difference:g} on every reward with {holm} ({spread}; "
            f"{_count(plan.needed)} are needed)."
        )
    if plan.seeds < 2:
        return (
            f"**{per_arm}: this comparison cannot show a difference between the methods**: one seed gives no spread "
            f"between seeds to judge a difference against, so no interval or test below. {_count(plan.needed)} seeds per arm "
            f"are needed to detect {plan.difference:g} on a reward with {holm}, {spread}."
        )
    shown = ", ".join(f"{plan.detectable[name]:.2f} ({name})" for name in plan.rewards)
    return (
        f"**{per_arm}: this can only show differences of about {shown}** ({holm}, {spread}); {_count(plan.needed)} seeds per "
        f"arm are needed for {plan.difference:g}. Read the differences below with that in mind."
    )


def differences_table(curves, reward_names: list[str], tail: int, labels: dict[str, str]) -> str:
    """Markdown: each method's final minus the first method's (the reference), per reward and the total: the
    difference, Welch's t 95% interval and p, Holm's adjusted p across the rewards (not the total), and from
    :data:`MIN_BOOTSTRAP_SEEDS` seeds per arm up the percentile bootstrap's 95% interval as a second reading
    (``default_rng(0)``, 10,000 resamples). Empty below 2 seeds per arm (no Welch test)."""
    from gdpo_trl.results.runs import reward_key

    if len(curves) < 2:
        return ""
    reference, others = curves[0], curves[1:]
    seeds = min(len(next(iter(c.values.values()))) for c in curves if c.values)
    if seeds < 2:
        return ""
    bootstrap = seeds >= MIN_BOOTSTRAP_SEEDS
    head = "| reward | method − reference | difference | 95% Welch CI | Welch p | Holm p |"
    lines = [
        head + (" 95% bootstrap CI (second reading) |" if bootstrap else ""),
        "|---|---|---:|---|---:|---:|" + ("---|" if bootstrap else ""),
    ]
    name_of = labels.get
    for other in others:
        rows = []
        for name in reward_names:
            key = TOTAL if name == TOTAL else reward_key(name)
            if key not in other.values or key not in reference.values:
                continue
            a, b = finals(other.values[key], tail), finals(reference.values[key], tail)
            rows.append((name, a, b, welch_ci(a, b)))
        family = [i for i, row in enumerate(rows) if row[0] != TOTAL]
        adjusted = dict(zip(family, holm_adjusted([rows[i][3].p for i in family]), strict=True))
        pair = f"{name_of(other.method, other.method)} − {name_of(reference.method, reference.method)}"
        for i, (name, a, b, w) in enumerate(rows):
            line = (
                f"| {name} | {pair} | {w.diff:+.3f} | [{w.low:+.3f}, {w.high:+.3f}] | {format_p(w.p)} | "
                f"{format_p(adjusted[i]) if i in adjusted else '-'} |"
            )
            if bootstrap:
                low, high = bootstrap_diff_ci(a, b, seed=0)
                line += f" [{low:+.3f}, {high:+.3f}] |"
            lines.append(line)
    return "\n".join(lines)
