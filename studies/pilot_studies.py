"""Is the pilot right? ``gdpo pilot`` at the start of every committed study, against what the study found.

The verdict rule was fixed in docs/pilot.md (commit 324a187) before any of these pilots ran. For each study this runs
``gdpo pilot`` with the study's recipe, start and seed (one torch thread, niced), keeps its ``pilot.json`` and
completions under ``docs/results/pilot_studies/<study>/``, reads the study's outcome from its committed table (which
rewards differed beyond the study's confidence interval between the rule and GRPO, ``total`` aside), and writes the
table ``docs/results/pilot_studies.{md,json}``: the pilot's figures and verdict beside the outcome, and whether the
verdict was right ("likely" predicts some reward differed; "unlikely" and "may differ slightly" that none did).

    nice -n 10 python -m studies.pilot_studies run --data DATA   # DATA: the GSM8K files, for H8
    python -m studies.pilot_studies table                       # the table from what ran

H9's pilot scores H9's own pilot samples (docs/results/qwen_pilot: its start at the recipe's settings, 16 problems x
8), rescored by the recipe's rewards as the pilot scores: sampling Qwen2.5-Coder-0.5B again at 400 new tokens would
take hours on this machine (``python -m studies.pilot_studies h9`` does only that).

The toy studies' starts (H1-H7: the shipped warm starts) are rebuilt by today's code on this machine; H6's own warm
start is not (the agent warm start changed at 284307e, before H6b): its pilot runs on today's start, H6b's. H1-H7's
pilots ran at fe1d0fd, when the pilot drew a generated source's prompts from a shuffle of its training problems; since
7ac78b9 it takes their first ones (the same problems ``gdpo eval`` samples). What is kept is what was scored: each
pilot's figures are recomputed from its own completions.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
KEPT = RESULTS / "pilot_studies"
RUNS = ROOT / "outputs" / "pilot_studies"
PILOT_REWARDS = "studies/pilot_rewards.py"


@dataclass(frozen=True)
class Study:
    """One committed study: its id, its results table, the pilot's command-line flags, the rule compared with GRPO
    (its label in the study's table), and what differs between the study's start and the pilot's."""

    id: str
    table: str
    flags: tuple[str, ...]
    rule: str = "gdpo"
    label: str = "GDPO − GRPO"
    note: str = "start rebuilt today (the shipped warm start)"
    data: bool = False  # trains on the GSM8K files: --dataset_name DATA/train.jsonl
    committed_samples: bool = False  # the pilot scores the study's own committed pilot samples (H9)
    extra: tuple[str, ...] = field(default=())


STUDIES = (
    Study("H1", "toolcall", ("--config", "recipes/cpu/toolcall_gdpo/config.yaml")),
    Study("H2", "gsm8k_style", ("--config", "recipes/cpu/gdpo/config.yaml")),
    Study("H3", "length", ("--config", "recipes/cpu/gdpo_length/config.yaml")),
    Study(
        "H4",
        "scale6",
        (
            "--config",
            "recipes/cpu/gdpo/config.yaml",
            "--reward_funcs",
            "format",
            f"{PILOT_REWARDS}:correctness_reward",
            "integer",
        ),
        note="start rebuilt today; correctness on 0..6 as a reward (the study's GRPO arms: weight 6)",
    ),  # fmt: skip
    Study(
        "H6",
        "agent",
        ("--config", "recipes/cpu/agent_gdpo/config.yaml"),
        note="not H6's start: the agent warm start changed at 284307e; today's start is H6b's",
    ),
    Study("H6b", "agent_midrange", ("--config", "recipes/cpu/agent_gdpo/config.yaml")),
    Study(
        "H6c",
        "agent_scale6",
        (
            "--config",
            "recipes/cpu/agent_gdpo/config.yaml",
            "--reward_funcs",
            f"{PILOT_REWARDS}:agent_success",
            "agent_format",
            "agent_cost",
        ),
        note="start rebuilt today; success on 0..6 as a reward (the study's GRPO arms: weight 6)",
    ),  # fmt: skip
    Study("H7-tool", "gd2po_toolcall", ("--config", "recipes/cpu/toolcall_gdpo/config.yaml"), "gd2po", "GD2PO − GRPO"),
    Study("H7-gsm8k", "gd2po_gsm8k_style", ("--config", "recipes/cpu/gdpo/config.yaml"), "gd2po", "GD2PO − GRPO"),
    Study(
        "H8",
        "smollm2_gdpo_grpo",
        ("--config", "recipes/cpu/smollm2_gdpo/config.yaml"),
        label="gdpo - grpo",
        note="the study's start (SmolLM2-135M with its format SFT, built from the shipped GGUF)",
        data=True,
    ),
    Study(
        "H9",
        "qwen_gdpo_grpo",
        ("--config", "recipes/cpu/qwen_gdpo/config.yaml", "--cpu_dtype", "float32"),
        label="gdpo - grpo",
        note="the study's start: its own pilot's samples (16 problems x 8, bfloat16, docs/results/qwen_pilot) "
        "rescored by the recipe's rewards; not sampled again (H8's 64 took 45 min here, H9's would take hours)",
        data=True,
        committed_samples=True,
    ),
)
NOT_PILOTED = {"H5": "process rewards: H5 compared token-level GDPO with outcome-level GDPO, not a rule with GRPO"}


def outcome(study: Study) -> dict[str, str]:
    """``{reward: verdict}`` for the study's rule against GRPO, from its committed table (``total`` left out)."""
    text = (RESULTS / f"{study.table}.md").read_text(encoding="utf-8")
    found = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        verdict = cells[-1].strip("*") if study.label == "gdpo - grpo" else None
        if study.label == "gdpo - grpo":  # H8: "| gdpo - grpo | reward | ... | verdict |"; H9: a table of its own
            if cells[0] == "gdpo - grpo" and len(cells) == 7:
                found[cells[1]] = cells[-1]
            elif re.fullmatch(r"[a-z_]+", cells[0]) and len(cells) == 6 and cells[-1] in ("level", "ahead", "behind"):
                found[cells[0]] = verdict
            continue
        if len(cells) > 2 and cells[1] == study.label and cells[0] != "total":
            verdicts = [c.strip("*") for c in cells if c.strip("*") in ("level", "ahead", "behind")]
            if verdicts:
                found[cells[0]] = verdicts[0]
    if not found:
        raise ValueError(f"no {study.label} rows in docs/results/{study.table}.md")
    return found


def run(data: str | None, only: list[str] | None) -> None:
    """Run each study's pilot (skipping those kept already) and keep its files."""
    for study in STUDIES:
        if only and study.id not in only:
            continue
        kept = KEPT / study.id / "pilot.json"
        if kept.exists():
            print(f"{study.id}: kept already", flush=True)
            continue
        if study.committed_samples:
            keep_from_committed(study)
            continue
        flags = list(study.flags)
        if study.data:
            if data is None:
                print(f"{study.id}: skipped (needs --data, the GSM8K files)", flush=True)
                continue
            flags += ["--dataset_name", str(Path(data) / "train.jsonl")]
        out = RUNS / study.id
        command = ["gdpo", "pilot", *flags, "--cpu_threads", "1", "--pilot_dir", str(out)]
        print(f"{study.id}: {' '.join(command)}", flush=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        binary = Path(sys.executable).with_name("gdpo")
        log = RUNS / f"{study.id}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w", encoding="utf-8") as file:
            done = subprocess.run(
                [str(binary), *command[1:]], cwd=ROOT, env=env, stdout=file, stderr=subprocess.STDOUT
            )
        if done.returncode != 0:
            print(f"{study.id}: failed ({done.returncode}), see {log}", flush=True)
            continue
        keep(study, out, command)


def keep(study: Study, out: Path, command: list[str]) -> None:
    """Copy the pilot's report (and its completions, gzipped) into the committed folder, the command beside it."""
    target = KEPT / study.id
    target.mkdir(parents=True, exist_ok=True)
    report = json.loads((out / "pilot.json").read_text(encoding="utf-8"))
    report["command"] = " ".join(command)
    report = without_machine_paths(report)
    (target / "pilot.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    data = (out / "completions.jsonl").read_bytes()
    (target / "completions.jsonl.gz").write_bytes(gzip.compress(data, mtime=0))  # the same bytes for the same run
    print(f"{study.id}: kept", flush=True)


def without_machine_paths(value):
    """``value`` with this checkout's folder written relative and the GSM8K folder as ``DATA`` (the docs' name)."""
    if isinstance(value, dict):
        return {k: without_machine_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_machine_paths(v) for v in value]
    if isinstance(value, str):
        value = value.replace(f"{ROOT}/", "")
        return re.sub(r"\S*/gsm8k/", "DATA/", value)
    return value


H9_PILOT = (
    RESULTS / "qwen_pilot"
)  # H9's own pilot: its start sampled at the study's settings (docs/results/qwen_pilot.md)


def pilot_from_committed_samples(study: Study, folder: Path = H9_PILOT) -> dict:
    """The pilot's report for ``study`` from completions its start already gave at the recipe's settings and that are
    committed (``gdpo eval``'s ``completions.jsonl.gz`` in ``folder``): rescored by the recipe's rewards as the pilot
    scores (TRL's arguments), measured as the pilot measures. For H9, whose start (Qwen2.5-Coder-0.5B, 400 new
    tokens) would take hours to sample again on this machine; its own pilot sampled 16 problems x 8 there."""
    from gdpo_trl.cli.first_checks import read_request
    from gdpo_trl.cli.pilot import measure, recipe_rewards, recipe_settings, score
    from gdpo_trl.eval.settings import Completion

    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in gzip.decompress((folder / "completions.jsonl.gz").read_bytes()).splitlines()]
    request = read_request(list(study.flags))
    settings = recipe_settings(request.recipe_argv, request.recipe)
    funcs = recipe_rewards(settings)
    names = [f.__name__ for f in funcs]
    system = summary["data"]["system_prompt"]
    prompts = [[{"role": "system", "content": system}, {"role": "user", "content": r["question"]}] for r in rows]
    table = [{"prompt": p, "answer": r["answer"]} for p, r in zip(prompts, rows, strict=True)]
    completions = [
        [Completion(t, n, c) for t, n, c in zip(r["completions"], r["num_tokens"], r["truncated"], strict=True)]
        for r in rows
    ]
    rewards, scored = score(funcs, names, RowTable(table), completions)
    weights = list(settings.reward_weights or [1.0] * len(funcs))
    generation = summary["generation"]
    sampled = {
        "funcs": funcs,
        "names": names,
        "weights": weights,
        "rewards": rewards,
        "rows": scored,
        "settings": {
            "model": settings.model_name_or_path,
            "dataset": "DATA/train.jsonl",
            "prompts": len(rows),
            "num_generations": generation["n"],
            "temperature": generation["temperature"],
            "top_p": generation["top_p"],
            "max_completion_length": generation["max_new_tokens"],
            "seed": generation["seed"],
            "backend": generation["backend"],
            "dtype": generation["dtype"],
            "multi_objective_aggregation": settings.multi_objective_aggregation,
            "generation_time_s": summary["generation_time_s"],
            "samples": "H9's own pilot (docs/results/qwen_pilot), rescored by the recipe's rewards",
        },
    }
    report = measure(sampled, settings, 0.03)
    report["command"] = "python -m studies.pilot_studies h9 (rescoring docs/results/qwen_pilot's completions)"
    return report, scored


class RowTable:
    """Rows as ``score`` reads a dataset: iterable, with ``column_names``."""

    def __init__(self, rows: list[dict]):
        self.rows, self.column_names = rows, list(rows[0])

    def __iter__(self):
        return iter(self.rows)


def keep_from_committed(study: Study) -> None:
    report, rows = pilot_from_committed_samples(study)
    target = KEPT / study.id
    target.mkdir(parents=True, exist_ok=True)
    (target / "pilot.json").write_text(json.dumps(without_machine_paths(report), indent=2) + "\n", encoding="utf-8")
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    (target / "completions.jsonl.gz").write_bytes(gzip.compress(data, mtime=0))
    print(f"{study.id}: kept (from its committed samples)", flush=True)


def right(verdict: str, differed: bool) -> bool:
    """The verdict rule's prediction against the outcome: "likely" predicts a difference, the others none."""
    return (verdict == "likely") == differed


def table_rows() -> list[dict]:
    """One row per study: its outcome, and its kept pilot's figures, verdict and whether it was right."""
    rows = []
    for study in STUDIES:
        kept = KEPT / study.id / "pilot.json"
        found = outcome(study)
        differed = sorted(r for r, v in found.items() if v != "level")
        row = {"study": study.id, "rule": study.rule, "note": study.note, "outcome": found, "differed": differed}
        if kept.exists():
            report = json.loads(kept.read_text(encoding="utf-8"))
            figures = report["rules"][study.rule]
            row.update(
                {
                    "advantage_correlation": figures["advantage_correlation"],
                    "groups_ranked_differently": figures["groups_ranked_differently"],
                    "share_shift": figures["share_shift"],
                    "conflict_share": report["conflict_share"],
                    "verdict": figures["verdict"],
                    "right": right(figures["verdict"], bool(differed)),
                    "command": report.get("command"),
                }
            )
        rows.append(row)
    return rows


def write_table(results: Path = RESULTS) -> str:
    """Write ``pilot_studies.json`` and ``pilot_studies.md`` into ``results`` from the kept pilots; returns the text."""
    rows = table_rows()
    (results / "pilot_studies.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Is the pilot right? `gdpo pilot` at the start of every committed study",
        "",
        "The verdict rule (docs/pilot.md) was committed in 324a187, before any of these pilots ran; it is not tuned "
        "after them. Generated by `python -m studies.pilot_studies table` from the kept pilots "
        "(`docs/results/pilot_studies/<study>/pilot.json`, each with its command and every completion). H1-H7's "
        "pilots ran at fe1d0fd, which drew a generated source's prompts from a shuffle of its problems (since 7ac78b9 "
        "the pilot takes the first ones); H8's and H9's read GSM8K's train file, shuffled with the recipe's seed.",
        "",
        "| study | rule vs GRPO | advantage corr. | groups ranked differently | share shift | conflict share | "
        "pilot's verdict | rewards that differed in the study (beyond its CI) | right? | start |",
        "|---|---|---:|---:|---:|---:|---|---|---|---|",
    ]
    for row in rows:
        if "verdict" not in row:
            lines.append(f"| {row['study']} | {row['rule']} | - | - | - | - | not run | "
                         f"{', '.join(row['differed']) or 'none'} | - | {row['note']} |")  # fmt: skip
            continue
        lines.append(
            f"| {row['study']} | {row['rule']} | {row['advantage_correlation']:.3f} | "
            f"{row['groups_ranked_differently']:.0%} | {row['share_shift']:.2f} | {row['conflict_share']:.3f} | "
            f"{row['verdict']} | {', '.join(row['differed']) or 'none'} | {'yes' if row['right'] else '**no**'} | "
            f"{row['note']} |"
        )
    for study, why in NOT_PILOTED.items():
        lines.append(f"| {study} | - | - | - | - | - | not applicable | - | - | {why} |")
    scored = [r for r in rows if "right" in r]
    lines += [
        "",
        f"Right in {sum(r['right'] for r in scored)} of {len(scored)} piloted comparisons.",
    ]
    text = "\n".join(lines) + "\n"
    (results / "pilot_studies.md").write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.pilot_studies", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "h9", "table"))
    parser.add_argument("--data", help="folder with GSM8K's train.jsonl (H8, H9)")
    parser.add_argument("--only", nargs="*", help="study ids to run (default: all)")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.data, args.only)
    elif args.command == "h9":
        keep_from_committed(next(s for s in STUDIES if s.id == "H9"))
    else:
        print(write_table(), end="")


if __name__ == "__main__":
    main()
