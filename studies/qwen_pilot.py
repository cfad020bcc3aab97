"""Study H9's pilot: which candidate task lets GDPO and GRPO differ on Qwen2.5-Coder-0.5B-Instruct.

``studies/qwen_runner.py pilot`` samples groups of completions from the start on GSM8K train problems with the study's
training prompt, limit and temperature (``gdpo eval --n 8 --temperature 1``); this module scores the same completions
under each candidate set of rewards and writes what :func:`studies.reward_conflict.pilot_figures` measures
(docs/results/qwen_pilot.{json,md}). Candidates, from the paper:

- ``gsm8k``: format, correctness, integer (the paper's GSM8K rewards), at a limit long enough that most completions
  end on their own, so format is no longer "not cut";
- ``length``: correctness and a length reward paid only where the completion is correct (Eq. 8), the paper's
  math-with-length setting, where a short wrong answer and a long right one pull apart;
- ``gsm8k_length``: both, four rewards.

Tool calling on ToolRL rows (the paper's headline task) is not a candidate here: the package ships 26 ToolRL rows,
too few to train and evaluate a study on, and BFCL, its evaluation, needs a day of this machine for one model.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import torch

from studies.reward_conflict import pilot_figures
from studies.smollm2_study import copy_evaluation, read_completions

LENGTH_TOKENS = 200  # the length reward's budget: 1 for at most this many tokens, where correct (Eq. 8)
CANDIDATES = {
    "gsm8k": ["format", "correctness", "integer"],
    "length": ["correctness", "length"],
    "gsm8k_length": ["format", "correctness", "integer", "length"],
}


def reward_matrix(rows: list[dict], names: list[str]) -> torch.Tensor:
    """``[N, K]``: each completion's rewards in ``names`` order, rows grouped by problem; ``length`` is 1 for at most
    :data:`LENGTH_TOKENS` tokens where correctness is 1 (Eq. 8 with threshold 1), else 0."""
    values = []
    for row in rows:
        for scores, tokens in zip(row["rewards"], row["num_tokens"], strict=True):
            short = float(tokens <= LENGTH_TOKENS and scores["correctness"] >= 1.0)
            values.append([short if name == "length" else float(scores[name]) for name in names])
    return torch.tensor(values, dtype=torch.float64)


def pilot(folder: Path) -> dict:
    """The pilot's figures from its evaluation folder (summary.json, completions.jsonl or .gz)."""
    summary = json.loads((folder / "summary.json").read_text())
    rows = read_completions(folder)
    n = summary["generation"]["n"]
    tokens = [t for row in rows for t in row["num_tokens"]]
    cut = [c for row in rows for c in row["truncated"]]
    return {
        "settings": {
            **summary["generation"],
            "problems": len(rows),
            "length_tokens": LENGTH_TOKENS,
            "system_prompt": summary["data"]["system_prompt"],
        },  # fmt: skip
        "sampling": {
            "completions": len(tokens),
            "mean_tokens": statistics.fmean(tokens),
            "cut_share": sum(cut) / len(cut),
            "generation_time_s": summary["generation_time_s"],
            "tokens_per_s": sum(tokens) / summary["generation_time_s"],
        },
        "candidates": {
            name: pilot_figures(reward_matrix(rows, rewards), rewards, n) for name, rewards in CANDIDATES.items()
        },
    }


def tables(result: dict) -> str:
    """docs/results/qwen_pilot.md: one table of rewards per candidate and one of the ranking figures."""
    sampling, settings = result["sampling"], result["settings"]
    lines = [
        "# Study H9's pilot: where GDPO and GRPO can differ on Qwen2.5-Coder-0.5B-Instruct",
        "",
        f"{settings['problems']} GSM8K train problems x {settings['n']} samples (temperature {settings['temperature']}, "
        f"{settings['max_new_tokens']} new tokens, {settings['dtype']}, the study's training prompt): "
        f"{sampling['completions']} completions, mean {sampling['mean_tokens']:.1f} tokens, "
        f"{sampling['cut_share']:.3f} cut at the limit, {sampling['tokens_per_s']:.1f} tokens/s.",
        "",
        "| candidate | reward | mean | groups with zero spread |",
        "|---|---|---:|---:|",
    ]
    for name, found in result["candidates"].items():
        lines += [f"| {name} | {reward} | {r['mean']:.3f} | {r['zero_spread_groups']:.3f} |"
                  for reward, r in found["rewards"].items()]  # fmt: skip
    lines += ["", "| candidate | correlations | conflict share | discordant pairs | collapsed pairs | groups ranked differently |",
              "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for name, found in result["candidates"].items():
        pairs = ", ".join(f"{k} {'n/a' if v is None else f'{v:+.2f}'}" for k, v in found["correlation"].items())
        lines.append(f"| {name} | {pairs} | {found['conflict_share']:.3f} | {found['discordant_pairs']:.3f} | "
                     f"{found['collapsed_pairs']:.3f} | {found['groups_ranked_differently']:.3f} |")  # fmt: skip
    lines += ["", "Each reward's share of the advantage (GDPO / GRPO), and the correlation of the two rules' advantages:", "",
              "| candidate | shares, GDPO / GRPO | advantage correlation |", "|---|---|---:|"]  # fmt: skip
    for name, found in result["candidates"].items():
        shares = found["advantage_share"]
        cells = ", ".join(
            f"{reward} {shares['gdpo'][reward]:.2f} / {shares['grpo'][reward]:.2f}" for reward in shares["gdpo"]
        )
        correlation = found["advantage_correlation"]
        lines.append(f"| {name} | {cells} | {'n/a' if correlation is None else f'{correlation:.3f}'} |")
    return "\n".join(lines) + "\n"


def write_pilot(folder: Path, docs: Path) -> dict:
    """Write docs/results/qwen_pilot.json and .md from the pilot's evaluation folder (and print the tables), and the
    folder's summary and gzipped completions under docs/results/qwen_pilot/, from which a test recomputes both."""
    result = pilot(folder)
    if folder.resolve() != (docs / "qwen_pilot").resolve():
        copy_evaluation(folder, docs / "qwen_pilot")
    (docs / "qwen_pilot.json").write_text(json.dumps(result, indent=2) + "\n")
    (docs / "qwen_pilot.md").write_text(tables(result))
    print(tables(result))
    return result
