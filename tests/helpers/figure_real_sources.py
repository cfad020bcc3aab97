"""Sources of docs/real_model.md's counts, recomputed completion by completion from the committed evaluations
(docs/results/real_model/eval_sft and eval_gdpo: every completion with its rewards and whether it was cut at the
length limit) and the reference-rule comparison (rewards_reference.json). tests/helpers/figure_sources.py's
``real_model`` gives the page's means and timings; the counts here are what its prose states as whole numbers (448
completions, 102 unreadable, 3 problems solved), which a source of every number in the folder would match by
chance."""

from __future__ import annotations

import gzip
import json

from tests.helpers.figure_sources import flat_values
from tests.helpers.studies import ROOT

REAL = ROOT / "docs" / "results" / "real_model"
EVALS = ("eval_sft", "eval_gdpo")  # the GDPO run's before and after, 200 GSM8K test problems each


def completions(name: str) -> list[dict]:
    """One evaluation's completions, one dict each: its text, rewards and whether it was cut at the length limit."""
    with gzip.open(REAL / name / "completions.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [
        {"text": text, "rewards": rewards, "truncated": truncated}
        for row in rows
        for text, rewards, truncated in zip(row["completions"], row["rewards"], row["truncated"], strict=True)
    ]


def counts(name: str) -> dict[str, int]:
    """An evaluation's counts: completions, those solved, cut at the limit, with the layout, with an integer answer,
    without an ``<answer>`` tag, and those whose format is 1 exactly when they were not cut (format and clipping as
    one effect: an audit found this holds for all of them)."""
    done = completions(name)
    return {
        "completions": len(done),
        "solved": sum(c["rewards"]["correctness"] == 1.0 for c in done),
        "truncated": sum(c["truncated"] for c in done),
        "format": sum(c["rewards"]["format"] == 1.0 for c in done),
        "integer": sum(c["rewards"]["integer"] == 1.0 for c in done),
        "no_answer_tag": sum("<answer>" not in c["text"] for c in done),
        "format_iff_not_cut": sum((c["rewards"]["format"] == 1.0) == (not c["truncated"]) for c in done),
    }


def real_model_counts(tmp):
    """Per evaluation its :func:`counts`, their totals over both, its summary's generation settings; the reference
    comparison's completions (all, SmolLM2's, and the prompt probes'), unreadable ones and differences per reward."""
    found = []
    per_eval = [counts(name) for name in EVALS]
    for c in per_eval:
        found += c.values()
    found += [sum(c[key] for c in per_eval) for key in per_eval[0]]
    for name in EVALS:
        generation = json.loads((REAL / name / "summary.json").read_text())["generation"]
        found += [v for v in generation.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    reference = json.loads((REAL / "rewards_reference.json").read_text())
    probes = [r for name, r in reference.items() if name.startswith("probe_")]
    smollm2 = [r for name, r in reference.items() if "qwen" not in name]  # the Qwen start's own evaluation apart
    found += [sum(r["completions"] for r in reference.values()), sum(r["completions"] for r in probes)]
    found += [sum(r["completions"] for r in smollm2)]
    found += [sum(r["unreadable"] for r in probes), *(r["unreadable"] for r in reference.values())]
    found += [len(d) for r in reference.values() for d in r["differences"].values()]
    return found


def real_model_steps(tmp):
    """The training log's per-step share with the layout plus share clipped at the length limit, least and
    greatest: how much of the format failures in training the length limit accounts for (means per step only)."""
    with gzip.open(REAL / "train_gdpo.json.gz", "rt", encoding="utf-8") as f:
        steps = [e for e in json.load(f)["log_history"] if "loss" in e]
    sums = [e["rewards/format_reward/mean"] + e["completions/clipped_ratio"] for e in steps]
    return [min(sums), max(sums), len(steps)]


def analysis_text(stem: str, start_row=None) -> str:
    """A real-model study's tables (docs/results/<stem>.md) and every number of its analysis (<stem>.json), one a
    line, then the start's outcomes as one table row (``start_row(result)``: its values in the docs' column order);
    nothing before the study is analysed (the docs then state none of its outcomes)."""
    analysis = ROOT / "docs" / "results" / f"{stem}.json"
    if not analysis.is_file():
        return ""
    result = json.loads(analysis.read_text())
    numbers = [v for v in flat_values(result) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    text = analysis.with_suffix(".md").read_text() + "".join(f"\n{n!r}" for n in numbers)
    return text + (f"\n| start | {' | '.join(repr(v) for v in start_row(result))} |" if start_row else "")


def h8_study(tmp) -> str:
    """Study H8 (GDPO, GRPO and the SFT control on SmolLM2), which tests/docs/test_recomputed_json.py recomputes byte
    for byte from every committed completion and the logs."""
    return analysis_text("smollm2_gdpo_grpo", lambda result: result["start"].values())


def h9_study(tmp) -> str:
    """Study H9 (GDPO against GRPO on Qwen2.5-Coder-0.5B-Instruct), which tests/studies/test_qwen_study.py recomputes
    from the kept folder; its start row is the recipes' prompt's evaluation."""
    columns = ("format", "integer", "correctness", "clipped", "length")
    return analysis_text("qwen_gdpo_grpo", lambda result: [result["starts"]["eval-start"][k] for k in columns])


def h9_pilot(tmp) -> str:
    """Study H9's pilot (docs/results/qwen_pilot.json, which tests/studies/test_qwen_study.py recomputes from the
    committed completions), for docs/qwen.md and H9's pre-registration."""
    return analysis_text("qwen_pilot")


H9 = ROOT / "docs" / "results" / "qwen_gdpo_grpo"
H9_RUNS = [f"{arm}-seed{seed}" for arm in ("gdpo", "grpo") for seed in (0, 1, 2)]


def _h9_completions(folder: str) -> list[dict]:
    with gzip.open(H9 / folder / "completions.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def h9_audit(tmp):
    """H9's counts as its audit states them, recomputed from the committed evaluations and logs: the six trained
    evaluations' completions, those whose think block has no line break (and those holding only a number), the
    problems each run and the start solved, McNemar's exact p of each run against the start paired by problem, and
    the training groups whose eight completions all scored the same correctness (per arm, of 60)."""
    import re

    from gdpo_trl.results.stats import mcnemar

    think = re.compile(r"<think>\n?(.*?)\n?</think>", re.S)
    texts = [t for run in H9_RUNS for row in _h9_completions(f"eval-{run}") for t in row["completions"]]
    bodies = [m.group(1) for t in texts if (m := think.search(t))]
    one_line = [b for b in bodies if "\n" not in b]
    found = [len(texts), len(one_line), sum(bool(re.fullmatch(r"\s*-?[0-9][0-9,.]*\s*", b)) for b in one_line)]
    start = [row["rewards"][0]["correctness"] for row in _h9_completions("eval-start")]
    found.append(sum(start))
    for run in H9_RUNS:
        solved = [row["rewards"][0]["correctness"] for row in _h9_completions(f"eval-{run}")]
        found += [sum(solved), mcnemar(start, solved).p]
    with gzip.open(ROOT / "docs" / "results" / "logs" / "qwen_gdpo_grpo.json.gz", "rt", encoding="utf-8") as f:
        runs = json.load(f)["runs"]
    for arm in ("gdpo", "grpo"):
        steps = [e for name, log in runs.items() if name.startswith(arm) for e in log if "step_time" in e]
        found += [round(sum(2 * e["rewards/correctness_reward/frac_zero_std"] for e in steps)), 2 * len(steps)]
    # The start decoded again on the second machine (float32, batches of 20): how many of the first 20 completions
    # are the committed start's, character for character.
    again = ROOT / "docs" / "results" / "qwen_gdpo_grpo_audit" / "eval-start-float32-batch20"
    with gzip.open(again / "completions.jsonl.gz", "rt", encoding="utf-8") as f:
        redone = [json.loads(line)["completions"][0] for line in f]
    first = [row["completions"][0] for row in _h9_completions("eval-start")[: len(redone)]]
    found += [sum(a == b for a, b in zip(first, redone, strict=True)), len(redone)]
    return found
