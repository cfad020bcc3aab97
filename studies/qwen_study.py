"""Study H9's analysis (``qwen_gdpo_grpo``, pre-registered in docs/results/README.md): GDPO against GRPO on
Qwen2.5-Coder-0.5B-Instruct, each run evaluated greedy on the same 200 GSM8K test problems by ``gdpo eval``.

Reads the study's folder, as studies/qwen_runner.py runs it (outputs/qwen_gdpo_grpo: ``<arm>-seed<N>/`` with its
trainer_state.json, ``eval-<arm>-seed<N>/`` with summary.json and completions.jsonl) or as committed
(docs/results/qwen_gdpo_grpo, the logs in docs/results/logs/qwen_gdpo_grpo.json.gz): both give the same analysis.
The outcomes of one evaluation are read as for study H8 (:func:`studies.smollm2_study.run_outcomes`); the
statistic is H9's: one difference (GDPO - GRPO) on three primary outcomes, Holm over those three.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gdpo_trl.results.stats import bootstrap_diff_ci, holm_adjusted, mean_std, verdict, welch_t_test
from studies.smollm2_study import CURVES as H8_CURVES
from studies.smollm2_study import (
    OUTCOMES,
    SECONDARY,
    checked_metrics,
    copy_evaluation,
    evaluation,
    logged_steps,
    mean_std_rows,
    plot_training,
    run_outcomes,
    secondary_tables,
)
from studies.study_files import read_logs, read_text, write_logs

STUDY = "qwen_gdpo_grpo"
COMMAND = "nohup nice -n 10 python -m studies.qwen_runner run --data DATA --workers 2"
ARMS = ("gdpo", "grpo")
SEEDS = (0, 1, 2, 3, 4)
MIN_SEEDS = 3  # the stopping rule's floor: fewer seeds with both arms evaluated are not analysed
STARTS = ("eval-start", "eval-start-own-default")
# The training curves H9 registered: H8's, but GD2PO's masked share (H9 masks nothing).
CURVES = {name: key for name, key in H8_CURVES.items() if name != "conflict_masked"}


def welch_power(effect_sds: float, seeds: int = len(SEEDS), alpha: float = 0.05, draws: int = 3000) -> float:
    """The power of Welch's two-sided test (:func:`welch_t_test`) for a difference of ``effect_sds`` between-seed
    standard deviations with ``seeds`` per arm at level ``alpha``, simulated from normal draws (``default_rng(0)``):
    the pre-registration's power figures."""
    import numpy as np

    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(draws):
        a, b = rng.normal(effect_sds, 1.0, seeds), rng.normal(0.0, 1.0, seeds)
        hits += welch_t_test(list(a), list(b)).p < alpha
    return hits / draws


def seeds_with_both_arms(evaluated) -> list[int]:
    """The seeds whose two arms are both among ``evaluated`` ((arm, seed) pairs): what the stopping rule analyses."""
    return [seed for seed in SEEDS if all((arm, seed) in evaluated for arm in ARMS)]


def training_logs(root: Path, seeds: list[int]) -> dict[str, list[dict]]:
    """The runs' ``log_history`` by run name: from each run's trainer_state.json, or (committed) the logs file."""
    packed = root.parent / "logs" / f"{STUDY}.json.gz"
    if not (root / "gdpo-seed0" / "trainer_state.json").is_file() and packed.is_file():
        return read_logs(packed)["runs"]
    return {f"{arm}-seed{seed}": json.loads((root / f"{arm}-seed{seed}" / "trainer_state.json").read_text())["log_history"]
            for seed in seeds for arm in ARMS}  # fmt: skip


def curves(logs: dict[str, list[dict]], seeds: list[int]) -> dict:
    """Per arm and curve: each run's mean over its steps, mean ± std over seeds (a curve a run never logged: 0)."""
    return {arm: {name: mean_std([sum(e.get(key, 0.0) for e in steps) / len(steps)
                                  for steps in (logged_steps(logs, arm, seed) for seed in seeds)])
                  for name, key in CURVES.items()} for arm in ARMS}  # fmt: skip


def start_outcomes(folder: Path) -> dict:
    """One of the start's evaluations as it came (they compare no arms): scored with the recipes' three rewards, its
    outcomes as a run's (:func:`run_outcomes`); scored otherwise (the model's own chat default, by the last number in
    the answer), every metric of its summary, recomputed from its completions and refused where they disagree."""
    if OUTCOMES["format"] in json.loads((folder / "summary.json").read_text())["metrics"]:
        return run_outcomes(folder)
    return checked_metrics(folder)[1]


def study_log(root: Path) -> Path:
    """The runner's own log, beside the study folder as the documented commands write it (``<out>.log``)."""
    return root.with_name(f"{root.name}.log")


def run_record(root: Path, seeds: list[int]) -> dict[str, dict]:
    """How each run ran, as the pre-registration asks it disclosed: the machines its jobs ran on (the runner's
    ``machine:`` stamps, written from amendment 2 on: a job stamped before the first of them belongs to an attempt
    discarded before it) and, from its own log of commands, how often it was trained, resumed from a checkpoint or
    started over. The runner's log is ``<root>.log`` beside a study folder, or ``study.log`` in it as kept."""
    stamps = read_text(study_log(root)) or read_text(root / "study.log") or ""
    machines: dict[str, list[str]] = {}
    machine = None
    for line in stamps.splitlines():
        if found := re.match(r"\S+ \S+ machine: (.+)", line):
            machine = found[1]
        elif machine and (found := re.match(r"\S+ \S+ (?:train|evaluate) (\w+) seed (\d+)$", line)):
            names = machines.setdefault(f"{found[1]}-seed{found[2]}", [])
            names += [] if machine in names else [machine]
    record = {}
    for name in (f"{arm}-seed{seed}" for seed in seeds for arm in ARMS):
        trains = [
            c for c in (read_text(root / f"{name}.log") or "").splitlines() if c.startswith("$ ") and " train " in c
        ]
        record[name] = {"machines": machines.get(name, []), "train_commands": len(trains),
                        "resumed": sum("--resume_from_checkpoint" in c for c in trains),
                        "started_over": sum("--overwrite_output_dir" in c for c in trains)}  # fmt: skip
    return record


def analysis_and_logs(root: Path) -> tuple[dict, dict[str, list[dict]]]:
    """The pre-registered statistic over the seeds whose two arms are both evaluated: per arm mean ± std of each
    outcome; GDPO - GRPO on each with Welch's test, the 95% bootstrap CI (``default_rng(0)``) and its verdict; Holm
    over the three; H9's verdict; the secondary outcomes and the start's evaluations."""
    runs = {(arm, seed): run_outcomes(evaluation(root / f"{arm}-seed{seed}")) for seed in SEEDS for arm in ARMS
            if (evaluation(root / f"{arm}-seed{seed}") / "summary.json").is_file()}  # fmt: skip
    seeds = seeds_with_both_arms(runs)
    if len(seeds) < MIN_SEEDS:
        raise SystemExit(
            f"{len(seeds)} seed(s) with both arms evaluated: the stopping rule needs at least {MIN_SEEDS}"
        )
    values = {(arm, name): [runs[arm, seed][name] for seed in seeds] for arm in ARMS for name in OUTCOMES}
    comparisons = []
    for name in OUTCOMES:
        a, b = values["gdpo", name], values["grpo", name]
        ci = bootstrap_diff_ci(a, b, seed=0)
        comparisons.append({"outcome": name, "diff": sum(a) / len(a) - sum(b) / len(b), "ci": list(ci),
                            "p": welch_t_test(a, b).p, "verdict": verdict(ci)})  # fmt: skip
    for row, adjusted in zip(comparisons, holm_adjusted([row["p"] for row in comparisons]), strict=True):
        row |= {"holm_p": adjusted, "holds_under_holm": row["verdict"] != "level" and adjusted <= 0.05}
    if any(r["verdict"] == "behind" and r["holds_under_holm"] for r in comparisons):
        reading = "contradicted"
    else:
        reading = "supported" if any(r["verdict"] == "ahead" and r["holds_under_holm"] for r in comparisons) else "not supported"  # fmt: skip
    secondary = [*SECONDARY, "format_uncut"]
    logs = training_logs(root, seeds)
    result = {
        "seeds": seeds,
        "starts": {name: start_outcomes(root / name) for name in STARTS if (root / name / "summary.json").is_file()},
        "runs": [{"arm": arm, "seed": seed, **runs[arm, seed]} for seed in seeds for arm in ARMS],
        "arms": {arm: {name: mean_std(values[arm, name]) for name in OUTCOMES} for arm in ARMS},
        "secondary": {
            arm: {name: mean_std([runs[arm, seed][name] for seed in seeds]) for name in secondary} for arm in ARMS
        },  # fmt: skip
        "training": curves(logs, seeds),
        "record": run_record(root, seeds),
        "comparisons": comparisons,
        "verdict": {"H9 gdpo - grpo": reading},
    }
    return result, logs


def tables(result: dict) -> str:
    """docs/results/qwen_gdpo_grpo.md: the arms, the difference with Holm, the verdict, the secondary outcomes."""
    lines = [f"# {STUDY}: arm means ± std over seeds {result['seeds']}", ""]
    lines += mean_std_rows(list(OUTCOMES), {arm: result["arms"][arm].values() for arm in ARMS})
    lines += ["", "| gdpo - grpo | diff | 95% CI | Welch p | Holm p | verdict |", "|---|---:|---|---:|---:|---|"]
    lines += [f"| {c['outcome']} | {c['diff']:+.3f} | [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] | {c['p']:.3g} | "
              f"{c['holm_p']:.3g} | {c['verdict']}{'' if c['verdict'] == 'level' or c['holds_under_holm'] else ' (not under Holm)'} |"
              for c in result["comparisons"]]  # fmt: skip
    lines += ["", *(f"- {name}: {value}" for name, value in result["verdict"].items())]
    training = {arm: found.values() for arm, found in result["training"].items()}
    lines += secondary_tables(result["secondary"], training, list(CURVES))
    lines += ["", "How each run ran (the runner's stamps and each run's log of commands):", "",
              "| run | machines | train commands | resumed | started over |", "|---|---|---:|---:|---:|"]  # fmt: skip
    lines += [f"| {name} | {'; '.join(r['machines']) or 'not stamped'} | {r['train_commands']} | {r['resumed']} | "
              f"{r['started_over']} |" for name, r in result.get("record", {}).items()]  # fmt: skip
    return "\n".join(lines) + "\n"


def write(root: Path, docs: Path) -> None:
    """Write docs/results/qwen_gdpo_grpo.json and .md, the runs' training logs (logs/qwen_gdpo_grpo.json.gz), and
    under docs/results/qwen_gdpo_grpo/ every evaluation's summary and gzipped completions; the curves' PNG."""
    result, logs = analysis_and_logs(root)
    write_logs(docs / "logs" / f"{STUDY}.json.gz", STUDY, COMMAND, logs)
    for folder in sorted(root.glob("eval-*")):
        if folder.resolve() != (docs / STUDY / folder.name).resolve():  # analysed where kept: already there
            copy_evaluation(folder, docs / STUDY / folder.name)
    (docs / f"{STUDY}.json").write_text(json.dumps(result, indent=2) + "\n")
    (docs / f"{STUDY}.md").write_text(tables(result) + f"\n![H9's training curves]({STUDY}.png)\n")
    plot_training(logs, result["seeds"], docs / f"{STUDY}.png", model="Qwen2.5-Coder-0.5B-Instruct", study="H9")
    print(f"wrote {docs / STUDY}.json, .md, .png, logs/{STUDY}.json.gz and {docs / STUDY}/")
