"""What gdpo compare says its seeds can show: the caveat that opens its table, the differences by Welch's interval
(against scipy), the bootstrap only from 8 seeds up, per-problem paired tests on a shared evaluation (against scipy),
and the committed studies' spread a one-seed comparison is planned at, recomputed from their files."""

import contextlib
import io
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from gdpo_trl.results import seed_power
from gdpo_trl.results.compare import MethodCurves
from gdpo_trl.results.paired import paired_table, read_scores, shared_evaluations
from gdpo_trl.results.stats import detectable_difference, seeds_for_power

ROOT = Path(__file__).resolve().parents[2]
KEY = "rewards/format_reward/mean"


def _curves(finals_by_method: dict[str, list[float]], steps: int = 3) -> list[MethodCurves]:
    """Curves whose every step logs the seed's final (so the mean of any tail is that final)."""
    return [
        MethodCurves(
            m, list(range(1, steps + 1)), {KEY: [[f] * steps for f in fs], "reward": [[f] * steps for f in fs]}
        )
        for m, fs in finals_by_method.items()
    ]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_one_seed_opens_with_the_caveat_at_the_studies_spread():
    plan = seed_power.seed_plan(_curves({"grpo": [0.5], "gdpo": [0.6]}), ["format_reward", "reward"], tail=1)
    assert (plan.seeds, plan.assumed, plan.sds) == (1, ["format_reward"], {"format_reward": seed_power.STUDY_SEED_SD})
    assert plan.needed == seeds_for_power(0.03, seed_power.STUDY_SEED_SD, rewards=1) and not plan.enough
    text = seed_power.caveat(plan)
    assert text.startswith("**1 seed per arm: this comparison cannot show a difference between the methods**")
    assert (
        f"{plan.needed} seeds per arm are needed to detect 0.03" in text and f"sd {seed_power.STUDY_SEED_SD}" in text
    )
    # No Welch test with one seed: no differences table.
    assert seed_power.differences_table(_curves({"grpo": [0.5], "gdpo": [0.6]}), ["format_reward"], 1, {}) == ""


def test_a_few_seeds_say_what_difference_they_can_show():
    grpo, gdpo = [0.50, 0.55, 0.60], [0.58, 0.62, 0.57]
    plan = seed_power.seed_plan(_curves({"grpo": grpo, "gdpo": gdpo}), ["format_reward", "reward"], tail=1)
    sd = math.sqrt((statistics.variance(grpo) + statistics.variance(gdpo)) / 2)  # pooled over the two methods
    assert plan.sds["format_reward"] == pytest.approx(sd) and plan.assumed == []
    assert plan.detectable["format_reward"] == pytest.approx(detectable_difference(3, sd, 1))
    text = seed_power.caveat(plan)
    assert text.startswith(
        f"**3 seeds per arm: this can only show differences of about {detectable_difference(3, sd, 1):.2f}"
    )
    assert f"{seeds_for_power(0.03, sd, 1)} seeds per arm are needed for 0.03" in text
    # A reward whose finals did not vary between seeds is planned at the studies' spread, and the caveat says so.
    flat = _curves({"grpo": grpo, "gdpo": gdpo})
    for c in flat:
        c.values["rewards/integer_reward/mean"] = [[1.0] * 3] * 3
    mixed = seed_power.seed_plan(flat, ["format_reward", "integer_reward"], tail=1)
    assert mixed.assumed == ["integer_reward"] and mixed.sds["integer_reward"] == seed_power.STUDY_SEED_SD
    assert "and for integer_reward, whose finals did not vary, at the committed seed studies'" in seed_power.caveat(
        mixed
    )
    enough = seed_power.seed_plan(_curves({"grpo": grpo, "gdpo": gdpo}), ["format_reward"], tail=1, difference=0.5)
    assert enough.enough and seed_power.caveat(enough).startswith(
        "3 seeds per arm: enough to detect a difference of 0.5"
    )


def test_a_difference_far_below_the_spread_is_said_not_searched_for():
    plan = seed_power.seed_plan(
        _curves({"grpo": [0.0, 5.0, 2.0], "gdpo": [4.0, 1.0, 3.0]}), ["format_reward"], 1, 1e-4
    )
    assert math.isinf(plan.needed) and "more than 100,000 seeds per arm are needed" in seed_power.caveat(plan)


def test_differences_by_welch_against_scipy_with_holm_and_no_bootstrap_below_eight_seeds():
    rng = np.random.default_rng(2)
    grpo, gdpo = list(rng.normal(0.5, 0.05, 3)), list(rng.normal(0.55, 0.05, 3))
    curves = _curves({"grpo": grpo, "gdpo": gdpo})
    curves[1].values["rewards/integer_reward/mean"] = [[v] * 3 for v in rng.normal(0.9, 0.02, 3)]
    curves[0].values["rewards/integer_reward/mean"] = [[v] * 3 for v in rng.normal(0.9, 0.02, 3)]
    table = seed_power.differences_table(curves, ["format_reward", "integer_reward", "reward"], 1, {"gdpo": "GDPO"})
    rows = [_cells(line) for line in table.splitlines()[2:]]
    assert "bootstrap" not in table and len(rows) == 3
    p_values = []
    for row, key in zip(rows[:2], (KEY, "rewards/integer_reward/mean"), strict=True):
        a, b = [v[0] for v in curves[1].values[key]], [v[0] for v in curves[0].values[key]]
        ref = sps.ttest_ind(a, b, equal_var=False)
        low, high = ref.confidence_interval()
        assert row[2] == f"{np.mean(a) - np.mean(b):+.3f}" and row[3] == f"[{low:+.3f}, {high:+.3f}]"
        assert float(row[4]) == pytest.approx(ref.pvalue, abs=5e-4)
        p_values.append(ref.pvalue)
    holm = sorted(p_values)
    adjusted = {holm[0]: min(1, 2 * holm[0]), holm[1]: max(min(1, 2 * holm[0]), holm[1])}
    for row, p in zip(rows[:2], p_values, strict=True):
        assert float(row[5]) == pytest.approx(adjusted[p], abs=5e-4)
    assert rows[2][0] == "reward" and rows[2][5] == "-"  # the total: shown, outside Holm's family
    eight = _curves({"grpo": list(rng.normal(0.5, 0.05, 8)), "gdpo": list(rng.normal(0.5, 0.05, 8))})
    assert "95% bootstrap CI (second reading)" in seed_power.differences_table(eight, ["format_reward"], 1, {})


def test_the_studies_spread_is_recomputed_from_their_committed_rows():
    """STUDY_SEED_SD: the median between-seed sd of a 0..1 reward's final over the committed seed studies' rows."""
    sds = []
    for path in sorted((ROOT / "docs" / "results").glob("*.json")):
        rows = json.loads(path.read_text())
        if not (isinstance(rows, list) and rows and "final" in rows[0]):
            continue  # the real-model studies' analyses and the pilots: not per-seed rows
        groups = {}
        for row in rows:
            if row["reward"] != "total":
                groups.setdefault((row["method"], row["reward"]), []).append(row["final"])
        sds += [statistics.stdev(v) for v in groups.values() if len(v) > 1 and max(v) <= 1.0 and min(v) >= 0.0]
    assert len(sds) == 83
    assert round(statistics.median(sds), 3) == seed_power.STUDY_SEED_SD


def _write_eval(folder: Path, scores: list[dict]) -> None:
    folder.mkdir(parents=True)
    rows = [{"index": i, "question": f"q{i}", "rewards": [s]} for i, s in enumerate(scores)]
    (folder / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_paired_tests_on_a_shared_evaluation_against_scipy(tmp_path):
    rng = np.random.default_rng(0)
    n, seeds = 60, [0, 1]
    data = {}
    for method, rate in (("grpo", 0.4), ("gdpo", 0.6)):
        for seed in seeds:
            correct = (rng.random(n) < rate).astype(float)
            length = rng.normal(100 if method == "grpo" else 90, 10, n)
            data[method, seed] = (correct, length)
            _write_eval(tmp_path / f"eval-{method}-seed{seed}",
                        [{"correctness": c, "length": ln} for c, ln in zip(correct, length, strict=True)])  # fmt: skip
    scores, why = shared_evaluations(tmp_path, ["grpo", "gdpo"], seeds)
    assert why == "" and len(scores) == 4
    table = paired_table(scores, ["grpo", "gdpo"], seeds, {"grpo": "GRPO", "gdpo": "GDPO"})
    rows = {_cells(line)[0]: _cells(line) for line in table.splitlines()[2:] if line.startswith("| ")}
    for seed, cell in zip(seeds, rows["correctness"][3:5], strict=True):
        x, y = data["gdpo", seed][0], data["grpo", seed][0]
        first, second = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
        p = sps.binomtest(min(first, second), first + second, 0.5).pvalue
        assert cell.startswith(f"{(first - second) / n:+.3f} ({first}:{second}), p ") and float(cell.split("p ")[1]) == pytest.approx(p, abs=5e-4)  # fmt: skip
    for seed, cell in zip(seeds, rows["length"][3:5], strict=True):
        ref = sps.ttest_rel(data["gdpo", seed][1], data["grpo", seed][1])
        low, high = ref.confidence_interval()
        assert f"[{low:+.3f}, {high:+.3f}]" in cell and float(cell.split("p ")[1]) == pytest.approx(
            ref.pvalue, abs=5e-4
        )
    # Pooled length: the paired t on each problem's mean over the seeds.
    pooled = sps.ttest_rel(
        np.mean([data["gdpo", s][1] for s in seeds], 0), np.mean([data["grpo", s][1] for s in seeds], 0)
    )
    assert f"[{pooled.confidence_interval()[0]:+.3f}, {pooled.confidence_interval()[1]:+.3f}]" in rows["length"][5]
    assert "on the 60 problems every run was evaluated on" in table


def test_paired_tests_need_every_run_on_one_set(tmp_path):
    assert shared_evaluations(tmp_path, ["grpo", "gdpo"], [0]) == ({}, "")  # no evaluations: nothing said
    _write_eval(tmp_path / "eval-grpo-seed0", [{"c": 1.0}, {"c": 0.0}])
    assert "gdpo seed 0 has no evaluation" in shared_evaluations(tmp_path, ["grpo", "gdpo"], [0])[1]
    _write_eval(tmp_path / "eval-gdpo-seed0", [{"c": 1.0}])
    assert "not on one shared set" in shared_evaluations(tmp_path, ["grpo", "gdpo"], [0])[1]
    assert read_scores(tmp_path / "eval-grpo-seed0") == {0: ("q0", {"c": 1.0}), 1: ("q1", {"c": 0.0})}


def _write_run(folder: Path, values: list[float]) -> None:
    folder.mkdir(parents=True)
    log = [{"step": s + 1, KEY: v, "reward": v} for s, v in enumerate(values)]
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": log}))


def test_gdpo_compare_with_one_seed_opens_with_the_caveat(tmp_path):
    """The command itself (from runs already trained, as --skip_training reads them): its printout and
    comparison.md both open with the caveat."""
    from gdpo_trl.cli import compare

    _write_run(tmp_path / "grpo-seed0", [0.5, 0.6, 0.7])
    _write_run(tmp_path / "gdpo-seed0", [0.5, 0.7, 0.8])
    # Each run evaluated on one shared set (gdpo eval into eval-<method>-seed<N>/): GDPO alone solves 4, GRPO alone 1.
    _write_eval(tmp_path / "eval-grpo-seed0", [{"correctness": v} for v in [1, 1, 0, 0, 0, 0, 0, 1]])
    _write_eval(tmp_path / "eval-gdpo-seed0", [{"correctness": v} for v in [1, 0, 1, 1, 1, 1, 0, 1]])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        compare.main(["--skip_training", "--seeds", "0", "--methods", "grpo", "gdpo", "--output_dir", str(tmp_path)])
    opening = "**1 seed per arm: this comparison cannot show a difference between the methods**"
    assert printed.getvalue().startswith(opening)
    written = (tmp_path / "comparison.md").read_text()
    assert written.startswith(opening) and "Differences of the final values" not in written
    assert "| GDPO | format_reward | 0.500 | 0.667 | 0.300 | 2.0 (1/1 seeds) |" in written  # start + 10% of 0.3
    # McNemar: 4 discordant problems for GDPO, 1 for GRPO: p = 2 (1 + 5) / 32 = 0.375; the difference 3 / 8.
    cell = "+0.375 (4:1), p 0.375"
    assert f"| correctness | GDPO − GRPO | McNemar (exact) | {cell} | {cell} |" in written
