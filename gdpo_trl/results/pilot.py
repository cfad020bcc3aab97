"""What ``gdpo pilot`` measures on sampled rewards, before any training: pure functions of a reward matrix.

GDPO (or any rule in :data:`gdpo_trl.core.rules.RULES`) can only train differently from GRPO where it gives the
completions of a group different advantages. So a pilot samples groups of completions from the start model at the
recipe's settings, scores them with the recipe's rewards, and measures on that ``[N, K]`` matrix (groups of
``num_generations`` consecutive rows, NaN where a reward does not apply):

- per reward: mean, standard deviation, range seen, the share of groups in which it has zero spread (no signal
  under any rule), the share of completions it applies to;
- between rewards: Pearson correlations over completions, and the conflict share (completions whose weighted
  per-reward group advantages pull in opposite directions, what training logs as ``conflict/share``);
- for every rule against GRPO: the correlation of the two advantages (over completions in groups where some reward
  has spread), the share of those groups whose completions the two order differently (a pair ordered oppositely, or
  tied by one and not the other), the collapsed pairs (GRPO ties, the rule tells apart), and the share of the
  advantage each reward drives under each;
- the verdict of :data:`VERDICT_RULE` (docs/pilot.md, fixed before the pilot was first checked against the studies);
- the gaming risk: how often an easier reward pays where the hardest one fails;
- a plan: seeds per arm and evaluation size for a difference of interest, at 80% power under Holm across rewards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from gdpo_trl.core.advantages import center_per_group, gdpo_reward_terms, in_groups
from gdpo_trl.core.diagnostics import advantage_shares, conflict_diagnostics, group_has_spread
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.rules import RULES, rule_advantages, rule_options_for, rule_parts

TIE = 1e-6  # advantages closer than this are one value (batch normalization leaves float noise)
BASELINE = "grpo"

# The verdict rule, fixed in docs/pilot.md ("The verdict rule") before any pilot was run against a study. A rule
# "is likely to train differently" from GRPO when its advantages correlate below DIFFERENT_CORRELATION with GRPO's,
# or some reward's share of the advantage moves by at least DIFFERENT_SHARE_SHIFT; "unlikely" when the correlation
# is at least SAME_CORRELATION and no share moves by SAME_SHARE_SHIFT or more; "may differ slightly" in between.
DIFFERENT_CORRELATION = 0.90
DIFFERENT_SHARE_SHIFT = 0.15
SAME_CORRELATION = 0.95
SAME_SHARE_SHIFT = 0.10
VERDICT_RULE = (
    f"likely to train differently: advantage correlation with GRPO < {DIFFERENT_CORRELATION} or a reward's share of "
    f"the advantage moved by >= {DIFFERENT_SHARE_SHIFT}; unlikely: correlation >= {SAME_CORRELATION} and every share "
    f"moved by < {SAME_SHARE_SHIFT}; otherwise may differ slightly. No group with spread: no signal for any rule."
)
LIKELY, SLIGHT, UNLIKELY, NO_SIGNAL = "likely", "slight", "unlikely", "no signal"
NOT_APPLIED = "not applied"  # a rule whose options do not fit these rewards (rule_options_for raised, naming why)


def reward_summary(rewards: torch.Tensor, names: Sequence[str], num_generations: int) -> dict[str, dict]:
    """Per reward: ``mean``, ``std`` (Bessel), ``min``, ``max`` over the completions it applies to, ``applied``
    (share of completions not NaN) and ``zero_spread_groups`` (share of groups where it is constant or applies to
    fewer than two completions)."""
    zero_spread = (~group_has_spread(rewards, num_generations)).double().mean(dim=0)
    result = {}
    for k, name in enumerate(names):
        column = rewards[:, k]
        seen = column[~torch.isnan(column)]
        result[name] = {
            "mean": seen.mean().item() if seen.numel() else None,
            "std": seen.std().item() if seen.numel() > 1 else None,
            "min": seen.min().item() if seen.numel() else None,
            "max": seen.max().item() if seen.numel() else None,
            "applied": seen.numel() / max(column.numel(), 1),
            "zero_spread_groups": zero_spread[k].item(),
        }
    return result


def pearson(x: torch.Tensor, y: torch.Tensor) -> float | None:
    """Pearson correlation of two ``[M]`` tensors over the positions where both are set; None where fewer than two
    such positions exist or one of them is constant there."""
    both = ~(torch.isnan(x) | torch.isnan(y))
    x, y = x[both].double(), y[both].double()
    if x.numel() < 2:
        return None
    x, y = x - x.mean(), y - y.mean()
    norm = x.norm() * y.norm()
    return (x @ y / norm).item() if norm > 0 else None


def reward_correlations(rewards: torch.Tensor, names: Sequence[str]) -> dict[str, float | None]:
    """Pearson correlation over completions of every pair of rewards, keyed ``"a~b"`` (None: undefined)."""
    return {
        f"{names[i]}~{names[j]}": pearson(rewards[:, i], rewards[:, j])
        for i in range(len(names))
        for j in range(i + 1, len(names))
    }


def pair_orders(advantages: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N / G, G, G]`` in {-1, 0, 1}: the sign of ``a_i - a_j`` for each pair of a group, 0 within :data:`TIE`."""
    grouped = in_groups(advantages, num_generations)
    difference = grouped.unsqueeze(2) - grouped.unsqueeze(1)
    return torch.where(difference.abs() < TIE, torch.zeros_like(difference), difference.sign())


def live_groups(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N / G]`` bool: groups in which some reward has spread (the only ones any rule gives a signal in)."""
    return group_has_spread(rewards, num_generations).any(dim=1)


def rule_against_baseline(
    advantages: torch.Tensor, baseline: torch.Tensor, live: torch.Tensor, num_generations: int
) -> dict[str, float | None]:
    """How a rule's advantages ``[N]`` differ from the baseline's (GRPO's) ``[N]``, over the ``live`` groups ``[N/G]``:

    - ``advantage_correlation``: Pearson over the completions of live groups (None: undefined);
    - ``groups_ranked_differently``: share of live groups with a pair the two order differently (opposite signs, or
      tied by exactly one of them);
    - ``discordant_pairs``: share of the live groups' pairs ordered oppositely;
    - ``collapsed_pairs``: share of those pairs GRPO ties and the rule tells apart.
    """
    rule_orders, base_orders = pair_orders(advantages, num_generations), pair_orders(baseline, num_generations)
    rule_orders, base_orders = rule_orders[live], base_orders[live]
    upper = torch.triu(torch.ones(num_generations, num_generations, dtype=torch.bool), diagonal=1)
    pairs = int(upper.sum()) * int(live.sum())
    if pairs == 0:
        return dict.fromkeys(
            ("advantage_correlation", "groups_ranked_differently", "discordant_pairs", "collapsed_pairs")
        )
    differs = (rule_orders != base_orders) & upper
    rows = live.repeat_interleave(num_generations)
    return {
        "advantage_correlation": pearson(advantages[rows], baseline[rows]),
        "groups_ranked_differently": differs.flatten(1).any(dim=1).double().mean().item(),
        "discordant_pairs": ((rule_orders * base_orders < 0) & upper).sum().item() / pairs,
        "collapsed_pairs": ((base_orders == 0) & (rule_orders != 0) & upper).sum().item() / pairs,
    }


def reward_shares(
    rule: str,
    rewards: torch.Tensor,
    weights: torch.Tensor,
    names: Sequence[str],
    num_generations: int,
    options: dict | None = None,
) -> dict[str, float]:
    """Each reward's share of the rule's advantage mass: its weighted per-reward parts as
    :func:`gdpo_trl.core.diagnostics.advantage_shares` takes them: the rule's own (``rule_parts``, e.g. SAW's
    weights from the batch) where it has them, else ``Rule.per_reward``'s (each reward normalized within its group,
    or centered)."""
    parts = rule_parts(rule, rewards, weights, num_generations, options or {})
    if parts is not None:
        terms, weights = parts
    elif RULES[rule].per_reward == "normalized":
        terms = gdpo_reward_terms(rewards, num_generations)
    else:
        terms = center_per_group(rewards, num_generations)
    return dict(zip(names, advantage_shares(terms, weights).tolist(), strict=True))


def verdict(correlation: float | None, share_shift: float, live_share: float) -> str:
    """:data:`VERDICT_RULE` applied: one of :data:`LIKELY`, :data:`SLIGHT`, :data:`UNLIKELY`, :data:`NO_SIGNAL`."""
    if live_share == 0:
        return NO_SIGNAL
    if correlation is None or correlation < DIFFERENT_CORRELATION or share_shift >= DIFFERENT_SHARE_SHIFT:
        return LIKELY
    if correlation >= SAME_CORRELATION and share_shift < SAME_SHARE_SHIFT:
        return UNLIKELY
    return SLIGHT


VERDICT_WORDS = {
    LIKELY: "likely to train differently",
    SLIGHT: "may train slightly differently",
    UNLIKELY: "unlikely to train differently",
    NO_SIGNAL: "no group has any spread: no rule has a signal to train on",
    NOT_APPLIED: "not applied to these rewards",
}


VERDICT_CLAUSES = {
    LIKELY: "are likely to train differently",
    SLIGHT: "may train slightly differently",
    UNLIKELY: "are unlikely to train differently",
}


def verdict_sentence(rule: str, figures: dict) -> str:
    """The verdict in plain words, with the figures it rests on."""
    if figures["verdict"] == NO_SIGNAL:
        return f"{rule}: {VERDICT_WORDS[NO_SIGNAL]}."
    correlation = figures["advantage_correlation"]
    shown = "undefined" if correlation is None else f"{correlation:.3f}"
    return (
        f"{rule}'s advantages correlate {shown} with GRPO's, rank "
        f"{figures['groups_ranked_differently']:.0%} of groups differently and move a reward's share by at most "
        f"{figures['share_shift']:.2f}: on these rewards the two {VERDICT_CLAUSES[figures['verdict']]}."
    )


def gaming_risk(rewards: torch.Tensor, names: Sequence[str]) -> dict | None:
    """How often an easier reward pays where the hardest one fails, on each reward's range seen.

    Each reward is rescaled to [0, 1] over its observed range; it *pays* at >= 0.5 and *fails* below. The hardest is
    the one with the lowest mean rescaled value. For each other reward: ``pays_while_hardest_fails`` (share of the
    completions both apply to) and ``of_its_payments`` (share of its paying completions where the hardest fails).
    None with fewer than two rewards or when no reward varies.
    """
    low = torch.nan_to_num(rewards, nan=math.inf).amin(dim=0)
    high = torch.nan_to_num(rewards, nan=-math.inf).amax(dim=0)
    varies = high > low
    if rewards.shape[1] < 2 or not varies.any():
        return None
    scaled = (rewards - low) / torch.where(varies, high - low, torch.ones_like(high))
    means = torch.nanmean(scaled, dim=0).masked_fill(~varies, math.inf)
    hardest = int(means.argmin())
    fails = scaled[:, hardest] < 0.5
    easier = {}
    for k, name in enumerate(names):
        if k == hardest or not varies[k]:
            continue
        both = ~(torch.isnan(scaled[:, k]) | torch.isnan(scaled[:, hardest]))
        pays = (scaled[:, k] >= 0.5) & both
        easier[name] = {
            "pays_while_hardest_fails": (pays & fails).sum().item() / max(int(both.sum()), 1),
            "of_its_payments": (pays & fails).sum().item() / max(int(pays.sum()), 1),
        }
    return {"hardest": names[hardest], "easier": easier}


def options_for_rules(reward_funcs: Sequence | None, names: Sequence[str], config=None) -> dict[str, dict | str]:
    """Each rule's options as a run of ``config`` (a ``GDPOConfig``, or None: the fields' defaults) would give them
    (:func:`gdpo_trl.core.rules.rule_options_for`: SAW's offsets, ODRPO's thresholds from the rewards' declared
    ranges), or the one-line reason the rule cannot be applied to these rewards (a str)."""
    from types import SimpleNamespace

    funcs = list(reward_funcs) if reward_funcs is not None else []
    funcs += [None] * (len(names) - len(funcs))  # an environment's get_reward: no declared range
    config = config if config is not None else SimpleNamespace()
    found: dict[str, dict | str] = {}
    for name in RULES:
        try:
            found[name] = rule_options_for(name, funcs, list(names), config)
        except InputError as error:
            found[name] = str(error)
    if getattr(config, "gd2po_threshold", None) is not None and isinstance(found.get("gd2po"), dict):
        found["gd2po"]["threshold"] = config.gd2po_threshold
    return found


def pilot_figures(
    rewards: torch.Tensor,
    names: Sequence[str],
    weights: Sequence[float] | torch.Tensor,
    num_generations: int,
    rule_options: dict[str, dict | str] | None = None,
) -> dict:
    """Every figure of a pilot (but the plan) from ``rewards`` ``[N, K]``, reward ``names``, ``weights`` ``[K]``.

    ``rule_options`` maps a rule to its options, or to the reason it does not apply here (a str; reported, not
    compared); rules it leaves out get :func:`options_for_rules`' defaults. Each rule of :data:`RULES` is compared
    with ``grpo``.
    """
    rewards = rewards.double()
    weights = torch.as_tensor(weights, dtype=torch.float64).reshape(-1)
    options = {**options_for_rules(None, names), **(rule_options or {})}
    live = live_groups(rewards, num_generations)
    baseline = rule_advantages(BASELINE, rewards, weights, num_generations, **options[BASELINE])
    base_shares = reward_shares(BASELINE, rewards, weights, names, num_generations, options[BASELINE])
    rules = {}
    for name in RULES:
        if isinstance(options[name], str):
            rules[name] = {"verdict": NOT_APPLIED, "reason": options[name]}
            continue
        advantages = rule_advantages(name, rewards, weights, num_generations, **options[name])
        figures = rule_against_baseline(advantages, baseline, live, num_generations)
        shares = reward_shares(name, rewards, weights, names, num_generations, options[name])
        figures["advantage_share"] = shares
        figures["share_shift"] = max(abs(shares[r] - base_shares[r]) for r in names)
        figures["verdict"] = verdict(figures["advantage_correlation"], figures["share_shift"], live.double().mean())
        rules[name] = figures
    conflict = conflict_diagnostics(rewards, weights, num_generations)["conflict/share"] if len(names) > 1 else 0.0
    return {
        "completions": rewards.shape[0],
        "groups": rewards.shape[0] // num_generations,
        "groups_with_spread": live.double().mean().item(),
        "rewards": reward_summary(rewards, names, num_generations),
        "correlation": reward_correlations(rewards, names),
        "conflict_share": conflict,
        "rules": rules,
        "gaming_risk": gaming_risk(rewards, names),
        "verdict_rule": VERDICT_RULE,
    }


# The between-seed spread a plan assumes, as gdpo compare's caveat does with one seed: the median, over the committed
# seed studies H1-H7, of a 0..1 reward's final's standard deviation between seeds (gdpo_trl.results.seed_power).
SEED_SD_SOURCE = "the committed seed studies H1-H7: the median between-seed SD of a 0..1 reward's final"


def plan(
    summary: dict[str, dict],
    difference: float = 0.03,
    *,
    seed_sd: float | None = None,
    seed_sd_source: str = SEED_SD_SOURCE,
    power: float = 0.8,
    alpha: float = 0.05,
) -> dict:
    """Seeds per arm and evaluation size to see ``difference`` on each reward at ``power``, Holm across the rewards.

    - seeds per arm: Welch's test on the runs' final means, between-seed SD ``seed_sd`` (default
      :data:`gdpo_trl.results.seed_power.STUDY_SEED_SD`, from the committed studies, as ``gdpo compare`` plans with
      one seed; a reward seen on a wider range than [0, 1] scales it: ``seed_sd * (max - min)``);
    - evaluation problems: the per-problem difference between two arms on one shared set has, at most, twice a
      completion's variance seen in the pilot (independent arms; paired problems only lower it); a paired t at that SD.
    ``summary`` is :func:`reward_summary`'s. Rewards that never vary in the pilot are left out (nothing to see).
    """
    from gdpo_trl.results.seed_power import STUDY_SEED_SD
    from gdpo_trl.results.stats import evaluation_size_for_power, seeds_for_power

    seed_sd = STUDY_SEED_SD if seed_sd is None else seed_sd
    varied = {name: s for name, s in summary.items() if s["std"] is not None and s["std"] > 0}
    k = max(len(varied), 1)
    per_reward, seed_counts = {}, {}
    for name, s in varied.items():
        scale = max(1.0, s["max"] - s["min"])
        if scale not in seed_counts:  # the exact power search takes a while: once per scale (0/1 rewards share one)
            seed_counts[scale] = seeds_for_power(
                difference * scale, seed_sd * scale, rewards=k, alpha=alpha, power=power
            )
        seeds = seed_counts[scale]
        problems = evaluation_size_for_power(
            difference * scale, sd=math.sqrt(2) * s["std"], rewards=k, alpha=alpha, power=power
        )
        per_reward[name] = {"seeds_per_arm": seeds, "evaluation_problems": problems, "difference": difference * scale}
    return {
        "difference": difference,
        "power": power,
        "alpha": alpha,
        "holm_rewards": k,
        "seed_sd": seed_sd,
        "seed_sd_source": seed_sd_source,
        "rewards": per_reward,
        "seeds_per_arm": max((r["seeds_per_arm"] for r in per_reward.values()), default=None),
        "evaluation_problems": max((r["evaluation_problems"] for r in per_reward.values()), default=None),
    }


# --- The report: a table for the terminal, Markdown for pilot.md, a PNG -----------------------------------------


def _number(value, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def headline(report: dict) -> str:
    """The verdict for GDPO against GRPO, in plain words (the pilot's first answer)."""
    return verdict_sentence("GDPO", report["rules"]["gdpo"])


def gaming_line(report: dict) -> str:
    risk = report["gaming_risk"]
    if risk is None:
        return "Gaming risk: needs two rewards that vary."
    parts = [
        f"{name} pays while {risk['hardest']} fails on {v['pays_while_hardest_fails']:.0%} of completions "
        f"({v['of_its_payments']:.0%} of {name}'s payments)"
        for name, v in risk["easier"].items()
    ]
    lead = f"Gaming risk ({risk['hardest']} is the hardest reward): "
    return (
        lead
        + ("; ".join(parts) if parts else "no other reward varies")
        + (
            ". A policy learns what pays first: where this is high, condition the easier reward on the hardest "
            "(reward_conditions) or make it need the work."
            if parts
            else "."
        )
    )


def plan_line(report: dict) -> str:
    p = report["plan"]
    if p["seeds_per_arm"] is None:
        return "Plan: no reward varied in the pilot, so there is nothing to plan for."
    return (
        f"Plan: to see a difference of {p['difference']} on each of {p['holm_rewards']} rewards (80% power, Holm): "
        f"{p['seeds_per_arm']} seeds per arm (between-seed SD {p['seed_sd']}, from {p['seed_sd_source']}) and "
        f"{p['evaluation_problems']:,} evaluation problems (twice the pilot's per-completion variance)."
    )


def rule_rows(report: dict) -> list[list[str]]:
    rows = []
    for name, f in report["rules"].items():
        if name == BASELINE:
            continue
        if f["verdict"] == NOT_APPLIED:
            rows.append([name, "-", "-", "-", "-", f"not applied: {f['reason']}"])
            continue
        rows.append(
            [
                name,
                _number(f["advantage_correlation"]),
                _number(f["groups_ranked_differently"], ".0%") if f["groups_ranked_differently"] is not None else "-",
                _number(f["collapsed_pairs"]),
                _number(f["share_shift"], ".2f"),
                VERDICT_WORDS[f["verdict"]],
            ]
        )
    return rows


def reward_rows(report: dict) -> list[list[str]]:
    return [
        [
            name,
            _number(s["mean"]),
            _number(s["std"]),
            f"{_number(s['min'], 'g')} .. {_number(s['max'], 'g')}",
            _number(s["zero_spread_groups"], ".2f"),
            _number(s["applied"], ".2f"),
        ]
        for name, s in report["rewards"].items()
    ]


REWARD_HEADER = ["reward", "mean", "std", "range", "zero-spread groups", "applied"]
RULE_HEADER = [
    "rule vs GRPO",
    "advantage corr.",
    "groups ranked differently",
    "collapsed pairs",
    "share shift",
    "verdict",
]


def settings_line(report: dict) -> str:
    s = report["settings"]
    return (
        f"{s['prompts']} prompts x {s['num_generations']} completions of {s['model']} on {s['dataset']} "
        f"(temperature {s['temperature']}, top-p {s['top_p']}, {s['max_completion_length']} new tokens, seed "
        f"{s['seed']}, {s['backend']}): {s['completions']} completions, mean {s['mean_tokens']:.1f} tokens, "
        f"{s['truncated_share']:.0%} cut, generated in {s['generation_time_s']:.0f} s."
    )


def correlation_line(report: dict) -> str:
    pairs = ", ".join(f"{k} {_number(v, '+.2f')}" for k, v in report["correlation"].items()) or "one reward"
    return f"Between rewards: {pairs}; conflict share {report['conflict_share']:.3f}."


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)


def _step_line(report: dict) -> str | None:
    step = report.get("step_time")
    if not step:
        return None
    return (
        f"One training step here: {step['seconds']} s, so one run of {step['max_steps']} steps about "
        f"{step['run_hours']} h; the plan's seeds x 2 arms about "
        f"{step['run_hours'] * 2 * (report['plan']['seeds_per_arm'] or 0):.1f} h."
    )


def report_text(report: dict) -> str:
    """What ``gdpo pilot`` prints."""
    parts = [
        "Pilot: " + settings_line(report),
        _text_table(REWARD_HEADER, reward_rows(report)),
        correlation_line(report),
        _text_table(RULE_HEADER, rule_rows(report)),
        "Verdict: " + headline(report),
        gaming_line(report),
        plan_line(report),
        _step_line(report),
    ]
    return "\n".join(p for p in parts if p)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def report_markdown(report: dict) -> str:
    """``pilot.md``: the same report, with the verdict rule and every rule's share of the advantage per reward."""
    names = list(report["rewards"])
    share_rows = [
        [rule, *(f"{f['advantage_share'][n]:.2f}" for n in names)]
        for rule, f in report["rules"].items()
        if "advantage_share" in f
    ]
    parts = [
        "# gdpo pilot",
        "**" + headline(report) + "**",
        settings_line(report),
        "## Rewards",
        _markdown_table(REWARD_HEADER, reward_rows(report)),
        correlation_line(report),
        "## Every rule against GRPO",
        _markdown_table(RULE_HEADER, rule_rows(report)),
        "Each reward's share of the advantage under each rule:",
        _markdown_table(["rule", *names], share_rows),
        f"Verdict rule (docs/pilot.md): {report['verdict_rule']}",
        "## Gaming risk",
        gaming_line(report),
        "## Plan",
        plan_line(report),
        _step_line(report),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def import_plotting() -> None:
    """matplotlib with its file-only backend (``gdpo pilot`` runs this in a thread while the model generates)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401


def plot_pilot(report: dict, path) -> None:
    """``pilot.png``: each rule's advantage correlation with GRPO and share of groups ranked differently (left, with
    the verdict thresholds), and each rule's share of the advantage per reward (right)."""
    import_plotting()
    import matplotlib.pyplot as plt

    rules = [r for r, f in report["rules"].items() if "advantage_share" in f]
    names = list(report["rewards"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.6))
    positions = range(len(rules))
    correlation = [report["rules"][r]["advantage_correlation"] or 0.0 for r in rules]
    ranked = [report["rules"][r]["groups_ranked_differently"] or 0.0 for r in rules]
    left.bar([p - 0.2 for p in positions], correlation, width=0.4, label="advantage correlation with GRPO")
    left.bar([p + 0.2 for p in positions], ranked, width=0.4, label="groups ranked differently")
    left.axhline(DIFFERENT_CORRELATION, color="grey", linestyle="--", linewidth=0.8)
    left.axhline(SAME_CORRELATION, color="grey", linestyle=":", linewidth=0.8)
    left.set_xticks(list(positions), rules, rotation=30, ha="right")
    left.set_ylim(0, 1.05)
    left.set_title("How each rule orders groups against GRPO")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.36), ncol=2, frameon=False)
    bottom = [0.0] * len(rules)
    for name in names:
        shares = [report["rules"][r]["advantage_share"][name] for r in rules]
        right.bar(list(positions), shares, bottom=bottom, label=name)
        bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
    right.set_xticks(list(positions), rules, rotation=30, ha="right")
    right.set_ylim(0, 1.0)
    right.set_title("Each reward's share of the advantage")
    right.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.suptitle(headline(report), fontsize=8)
    # Margins set by hand: tight_layout and bbox_inches="tight" each draw the figure once more (seconds on a busy CPU).
    fig.subplots_adjust(left=0.05, right=0.82, bottom=0.32, top=0.86, wspace=0.18)
    fig.savefig(path, dpi=90)
    plt.close(fig)
