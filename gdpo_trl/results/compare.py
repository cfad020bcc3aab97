"""GRPO vs GRPO without std vs GDPO on the same task, from the same start, over several seeds.

Each (method, seed) run is an ordinary ``GDPOTrainer`` run of one recipe whose config differs in the method's fields
(:data:`METHODS`) and the seed only, so an A/B differs in one config field, as in the paper. Results are read back
from each run's ``trainer_state.json`` with :mod:`gdpo_trl.results.runs`, so ``gdpo plot`` can also draw any of them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from gdpo_trl.results.runs import Run, curve_stats, load_run, reward_key, reward_names, smooth
from gdpo_trl.rewards import reward_name
from gdpo_trl.rewards.process import is_process_reward

# Method name -> what makes it: recipe fields (gdpo train's flags) it sets on top of the recipe, plus, for
# OUTCOME_ONLY, that the recipe's process rewards are only logged, not trained on. Everything else is the recipe's.
OUTCOME_ONLY = "outcome_only"  # not a recipe field: see outcome_only_rewards
METHODS: dict[str, dict] = {
    "grpo": dict(multi_objective_aggregation="sum_then_normalize", scale_rewards="group"),
    "grpo_no_std": dict(multi_objective_aggregation="sum_then_normalize", scale_rewards="none"),
    "gdpo": dict(multi_objective_aggregation="normalize_then_sum", scale_rewards="group"),
    "gdpo_no_bn": dict(multi_objective_aggregation="normalize_then_sum", scale_rewards="group", gdpo_batch_norm=False),
    "gd2po": dict(multi_objective_aggregation="gd2po", scale_rewards="group"),  # threshold: the recipe's
    # GDPO's published follow-ups (docs/rules.md); SAW's offsets and ODRPO's thresholds: the recipe's, or defaults
    "mo_grpo": dict(multi_objective_aggregation="mo_grpo", scale_rewards="group"),
    "saw_gdpo": dict(multi_objective_aggregation="saw_gdpo", scale_rewards="group"),
    "saw_grpo": dict(multi_objective_aggregation="saw_grpo", scale_rewards="group"),
    "odrpo": dict(multi_objective_aggregation="odrpo", scale_rewards="group"),
    "gdpo_outcome_only": dict(
        multi_objective_aggregation="normalize_then_sum", scale_rewards="group", outcome_only=True
    ),
}
LABELS = {
    "grpo": "GRPO",
    "grpo_no_std": "GRPO w/o std",
    "gdpo": "GDPO",
    "gdpo_no_bn": "GDPO w/o batch norm",
    "gd2po": "GD2PO",
    "mo_grpo": "MO-GRPO",
    "saw_gdpo": "SAW (gdpo-h)",
    "saw_grpo": "SAW (grpo-h)",
    "odrpo": "ODRPO",
    "gdpo_outcome_only": "GDPO outcome only",
}


class OutcomeScore:
    """A process reward seen as an outcome reward: per completion, the mean of its step scores (None without steps).

    Named like the process reward, so a run that only logs it (weight 0) and a run that trains on it both log
    ``rewards/<name>/mean`` as the mean over completions of the mean step score.
    """

    def __init__(self, process_reward):
        self.process_reward = process_reward
        self.__name__ = reward_name(process_reward)

    def __call__(self, completions, **kwargs):
        steps = self.process_reward(completions=completions, **kwargs)
        return [sum(score for _, score in pairs) / len(pairs) if pairs else None for pairs in steps]


def outcome_only_rewards(reward_funcs: list, weights: list[float] | None) -> tuple[list, list[float]]:
    """The rewards and weights of an OUTCOME_ONLY run: each process reward becomes its :class:`OutcomeScore` with
    weight 0, which changes no advantage (its GDPO term is multiplied by 0, and a None score is left out like any
    reward that does not apply), so the run trains on the outcome rewards alone and still logs the process score."""
    weights = [1.0] * len(reward_funcs) if weights is None else list(weights)
    process = [is_process_reward(f) for f in reward_funcs]
    funcs = [OutcomeScore(f) if p else f for f, p in zip(reward_funcs, process, strict=True)]
    return funcs, [0.0 if p else w for w, p in zip(weights, process, strict=True)]


@dataclass
class MethodCurves:
    """One method's runs, aligned by step: ``values[metric][seed_index][step_index]``."""

    method: str
    steps: list[int]
    values: dict[str, list[list[float]]]


def run_dir(out_dir: Path, method: str, seed: int) -> Path:
    return Path(out_dir) / f"{method}-seed{seed}"


def collect(out_dir: Path, method: str, seeds: list[int], metrics: list[str]) -> MethodCurves:
    """Load every seed's run of ``method`` and align the ``metrics`` series on their common steps."""
    runs: list[Run] = [load_run(run_dir(out_dir, method, seed)) for seed in seeds]
    steps = sorted(set.intersection(*({s for s, _ in run.history.get(metrics[0], [])} for run in runs)))
    values = {
        metric: [[dict(run.history.get(metric, []))[s] for s in steps] for run in runs]
        for metric in metrics
        if all(metric in run.history for run in runs)
    }
    return MethodCurves(method, steps, values)


def logged_reward_names(recipe_names: list[str], runs: list[Run]) -> list[str]:
    """The rewards the runs logged, in the recipe's order: a conditioned reward under the name it is logged with
    (``agent_cost`` as ``agent_cost_if_agent_success``), then the logged rewards the recipe does not list, such as
    an environment's own (``ShopEnv``, which TRL adds)."""
    logged = reward_names(runs)
    ordered = [
        name for recipe in recipe_names for name in logged if name == recipe or name.startswith(f"{recipe}_if_")
    ]
    return ordered + [name for name in logged if name not in ordered]


def steps_to_reach(steps: list[int], values: list[float], target: float, window: int) -> int | None:
    """First step at which the ``window``-smoothed curve reaches ``target``; None if it never does."""
    for step, value in zip(steps, smooth(values, window), strict=True):
        if value >= target:
            return step
    return None


def _mean_spread(xs: list[float]) -> str:
    return f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else f"{xs[0]:.3f}"


def final_label(tail: int, steps: int) -> str:
    """The final column's heading: the last ``tail`` logged steps, or all of them in a run no longer than that."""
    if steps <= 1:
        return "final (its only step)"
    if tail >= steps:
        return f"final (all {steps} steps)"
    return "final (last step)" if tail == 1 else f"final (last {tail} steps)"


def metric_key(name: str) -> str:
    """The log key of a compared reward, or of the total (``reward``)."""
    return "reward" if name == "reward" else reward_key(name)


def reward_range(curves: list[MethodCurves], key: str) -> float:
    """A reward's range as these runs saw it: the largest minus the smallest of its logged per-step batch means over
    every run of every method (a reward's possible range is not logged; this puts a 0..5 reward and a 0/1 one on a
    comparable footing, so a threshold that is a share of it means the same for both)."""
    values = [v for c in curves if key in c.values for run in c.values[key] for v in run]
    return max(values) - min(values) if values else 0.0


def comparison_table(
    curves: list[MethodCurves], reward_names: list[str], *, gain: float, window: int, tail: int
) -> str:
    """Markdown: per method and reward, the final value (mean of the last ``tail`` logged steps, all of them in a
    shorter run; mean ± std over seeds), the start value (step 1: before any update, so the same for every method of
    a seed), the reward's range in these runs (:func:`reward_range`), steps to reach start + ``gain`` of that range
    (smoothed over ``window`` steps; seeds that never reach it are counted as such; ``-`` for a reward that did not
    move), and the area under the curve per step (the mean level over training). Methods whose runs logged the
    same rewards at every step get a note under the table (:func:`identical_note`)."""
    steps = min((len(c.steps) for c in curves), default=0)
    lines = [
        f"| method | reward | start | {final_label(tail, steps)} | range seen | steps to start + {gain:.0%} of range "
        "| mean level (AUC/steps) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    ranges = {name: reward_range(curves, metric_key(name)) for name in reward_names}
    for c in curves:
        for name in reward_names:
            key = metric_key(name)
            if key not in c.values:
                continue
            per_seed = c.values[key]
            start = statistics.mean(v[0] for v in per_seed)
            finals = [statistics.mean(v[-tail:]) for v in per_seed]
            reached = [steps_to_reach(c.steps, v, v[0] + gain * ranges[name], window) for v in per_seed]
            hit = [r for r in reached if r is not None]
            if ranges[name] == 0:
                reach = "-"  # no reward moved: no threshold to reach
            elif hit:
                reach = f"{statistics.mean(hit):.1f} ({len(hit)}/{len(reached)} seeds)"
            else:
                reach = f"never (0/{len(reached)})"
            levels = [curve_stats(list(zip(c.steps, v, strict=True))).mean_level for v in per_seed]
            lines.append(
                f"| {LABELS.get(c.method, c.method)} | {name} | {start:.3f} | {_mean_spread(finals)} | "
                f"{ranges[name]:.3f} | {reach} | {_mean_spread(levels)} |"
            )
    note = identical_note(curves)
    return "\n".join(lines) + (f"\n\n{note}" if note else "")


def identical_note(curves: list[MethodCurves]) -> str:
    """A note naming the methods whose runs logged the same rewards (every compared metric) at every step, or ``""``.

    Not a bug: runs of one seed draw the same random numbers, so they sample the same completions until their
    updates have moved the model far enough to change a sampled token, and a few steps at a small learning rate
    often do not (the demo's recipe: the methods' curves part after several steps)."""
    groups: dict[str, list[str]] = {}
    for c in curves:
        groups.setdefault(repr((c.steps, sorted(c.values.items()))), []).append(LABELS.get(c.method, c.method))
    same = [names for names in groups.values() if len(names) > 1]
    if not same:
        return ""
    named = "; ".join(", ".join(names[:-1]) + " and " + names[-1] for names in same)
    return (
        f"Note: {named} logged the same rewards at every step. Runs of one seed sample with the same random numbers, "
        "so they write the same completions until their updates have changed the model enough to change a sampled "
        "token; these runs were too short for that. Run more steps (the recipe's, without --steps) to compare them."
    )


# The conflict metrics every multi-reward run logs (GD2PO adds the kept shares), in the order the tables show them.
CONFLICT_KEYS = (
    "conflict/share",
    "conflict/masked_share",
    "conflict/kept_share",
    "conflict/group_keep_ratio_min",
)
# What GD2PO's rule masks and keeps: every run logs the masked share (what GD2PO *would* mask), but only a GD2PO run
# masks anything, so these are shown for GD2PO runs alone (a GDPO row's "masked" share reads as if it masked).
GD2PO_KEYS = CONFLICT_KEYS[1:]
GD2PO = "gd2po"


def conflict_table(curves: list[MethodCurves]) -> str:
    """Markdown: per method, how often its rollouts' rewards conflicted (``conflict/share``) and, for GD2PO's runs
    only, the share its rule masked (``conflict/masked_share``) and what it kept: each run's mean over its logged
    steps, then mean ± std over seeds; ``-`` where a method did not log the metric, and in GD2PO's columns for every
    other method. Empty when no run logged any (a single reward, or process rewards)."""
    shown = [c for c in curves if c.method == GD2PO]
    keys = [k for k in CONFLICT_KEYS if any(k in c.values for c in (shown if k in GD2PO_KEYS else curves))]
    if not keys:
        return ""
    lines = ["| method | " + " | ".join(f"`{k}`" for k in keys) + " |", "|---|" + "---:|" * len(keys)]
    for c in curves:
        cells = [
            _mean_spread([statistics.fmean(v) for v in c.values[k]])
            if k in c.values and (c.method == GD2PO or k not in GD2PO_KEYS)
            else "-"
            for k in keys
        ]
        lines.append(f"| {LABELS.get(c.method, c.method)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_comparison(
    curves: list[MethodCurves], reward_names: list[str], out_png: Path, *, window: int, title: str, total: bool = True
):
    """Write :func:`comparison_figure` to ``out_png``."""
    comparison_figure(curves, reward_names, window=window, title=title, total=total).savefig(out_png, dpi=110)
    return out_png


def comparison_figure(
    curves: list[MethodCurves], reward_names: list[str], *, window: int, title: str, total: bool = True
):
    """One panel per reward (and the total, with ``total``): each method's mean curve over seeds, with a min-max
    band; ticks at whole steps only, one legend below the panels (outside every axis, so it covers no line)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    panels = [n for n in reward_names if any(reward_key(n) in c.values for c in curves)] + ["reward"] * total
    # One row of up to three panels; more wrap onto further rows (four as 2 x 2), so the figure stays readable.
    columns = 2 if len(panels) == 4 else min(len(panels), 3)
    rows = -(-len(panels) // columns)
    fig = Figure(figsize=(4.2 * columns, 3.6 * rows + 0.5), layout="constrained")  # + the legend below
    grid = fig.subplots(rows, columns, squeeze=False)
    for ax in grid.flat[len(panels) :]:
        ax.set_visible(False)
    axes = list(grid.flat[: len(panels)])
    colors = {c.method: f"C{i % 10}" for i, c in enumerate(curves)}  # one colour per method in every panel
    for ax, name in zip(axes, panels, strict=True):
        key = metric_key(name)
        for c in curves:
            if key not in c.values:
                continue
            runs = [smooth(v, window) for v in c.values[key]]
            mean = [statistics.mean(col) for col in zip(*runs, strict=True)]
            low = [min(col) for col in zip(*runs, strict=True)]
            high = [max(col) for col in zip(*runs, strict=True)]
            ax.plot(c.steps, mean, color=colors[c.method])
            ax.fill_between(c.steps, low, high, color=colors[c.method], alpha=0.15)
        ax.set_title("total reward" if name == "reward" else name)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole: no 2.5-step ticks on short runs
        ax.grid(alpha=0.3)
    for row in grid:
        row[0].set_ylabel(f"mean over seeds (smoothed {window}),\nband = min-max")
    handles = [Line2D([], [], color=colors[c.method], linewidth=1.5) for c in curves]
    labels = [LABELS.get(c.method, c.method) for c in curves]
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(curves), 4))
    fig.suptitle(title)
    return fig
