"""Study H10 (studies/rules_study.py): its plan (seed-major, which recipe each arm of each task uses), its analysis on
made-up runs (finals, Welch's interval, Holm over the task's family, the verdict and hypothesis rules), the stopping
rule's seeds, and the committed tables recomputed from the committed raw logs."""

import gzip
import json
from pathlib import Path

import pytest

from gdpo_trl.results import stats
from studies import rules_study

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def test_the_plan_is_seed_major_and_balanced():
    plan = rules_study.plan()
    assert len(plan) == 2 * 6 * 10
    assert plan[:6] == [(0, "rules_toolcall", arm) for arm in rules_study.ARMS]
    assert plan[6:12] == [(0, "rules_scale6", arm) for arm in rules_study.ARMS]
    assert plan[-1] == (9, "rules_scale6", "odrpo")


def test_the_scale6_arms_spell_correctness_times_six_in_their_own_arithmetic():
    recipes = rules_study.TASKS["rules_scale6"]["recipe"]
    sums = {arm for arm, recipe in recipes.items() if recipe == rules_study.SCALE6_SUMS}
    assert sums == {"grpo", "saw_grpo", "odrpo"}  # weights [1, 6, 1]; the others [1, 1, 1]
    import yaml

    assert yaml.safe_load((ROOT / rules_study.SCALE6_SUMS).read_text())["reward_weights"] == [1.0, 6.0, 1.0]
    assert "reward_weights" not in yaml.safe_load((ROOT / rules_study.SCALE6_NORMALIZED).read_text())
    fields = rules_study.run_fields("rules_scale6", "odrpo", 3, Path("out"))
    assert fields["multi_objective_aggregation"] == "odrpo" and fields["seed"] == 3 and fields["max_steps"] == 10
    assert rules_study.run_fields("rules_toolcall", "grpo", 0, Path("o"))["multi_objective_aggregation"] == (
        "sum_then_normalize"
    )


def made_up_series(task: str, lift: dict[str, float], seeds=range(10)) -> dict:
    """Per (arm, seed): each reward's 10 logged means, a seed-dependent wiggle plus ``lift[arm]``."""
    rewards = rules_study.TASKS[task]["rewards"]
    return {
        (arm, seed): {
            reward: [0.5 + lift.get(arm, 0.0) + 0.01 * ((seed * 7 + step) % 5) for step in range(10)]
            for reward in rewards
        }
        for arm in rules_study.ARMS
        for seed in seeds
    }


def test_the_analysis_reads_holm_adjusted_welch_tests():
    series = made_up_series("rules_toolcall", {"saw_gdpo": 0.1, "odrpo": -0.1})
    result = rules_study.analyse("rules_toolcall", series, list(range(10)))
    rows = result["comparisons"]
    assert len(rows) == 4 * 2 * 2  # rules x baselines x rewards: the Holm family
    assert [row["holm_p"] for row in rows] == stats.holm_adjusted([row["welch_p"] for row in rows])
    first = next(r for r in rows if (r["rule"], r["baseline"], r["reward"]) == ("saw_gdpo", "gdpo", "tool_format"))
    finals = {arm: [sum(series[(arm, s)]["tool_format"]) / 10 for s in range(10)] for arm in ("saw_gdpo", "gdpo")}
    interval = stats.welch_ci(finals["saw_gdpo"], finals["gdpo"])
    assert first["difference"] == pytest.approx(0.1) and first["ci_low"] == pytest.approx(interval.low)
    assert first["verdict"] == "ahead"
    assert result["answers"] == {
        "mo_grpo": "not supported",  # level against both
        "saw_gdpo": "supported",  # ahead of both on both rewards
        "saw_grpo": "not supported",
        "odrpo": "contradicted",  # behind both
    }


def test_the_hypothesis_rule():
    def rows(gdpo: str, grpo: str) -> list[dict]:
        return [
            {"rule": "odrpo", "baseline": "gdpo", "verdict": gdpo},
            {"rule": "odrpo", "baseline": "grpo", "verdict": grpo},
        ]

    assert rules_study.hypothesis("odrpo", rows("ahead", "ahead")) == "supported"
    assert rules_study.hypothesis("odrpo", rows("ahead", "level")) == "partly supported"
    assert rules_study.hypothesis("odrpo", rows("level", "behind")) == "contradicted"
    assert rules_study.hypothesis("odrpo", rows("ahead", "behind")) == "contradicted"
    assert rules_study.hypothesis("odrpo", rows("level", "level")) == "not supported"
    mixed = rows("ahead", "level") + [{"rule": "odrpo", "baseline": "grpo", "verdict": "ahead"}]
    mixed += [{"rule": "odrpo", "baseline": "grpo", "verdict": "behind"}]
    assert rules_study.against("odrpo", "grpo", mixed) == "mixed"
    assert rules_study.hypothesis("odrpo", mixed) == "not supported"


def test_only_seeds_whose_six_arms_finished_are_analysed(tmp_path):
    for arm in rules_study.ARMS:
        for seed in (0, 1, 2):
            if (arm, seed) == ("odrpo", 1):
                continue  # seed 1 of the task is incomplete: left out
            folder = rules_study.run_dir(tmp_path, "rules_toolcall", arm, seed)
            folder.mkdir(parents=True)
            (folder / "trainer_state.json").write_text(json.dumps({"global_step": 10, "log_history": []}))
    (rules_study.run_dir(tmp_path, "rules_toolcall", "odrpo", 1)).mkdir(parents=True)
    assert rules_study.complete_seeds(tmp_path, "rules_toolcall") == [0, 2]
    assert rules_study.complete_seeds(tmp_path, "rules_scale6") == []


def test_a_study_written_then_read_back_from_its_logs_gives_the_same_tables(tmp_path):
    series = made_up_series("rules_scale6", {"grpo": 0.05})
    out = tmp_path / "runs"
    for (arm, seed), rewards in series.items():
        folder = rules_study.run_dir(out, "rules_scale6", arm, seed)
        folder.mkdir(parents=True)
        history = [
            {f"rewards/{r}/mean": values[step] for r, values in rewards.items()} | {"step": step + 1}
            for step, _ in enumerate(rewards["format_reward"])
        ]
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": 10, "log_history": history}))
    docs = tmp_path / "docs"
    docs.mkdir()
    rules_study.analyze(out, docs, "the command")
    task, json_text, md_text = rules_study.from_logs(docs / "logs" / "rules_scale6.json.gz")
    assert task == "rules_scale6"
    assert json_text == (docs / "rules_scale6.json").read_text() and md_text == (docs / "rules_scale6.md").read_text()
    assert (
        json.loads(gzip.decompress((docs / "logs" / "rules_scale6.json.gz").read_bytes()))["command"] == "the command"
    )
    assert not (docs / "rules_toolcall.md").exists()  # no complete seed of that task


@pytest.mark.parametrize("task", ["rules_toolcall", "rules_scale6"])
def test_the_committed_tables_are_recomputed_from_the_committed_logs(task):
    logs = RESULTS / "logs" / f"{task}.json.gz"
    assert logs.exists(), f"H10's raw logs {logs.name} are missing: its committed tables rest on them"
    name, json_text, md_text = rules_study.from_logs(logs)
    assert name == task
    assert (RESULTS / f"{task}.json").read_text() == json_text
    assert (RESULTS / f"{task}.md").read_text() == md_text
