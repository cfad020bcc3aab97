"""Studies H8 and H9 read again with statistics chosen after their runs: a secondary reading, not the pre-registered
one (docs/results/README.md, part 1, fixed each study's statistic: Welch's p, a percentile-bootstrap CI, Holm).

For each study, from its committed files only (the analysis's seeds, ``docs/results/<study>.json``, and every
evaluation's completions, ``docs/results/<study>/eval-<arm>-seed<N>/completions.jsonl.gz``):

* **Welch's t 95% interval** of each registered difference (:func:`gdpo_trl.results.stats.welch_ci`), beside the
  registered bootstrap CI: with 3 or 5 seeds per arm a percentile bootstrap is too narrow (the simulation below).
* **Per-problem paired comparisons.** Every run of a study was scored on the same 200 problems, one greedy
  completion each, so each outcome is 0/1 per problem: McNemar's exact test per seed pair (seed s of one arm
  against seed s of the other) and pooled (the discordant problems summed over the seed pairs), Holm over the
  study's family. These test whether the trained models differ on these problems, not whether the methods do
  over training seeds.
* **Power at Holm's strictest level** (0.05 over the family's size) by Welch's exact power
  (:func:`gdpo_trl.results.stats.welch_test_power`): the differences the analysed seeds could detect with 80% power
  at the registered between-seed spread and at the spread the runs showed, the power the registration's
  detectable difference kept with the seeds analysed, and the seeds per arm and problems a difference of 0.03 needs.
* **The bootstrap's coverage**: how often the registered percentile bootstrap's nominal 95% interval holds the true
  difference for normal data with 3, 5, 8 and 10 values per arm (and Welch's interval beside it), simulated.

``python -m studies.second_reading`` writes docs/results/second_reading.json and .md; the tests recompute both.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np

from gdpo_trl.results.stats import (
    McNemar,
    detectable_difference,
    evaluation_size_for_power,
    holm_adjusted,
    mcnemar,
    mcnemar_exact_p,
    planned_level,
    seeds_for_power,
    welch_ci,
    welch_t_test,
    welch_test_power,
)
from studies.smollm2_study import evaluation, read_completions

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "results"
STEM = "second_reading"
OUTCOMES = ("format", "integer", "correctness")  # each a 0/1 reward of one greedy completion per problem
DIFFERENCE, POWER, ALPHA = 0.03, 0.8, 0.05
# Each study as registered: its arms' differences, the between-seed sd its power assumed, the seeds it planned, and
# the detectable difference it registered at Holm's strictest step, in between-seed standard deviations.
STUDIES = {
    "H8": {
        "stem": "smollm2_gdpo_grpo",
        "differences": [("gdpo", "grpo"), ("gdpo", "sft"), ("grpo", "sft")],
        "assumed_sd": 0.05,
        "registered_seeds": 5,
        "registered_holm_sds": 3.0,
    },
    "H9": {
        "stem": "qwen_gdpo_grpo",
        "differences": [("gdpo", "grpo")],
        "assumed_sd": 0.04,
        "registered_seeds": 5,
        "registered_holm_sds": 2.7,
        # H9's results: with 3 seeds "80% power only for about 3.5 between-seed standard deviations" (at 0.05).
        "reported_sds": 3.5,
    },
}
# The coverage simulation: normal data, no true difference, the registered bootstrap's recipe (each arm resampled
# on its own, percentile interval) with fewer resamples than its 10,000 (on 2,000 draws of 3 per arm, 1,000 and
# 10,000 resamples held 0 equally often; the coverage's own Monte Carlo error at 2,000 draws is about 0.009).
COVERAGE_SEEDS, COVERAGE_DRAWS, COVERAGE_RESAMPLES = (3, 5, 8, 10), 2000, 1000


def problem_outcomes(folder: Path) -> dict[str, list[float]]:
    """An evaluation's per-problem outcomes, in problem order: each outcome's reward of its one completion."""
    rows = sorted(read_completions(folder), key=lambda row: row["index"])
    if any(len(row["rewards"]) != 1 for row in rows):
        raise ValueError(f"{folder}: more than one completion per problem; the paired tests here need one")
    return {name: [float(row["rewards"][0][name]) for row in rows] for name in OUTCOMES}


def study_reading(name: str, docs: Path = DOCS) -> dict:
    """One study's secondary reading (the module's docstring says what each part is)."""
    spec = STUDIES[name]
    analysis = json.loads((docs / f"{spec['stem']}.json").read_text())
    seeds = analysis["seeds"]
    arms = list(dict.fromkeys(arm for pair in spec["differences"] for arm in pair))
    root = docs / spec["stem"]
    per_problem = {(arm, s): problem_outcomes(evaluation(root / f"{arm}-seed{s}")) for arm in arms for s in seeds}
    registered = {(c.get("difference", "gdpo - grpo"), c["outcome"]): c for c in analysis["comparisons"]}
    family = len(spec["differences"]) * len(OUTCOMES)
    comparisons = []
    for first, second in spec["differences"]:
        for outcome in OUTCOMES:
            a = [statistics.fmean(per_problem[first, s][outcome]) for s in seeds]
            b = [statistics.fmean(per_problem[second, s][outcome]) for s in seeds]
            welch = welch_ci(a, b)
            pairs = [mcnemar(per_problem[first, s][outcome], per_problem[second, s][outcome]) for s in seeds]
            won, lost = sum(t.first_only for t in pairs), sum(t.second_only for t in pairs)
            pooled = McNemar(won, lost, sum(t.problems for t in pairs), mcnemar_exact_p(won, lost))
            comparisons.append({
                "difference": f"{first} - {second}", "outcome": outcome, "diff": welch.diff,
                "welch_ci": [welch.low, welch.high], "welch_p": welch.p,
                "registered_bootstrap_ci": registered[f"{first} - {second}", outcome]["ci"],
                "per_seed": [{"seed": s, "first_only": t.first_only, "second_only": t.second_only, "p": t.p}
                             for s, t in zip(seeds, pairs, strict=True)],
                "pooled": {"first_only": won, "second_only": lost, "problems": pooled.problems, "p": pooled.p},
                "sd": math.sqrt((statistics.variance(a) + statistics.variance(b)) / 2),
            })  # fmt: skip
    for row, adjusted in zip(comparisons, holm_adjusted([r["pooled"]["p"] for r in comparisons]), strict=True):
        row["pooled"]["holm_p"] = adjusted
    level = planned_level(ALPHA, family)
    k = len(seeds)
    assumed = spec["assumed_sd"]
    power = {
        "family": family,
        "holm_level": level,
        "seeds": k,
        "assumed_sd": assumed,
        "detectable_at_assumed_sd": detectable_difference(k, assumed, family, ALPHA, POWER),
        "detectable_at_assumed_sd_without_holm": detectable_difference(k, assumed, 1, ALPHA, POWER),
        "registered_holm_sds": spec["registered_holm_sds"],
        "power_of_registered_difference": welch_test_power(spec["registered_holm_sds"] * math.sqrt(k / 2), k, level),
        "power_of_registered_difference_at_registered_seeds": welch_test_power(
            spec["registered_holm_sds"] * math.sqrt(spec["registered_seeds"] / 2), spec["registered_seeds"], level
        ),
        "seeds_for_difference_at_assumed_sd": seeds_for_power(DIFFERENCE, assumed, family, ALPHA, POWER),
        "reported_sds": spec.get("reported_sds"),
        "power_of_reported_difference": {
            "at_0.05": welch_test_power(spec["reported_sds"] * math.sqrt(k / 2), k, ALPHA),
            "at_holm_level": welch_test_power(spec["reported_sds"] * math.sqrt(k / 2), k, level),
        }
        if "reported_sds" in spec
        else None,
        "by_outcome": [
            {
                "difference": row["difference"],
                "outcome": row["outcome"],
                "sd": row["sd"],
                "detectable": detectable_difference(k, row["sd"], family, ALPHA, POWER) if row["sd"] > 0 else None,
                "seeds_for_difference": seeds_for_power(DIFFERENCE, row["sd"], family, ALPHA, POWER)
                if row["sd"] > 0
                else None,
                "discordant": (row["pooled"]["first_only"] + row["pooled"]["second_only"]) / row["pooled"]["problems"],
            }
            for row in comparisons
        ],
    }
    for row in power["by_outcome"]:
        fits = row["discordant"] >= DIFFERENCE
        row["problems_for_difference"] = (
            evaluation_size_for_power(DIFFERENCE, discordant=row["discordant"], rewards=family) if fits else None
        )
    problems = len(next(iter(per_problem.values()))["format"])
    return {"study": name, "analysis": f"{spec['stem']}.json", "seeds": seeds, "problems": problems,
            "comparisons": comparisons, "power": power}  # fmt: skip


def bootstrap_coverage(
    seeds=COVERAGE_SEEDS, draws: int = COVERAGE_DRAWS, resamples: int = COVERAGE_RESAMPLES, level: float = 0.95
) -> list[dict]:
    """Per sample size n: the share of ``draws`` pairs of normal samples (n values each, the same mean) whose
    percentile-bootstrap ``level`` interval of the difference of means (each sample resampled on its own,
    ``resamples`` times) holds 0, and the share whose Welch interval does (``default_rng(0)``, one stream)."""
    rng = np.random.default_rng(0)
    found = []
    for n in seeds:
        x, y = rng.normal(0.0, 1.0, (draws, n)), rng.normal(0.0, 1.0, (draws, n))
        held = 0
        for start in range(0, draws, 250):  # in chunks: 250 x resamples x n indices at a time
            xs, ys = x[start : start + 250], y[start : start + 250]
            ix = rng.integers(0, n, size=(len(xs), resamples, n))
            iy = rng.integers(0, n, size=(len(xs), resamples, n))
            means_x = np.take_along_axis(xs[:, None, :], ix, axis=2).mean(axis=2)
            means_y = np.take_along_axis(ys[:, None, :], iy, axis=2).mean(axis=2)
            low, high = np.quantile(means_x - means_y, [(1 - level) / 2, (1 + level) / 2], axis=1)
            held += int(((low <= 0) & (high >= 0)).sum())
        # Welch's interval holds 0 exactly when its test does not reject at 1 - level: the p-value is cheaper.
        welch = sum(welch_t_test(list(a), list(b)).p >= 1 - level for a, b in zip(x, y, strict=True))
        found.append({"seeds": n, "bootstrap": held / draws, "welch": welch / draws})
    return found


def reading(docs: Path = DOCS) -> dict:
    return {
        "chosen": "after the runs: a secondary reading, not the pre-registered statistic",
        "studies": [study_reading(name, docs) for name in ("H9", "H8")],
        "bootstrap_coverage": bootstrap_coverage(),
        "settings": {"difference": DIFFERENCE, "power": POWER, "alpha": ALPHA, "draws": COVERAGE_DRAWS,
                     "resamples": COVERAGE_RESAMPLES},
    }  # fmt: skip


def _p(p: float) -> str:
    return f"{p:.3g}"


def tables(result: dict) -> str:
    """docs/results/second_reading.md: per study the Welch intervals beside the registered CIs, the paired tests,
    the power; then the bootstrap's coverage."""
    lines = [
        "# H8 and H9 read again: statistics chosen after the runs (a secondary reading)",
        "",
        "Not the pre-registered statistic. Written by `python -m studies.second_reading` from the committed "
        "evaluations; docs/results/README.md reads it in the H8 and H9 sections.",
    ]
    for study in result["studies"]:
        seeds = study["seeds"]
        lines += ["", f"## {study['study']} (seeds {seeds})", ""]
        lines += ["| difference | outcome | diff | 95% Welch CI | Welch p | registered 95% bootstrap CI |",
                  "|---|---|---:|---|---:|---|"]  # fmt: skip
        lines += [f"| {c['difference']} | {c['outcome']} | {c['diff']:+.3f} | [{c['welch_ci'][0]:+.3f}, "
                  f"{c['welch_ci'][1]:+.3f}] | {_p(c['welch_p'])} | [{c['registered_bootstrap_ci'][0]:+.3f}, "
                  f"{c['registered_bootstrap_ci'][1]:+.3f}] |" for c in study["comparisons"]]  # fmt: skip
        lines += ["", f"Per problem, on the {study['problems']} problems every run was scored on, McNemar's exact test: "
                  "problems only the first arm solved : only the second, p (per seed pair, then pooled over the pairs "
                  "with Holm over the family):", ""]  # fmt: skip
        lines += ["| difference | outcome | " + " | ".join(f"seed {s}" for s in seeds) + " | pooled | Holm p |",
                  "|---|---|" + "---:|" * (len(seeds) + 2)]  # fmt: skip
        for c in study["comparisons"]:
            cells = [f"{t['first_only']}:{t['second_only']}, p {_p(t['p'])}" for t in c["per_seed"]]
            pooled = c["pooled"]
            cells.append(f"{pooled['first_only']}:{pooled['second_only']}, p {_p(pooled['p'])}")
            lines.append(
                f"| {c['difference']} | {c['outcome']} | " + " | ".join(cells) + f" | {_p(pooled['holm_p'])} |"
            )
        w = study["power"]
        lines += ["", f"Power by Welch's exact power, {w['seeds']} seeds per arm, Holm's strictest level "
                  f"{w['holm_level']:.4f} (0.05 over {w['family']}):", ""]  # fmt: skip
        lines += [
            f"- at the registered between-seed sd {w['assumed_sd']}: detectable with 80% power "
            f"{w['detectable_at_assumed_sd']:.3f} ({w['detectable_at_assumed_sd_without_holm']:.3f} at 0.05); "
            f"{w['seeds_for_difference_at_assumed_sd']} seeds per arm are needed for {result['settings']['difference']}",
            f"- the registered {w['registered_holm_sds']} between-seed sds at Holm's level: power "
            f"{w['power_of_registered_difference']:.2f} with these seeds "
            f"({w['power_of_registered_difference_at_registered_seeds']:.2f} with the registered seeds)",
        ]
        if w["reported_sds"] is not None:
            reported = w["power_of_reported_difference"]
            lines.append(
                f"- the results' {w['reported_sds']} between-seed sds with these seeds: power "
                f"{reported['at_0.05']:.2f} at 0.05, {reported['at_holm_level']:.2f} at Holm's level"
            )
        lines += ["", "| difference | outcome | sd between seeds | detectable | seeds for 0.03 | discordant share | "
                  "problems for 0.03 |", "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for o in w["by_outcome"]:
            det = "-" if o["detectable"] is None else f"{o['detectable']:.3f}"
            need = "-" if o["seeds_for_difference"] is None else str(o["seeds_for_difference"])
            size = "-" if o["problems_for_difference"] is None else str(o["problems_for_difference"])
            lines.append(f"| {o['difference']} | {o['outcome']} | {o['sd']:.4f} | {det} | {need} | "
                         f"{o['discordant']:.3f} | {size} |")  # fmt: skip
    lines += ["", "## The percentile bootstrap's coverage (normal data, simulated)", "",
              "| seeds per arm | bootstrap 95% covers | Welch 95% covers |", "|---:|---:|---:|"]  # fmt: skip
    lines += [f"| {c['seeds']} | {c['bootstrap']:.3f} | {c['welch']:.3f} |" for c in result["bootstrap_coverage"]]
    s = result["settings"]
    lines += ["", f"{s['draws']} draws per row, {s['resamples']} resamples each, `numpy.random.default_rng(0)`."]
    return "\n".join(lines) + "\n"


def json_text(result: dict) -> str:
    return json.dumps(result, indent=2) + "\n"


def write(docs: Path = DOCS) -> None:
    result = reading(docs)
    (docs / f"{STEM}.json").write_text(json_text(result))
    (docs / f"{STEM}.md").write_text(tables(result))
    print(f"wrote {docs / STEM}.json and .md")


if __name__ == "__main__":
    write()
