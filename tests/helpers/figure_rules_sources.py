"""The figure sources of study H10 (GDPO's published follow-ups against GDPO and GRPO): its two tasks' tables and
every number of their analyses, which tests/studies/test_rules_study.py recomputes from the committed raw logs, and
the exploratory shares and SAW weights, recomputed here from the same logs."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

from tests.helpers.figure_real_sources import analysis_text

LOGS = Path(__file__).resolve().parents[2] / "docs" / "results" / "logs"
ARMS = {"grpo": "GRPO", "gdpo": "GDPO", "mo_grpo": "MO-GRPO", "saw_gdpo": "SAW (gdpo-h)", "saw_grpo": "SAW (grpo-h)"}
ARMS["odrpo"] = "ODRPO"
WIDE = {"rules_toolcall": "tool_correctness", "rules_scale6": "correctness_reward"}  # the reward with the wide range


def h10_study(tmp) -> str:
    """docs/results/rules_toolcall and rules_scale6 (.md and every number of .json); nothing before H10 is analysed."""
    return analysis_text("rules_toolcall") + "\n" + analysis_text("rules_scale6")


def step_means(task: str, arm: str, metric: str) -> float:
    """The mean of ``metric`` over every logged step of every seed of ``arm`` in H10's ``task``."""
    runs = json.loads(gzip.decompress((LOGS / f"{task}.json.gz").read_bytes()))["runs"]
    values = [
        entry[metric]
        for name, state in runs.items()
        if name.rpartition("-seed")[0] == arm
        for entry in state["log_history"]
        if metric in entry
    ]
    return statistics.fmean(values)


def h10_shares(tmp) -> str:
    """H10's exploratory reading: per arm, the share of the advantage the wide reward drove on each task (one table
    row per arm, as docs/results/README.md writes it), and SAW's mean weights on the tool task."""
    if not all((LOGS / f"{task}.json.gz").is_file() for task in WIDE):
        return ""
    lines = []
    for arm, label in ARMS.items():
        shares = [step_means(task, arm, f"rewards/{reward}/advantage_share") for task, reward in WIDE.items()]
        lines.append(f"| {label} | {shares[0]:.3f} | {shares[1]:.3f} |")
    for reward in ("tool_correctness", "tool_format"):
        lines.append(f"{step_means('rules_toolcall', 'saw_gdpo', f'rewards/{reward}/rule_weight'):.3f}")
    return "\n".join(lines)
