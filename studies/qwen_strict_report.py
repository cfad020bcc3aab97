"""The strict recipe's one run (studies/qwen_strict_run.py) beside study H9's GDPO seed 0: keep it, then report it.

``keep`` copies what the report needs from ``outputs/qwen_strict/`` into ``docs/results/qwen_strict/``: the run's
training state (its final ``trainer_state.json``, or its newest checkpoint's while it is unfinished), its log of
commands (gzipped) and, once evaluated, the evaluation's summary and every completion (gzipped, as H9's); machine
folders are written as ``DATA`` and relative paths. ``report`` writes ``docs/results/qwen_strict.{md,json}`` from the
kept files and H9's committed GDPO seed 0 (``docs/results/qwen_gdpo_grpo/``)::

    python studies/qwen_strict_report.py keep --data DATA
    python studies/qwen_strict_report.py report

What is compared, one run each (not a study): per training step the three rewards' batch means and the mean
completion length; where the gaming watch (docs/gaming.md) fires; and for each evaluation on the first 200 GSM8K test
problems its format, integer and correctness rates, its mean completion length, the share of completions whose think
block has no line break (H9's count) and the share that ``reasoning_format`` pays.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ROOT / "outputs" / "qwen_strict"
KEPT = ROOT / "docs" / "results" / "qwen_strict"
H9 = ROOT / "docs" / "results" / "qwen_gdpo_grpo"
RUN, EVALUATION = "gdpo-strict-seed0", "eval-gdpo-strict-seed0"
ONE_LINE_THINK = re.compile(r"<think>\n?(.*?)\n?</think>", re.S)  # H9's count: a think block without a line break


def _scrub(text: str, data: str | None) -> str:
    """Machine folders out: the data folder as DATA, this checkout's root as relative paths."""
    if data:
        text = text.replace(str(Path(data).resolve()).rstrip("/") + "/", "DATA/").replace(
            data.rstrip("/") + "/", "DATA/"
        )
    return text.replace(str(ROOT) + "/", "")


def newest_state(run: Path) -> Path | None:
    if (run / "trainer_state.json").is_file():
        return run / "trainer_state.json"
    checkpoints = sorted(run.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    return checkpoints[-1] if checkpoints else None


def keep(data: str | None) -> list[str]:
    """Copy the run's state, log and evaluation into docs/results/qwen_strict/; returns what was kept."""
    kept = []
    state = newest_state(OUTPUTS / RUN)
    if state is not None:
        (KEPT / RUN).mkdir(parents=True, exist_ok=True)
        (KEPT / RUN / "trainer_state.json").write_text(_scrub(state.read_text(), data))
        kept.append(f"{RUN}/trainer_state.json (from {state.relative_to(OUTPUTS)})")
    log = OUTPUTS / "run.log"
    if log.is_file():
        KEPT.mkdir(parents=True, exist_ok=True)
        with gzip.open(KEPT / f"{RUN}.log.gz", "wt", encoding="utf-8") as handle:
            handle.write(_scrub(log.read_text(errors="replace"), data))
        kept.append(f"{RUN}.log.gz")
    evaluation = OUTPUTS / EVALUATION
    if (evaluation / "summary.json").is_file():
        (KEPT / EVALUATION).mkdir(parents=True, exist_ok=True)
        (KEPT / EVALUATION / "summary.json").write_text(_scrub((evaluation / "summary.json").read_text(), data))
        with open(evaluation / "completions.jsonl", "rb") as source:
            with gzip.open(KEPT / EVALUATION / "completions.jsonl.gz", "wb") as target:
                shutil.copyfileobj(source, target)
        kept.append(f"{EVALUATION}/ (summary.json, completions.jsonl.gz)")
    return kept


def _completions(folder: Path) -> list[str]:
    with gzip.open(folder / "completions.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [text for line in handle for text in json.loads(line)["completions"]]


def evaluation_row(folder: Path) -> dict | None:
    """An evaluation's rates (from its summary) and the shares counted from its completions."""
    from gdpo_trl.rewards.reasoning import reasoning_format_reward

    if not (folder / "summary.json").is_file():
        return None
    metrics = json.loads((folder / "summary.json").read_text())["metrics"]
    texts = _completions(folder)
    one_line = sum(1 for t in texts if (m := ONE_LINE_THINK.search(t)) and "\n" not in m.group(1))
    return {
        "completions": len(texts),
        "format": metrics["format_rate"],
        "integer": metrics["integer_rate"],
        "correctness": metrics["pass@1"],
        "mean_tokens": metrics["mean_completion_tokens"],
        "one_line_think": one_line / len(texts),
        "reasoning_format": sum(reasoning_format_reward(texts)) / len(texts),
    }


def training_rows(state: Path) -> tuple[list[dict], list[int]]:
    """Per logged step the rewards' means and the mean length; and the steps where the gaming watch fires."""
    from gdpo_trl.core.gaming import LENGTH, REWARD_MEAN, scan, training_entries

    history = json.loads(state.read_text())["log_history"]
    steps = [
        {"step": int(e["step"]), "length": round(e[LENGTH], 2),
         **{m.group(1): round(v, 4) for k, v in e.items() if (m := REWARD_MEAN.fullmatch(k))}}
        for e in training_entries(history)
    ]  # fmt: skip
    return steps, [check.step for check in scan(history) if check.fired]


def report() -> dict:
    runs = {"H9 GDPO seed 0": ("qwen_gdpo_grpo", H9 / "gdpo-seed0", H9 / "eval-gdpo-seed0"),
            "strict, seed 0": ("qwen_strict", KEPT / RUN, KEPT / EVALUATION)}  # fmt: skip
    found = {}
    for name, (_, run, evaluation) in runs.items():
        state = newest_state(run)
        steps, fired = training_rows(state) if state else ([], [])
        found[name] = {"steps": steps, "watch_fires_at": fired, "evaluation": evaluation_row(evaluation)}
    return found


def markdown(found: dict) -> str:
    lines = [
        "# The strict recipe's one run beside H9's GDPO seed 0",
        "",
        "Written by `python studies/qwen_strict_report.py report` from the committed files (`qwen_strict/`, "
        "`qwen_gdpo_grpo/`). One run each, not a study: the same settings but for the rewards.",
        "",
        "## Evaluation (the first 200 GSM8K test problems, greedy)",
        "",
        "| run | format | integer | correctness | mean tokens | one-line think | reasoning_format |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, run in found.items():
        row = run["evaluation"]
        if row is None:
            lines.append(f"| {name} | not evaluated | | | | | |")
            continue
        cells = [row[k] for k in ("format", "integer", "correctness")] + [row["mean_tokens"]]
        cells += [row["one_line_think"], row["reasoning_format"]]
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    lines += ["", "## Training, step by step", ""]
    for name, run in found.items():
        fired = ", ".join(map(str, run["watch_fires_at"])) or "never"
        lines += [f"### {name}: {len(run['steps'])} steps logged; the gaming watch fires at: {fired}", ""]
        if not run["steps"]:
            continue
        rewards = [k for k in run["steps"][0] if k not in ("step", "length")]
        lines += ["| step | " + " | ".join(rewards) + " | mean length |", "|---:|" + "---:|" * (len(rewards) + 1)]
        for step in run["steps"]:
            lines.append(
                f"| {step['step']} | " + " | ".join(f"{step[r]:.3f}" for r in rewards) + f" | {step['length']:.1f} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    keep_parser = sub.add_parser("keep", help="copy the run's files into docs/results/qwen_strict/")
    keep_parser.add_argument("--data", help="the GSM8K folder the run read (written as DATA in the kept files)")
    sub.add_parser("report", help="write docs/results/qwen_strict.{md,json}")
    args = parser.parse_args(argv)
    if args.command == "keep":
        for name in keep(args.data):
            print(f"kept {name}")
        return 0
    found = report()
    (ROOT / "docs" / "results" / "qwen_strict.json").write_text(json.dumps(found, indent=1) + "\n")
    (ROOT / "docs" / "results" / "qwen_strict.md").write_text(markdown(found))
    print("wrote docs/results/qwen_strict.{json,md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
