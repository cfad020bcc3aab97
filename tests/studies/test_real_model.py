"""The committed real-model results (docs/results/real_model/) recompute from their own raw data.

SmolLM2-135M-Instruct on GSM8K (docs/real_model.md): every evaluation's summary is re-derived from its committed
completions (rewards rescored with the package's reward functions, metrics with ``gdpo eval``'s own summarize), the
reference-rule comparison is recomputed by the script that wrote it, and the training logs hold the steps and
rewards the docs quote. Nothing here needs the model or GSM8K's files: only the committed JSON.
"""

import gzip
import json
from pathlib import Path

import pytest

from gdpo_trl.eval.scoring import reward_funcs, summarize
from studies import real_model_rewards

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results" / "real_model"
EVALS = sorted(RESULTS.glob("eval_*")) + sorted(RESULTS.glob("probe_*"))
TRAININGS = sorted(RESULTS.glob("train_*.json.gz"))


def rows_of(folder):
    with gzip.open(folder / "completions.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_results_are_there():
    names = {p.name for p in EVALS}
    assert {"eval_sft", "eval_gdpo"} <= names, names  # the GDPO run's before and after
    assert any(p.name == "train_gdpo.json.gz" for p in TRAININGS)
    assert (RESULTS / "step_time.json").is_file() and (RESULTS / "rewards_reference.json").is_file()


@pytest.mark.parametrize("folder", EVALS, ids=[p.name for p in EVALS])
def test_an_evaluation_recomputes_from_its_completions(folder):
    summary = json.loads((folder / "summary.json").read_text())
    rows = rows_of(folder)
    funcs = reward_funcs(summary["rewards"])
    for row in rows:  # every stored reward is what the package's reward function gives that completion
        texts = row["completions"]
        for name, func in funcs.items():  # as gdpo eval calls them (gdpo_trl.eval.scoring.score_problem)
            scores = func(prompts=[[]] * len(texts), completions=texts, answer=[row["answer"]] * len(texts))
            assert [r[name] for r in row["rewards"]] == scores, (folder.name, row["index"], name)
    recomputed = summarize(rows)
    for key, value in summary["metrics"].items():
        assert recomputed[key] == pytest.approx(value, abs=1e-12), key


def test_the_reference_rules_comparison_recomputes():
    committed = json.loads((RESULTS / "rewards_reference.json").read_text())
    assert committed == json.loads(json.dumps(real_model_rewards.report()))


@pytest.mark.parametrize("log", TRAININGS, ids=[p.name for p in TRAININGS])
def test_a_training_log_is_a_whole_run(log):
    with gzip.open(log, "rt", encoding="utf-8") as f:
        run = json.load(f)
    steps = [e for e in run["log_history"] if "loss" in e]
    assert [e["step"] for e in steps] == list(range(1, run["max_steps"] + 1))
    for entry in steps:  # the three rewards, in [0, 1], every step
        for name in ("format", "correctness", "integer"):
            assert 0.0 <= entry[f"rewards/{name}_reward/mean"] <= 1.0
    assert run["command"].startswith("gdpo train --config recipes/cpu/smollm2_")


def test_step_time_has_what_the_issue_asked_for():
    timing = json.loads((RESULTS / "step_time.json").read_text())
    assert {"gdpo_seconds_per_step", "grpo_seconds_per_step", "machine", "load"} <= set(timing)
    assert timing["gdpo_seconds_per_step"] > 0 and timing["grpo_seconds_per_step"] > 0


def doc_table(heading: str) -> dict[str, list[str]]:
    """The first Markdown table under ``heading`` in docs/real_model.md: first cell -> the other cells."""
    lines = (ROOT / "docs" / "real_model.md").read_text().split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2 : end]]
    return {row[0]: row[1:] for row in cells}


def test_the_docs_training_table_recomputes_from_the_log():
    with gzip.open(RESULTS / "train_gdpo.json.gz", "rt", encoding="utf-8") as f:
        steps = [e for e in json.load(f)["log_history"] if "loss" in e]
    table = doc_table("## The GDPO run")
    keys = {
        "format": ("rewards/format_reward/mean", "{:.3f}"),
        "correctness": ("rewards/correctness_reward/mean", "{:.3f}"),
        "integer": ("rewards/integer_reward/mean", "{:.3f}"),
        "mean completion length": ("completions/mean_length", "{:.1f} tokens"),
        "share clipped at 200 tokens": ("completions/clipped_ratio", "{:.3f}"),
        "share of rollouts whose rewards conflict": ("conflict/share", "{:.3f}"),
    }
    assert set(table) == set(keys)
    for row, (key, written) in keys.items():
        halves = (steps[:5], steps[5:])
        assert table[row] == [written.format(sum(e[key] for e in h) / len(h)) for h in halves], row


def test_the_docs_eval_table_recomputes_from_the_summaries():
    table = doc_table("## Before and after")
    for row, folder in (("the full fine-tune (before)", "eval_sft"), ("after 10 GDPO steps", "eval_gdpo")):
        m = json.loads((RESULTS / folder / "summary.json").read_text())["metrics"]
        expected = [f"{m['format_rate']:.3f}", f"{m['pass@1']:.3f}", f"{m['integer_rate']:.3f}",
                    f"{m['mean_completion_tokens']:.1f} tokens", f"{m['truncated_fraction']:.3f}"]  # fmt: skip
        assert table[row] == expected, row
