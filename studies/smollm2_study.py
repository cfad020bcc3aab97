"""Study H8's analysis (``smollm2_gdpo_grpo``, pre-registered in docs/results/README.md): GDPO, GRPO and an SFT
control on SmolLM2, each run evaluated greedy on the same 200 GSM8K test problems by ``gdpo eval``.

Reads a study folder, either as studies/smollm2_runner.py runs it (outputs/smollm2_gdpo_grpo: ``<arm>-seed<N>/`` with
its trainer_state.json, ``eval-<arm>-seed<N>/`` with summary.json and completions.jsonl) or as committed
(docs/results/smollm2_gdpo_grpo: the evaluations with gzipped completions, the logs in
docs/results/logs/smollm2_gdpo_grpo.json.gz); both give the same analysis. :func:`analysis` applies the stopping
rule's seeds and the pre-registered statistic, :func:`tables` writes docs/results/smollm2_gdpo_grpo.md,
:func:`write` everything the docs commit.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from gdpo_trl.eval.scoring import summarize
from gdpo_trl.results.stats import bootstrap_diff_ci, holm_adjusted, mean_std, verdict, welch_t_test
from studies.study_files import read_logs, read_text, write_logs

STUDY = "smollm2_gdpo_grpo"
# What ran every job (each run's own train and eval commands are in its log beside it, outputs/smollm2_gdpo_grpo/).
COMMAND = "nohup nice -n 10 python -m studies.smollm2_runner run --data DATA --workers 2"
ARMS = ("gdpo", "grpo", "sft")
SEEDS = (0, 1, 2, 3, 4)


def seeds_with_every_arm(evaluated) -> list[int]:
    """The seeds whose three arms are all among ``evaluated`` ((arm, seed) pairs): what the stopping rule analyses."""
    return [seed for seed in SEEDS if all((arm, seed) in evaluated for arm in ARMS)]


def evaluation(run: Path) -> Path:
    """Where a run's evaluation goes: beside the run (gdpo eval writes nothing inside a run's folder)."""
    return run.with_name(f"eval-{run.name}")


OUTCOMES = {"format": "format_rate", "integer": "integer_rate", "correctness": "pass@1"}
SECONDARY = {"clipped": "truncated_fraction", "length": "mean_completion_tokens"}
DIFFERENCES = (("gdpo", "grpo"), ("gdpo", "sft"), ("grpo", "sft"))
# The RL arms' training curves (secondary): each logged step's batch means, as TRL and GDPOTrainer log them.
CURVES = {
    "format": "rewards/format_reward/mean",
    "correctness": "rewards/correctness_reward/mean",
    "integer": "rewards/integer_reward/mean",
    "clipped": "completions/clipped_ratio",
    "length": "completions/mean_length",
    "conflict": "conflict/share",
    "conflict_masked": "conflict/masked_share",
}


def read_completions(evaluation: Path) -> list[dict]:
    """An evaluation's completions: ``completions.jsonl`` as gdpo eval wrote it, or gzipped as committed."""
    text = read_text(evaluation / "completions.jsonl")
    if text is None:
        raise FileNotFoundError(f"no completions.jsonl(.gz) in {evaluation}: run its gdpo eval first")
    return [json.loads(line) for line in text.splitlines()]


def checked_metrics(evaluation: Path, keys=None) -> tuple[list[dict], dict]:
    """An evaluation's completions and their metrics, recomputed as gdpo eval reduces them (every completion with its
    rewards, length and whether it was cut); a summary.json that says otherwise on ``keys`` (default: every metric
    it holds) is refused, naming the metric: the figures rest on the rows."""
    rows = read_completions(evaluation)
    metrics = summarize(rows)
    written = json.loads((evaluation / "summary.json").read_text())["metrics"]
    differing = [key for key in (written if keys is None else keys) if written.get(key) != metrics.get(key)]
    if differing:
        key = differing[0]
        raise SystemExit(f"{evaluation / 'summary.json'}: {key} is {written.get(key)!r} but its completions give "
                         f"{metrics.get(key)!r}; re-run gdpo eval or restore the file")  # fmt: skip
    return rows, metrics


def run_outcomes(evaluation: Path) -> dict:
    """One evaluation's primary and secondary outcomes, with format among the completions not cut at the limit,
    recomputed from its completions (:func:`checked_metrics`)."""
    rows, metrics = checked_metrics(evaluation, [*OUTCOMES.values(), *SECONDARY.values()])
    uncut = [r["rewards"][0]["format"] for r in rows if not r["truncated"][0]]
    found = {name: metrics[key] for name, key in {**OUTCOMES, **SECONDARY}.items()}
    return found | {"format_uncut": sum(uncut) / len(uncut) if uncut else None}


def training_logs(root: Path, seeds: list[int]) -> dict[str, list[dict]]:
    """The RL runs' ``log_history`` by run name: from each run's trainer_state.json, or (committed) the logs file."""
    packed = root.parent / "logs" / f"{STUDY}.json.gz"
    if not (root / "gdpo-seed0" / "trainer_state.json").is_file() and packed.is_file():
        return read_logs(packed)["runs"]
    return {f"{arm}-seed{seed}": json.loads((root / f"{arm}-seed{seed}" / "trainer_state.json").read_text())["log_history"]
            for seed in seeds for arm in ("gdpo", "grpo")}  # fmt: skip


def logged_steps(logs: dict[str, list[dict]], arm: str, seed: int) -> list[dict]:
    """One run's per-step entries (TRL's log ends with a summary entry, which has no ``step_time``)."""
    return [entry for entry in logs[f"{arm}-seed{seed}"] if "step_time" in entry]


def curves(logs: dict[str, list[dict]], seeds: list[int]) -> dict:
    """Per RL arm and curve: the mean over seeds at each step, and each run's mean over its steps (mean ± std)."""
    found = {}
    for arm in ("gdpo", "grpo"):
        steps = {seed: logged_steps(logs, arm, seed) for seed in seeds}
        found[arm] = {}
        for name, key in CURVES.items():
            per_run = [[entry.get(key, 0.0) for entry in steps[seed]] for seed in seeds]
            found[arm][name] = {
                "per_step": [sum(values) / len(values) for values in zip(*per_run, strict=True)],
                "run_mean": mean_std([sum(run) / len(run) for run in per_run]),
            }
    return found


def plot_training(
    logs: dict[str, list[dict]], seeds: list[int], out_png: Path, model: str = "SmolLM2-135M", study: str = "H8"
) -> None:
    """The RL arms' training curves, one panel per reward and the total: mean over seeds, min-max band (study H9
    draws its own with ``model`` and ``study``)."""
    from gdpo_trl.results.compare import MethodCurves, plot_comparison
    from gdpo_trl.results.runs import reward_key

    names = ["format_reward", "correctness_reward", "integer_reward"]
    keys = [*(reward_key(name) for name in names), "reward"]
    curves = []
    for arm in ("gdpo", "grpo"):
        runs = [logged_steps(logs, arm, seed) for seed in seeds]
        steps = [entry["step"] for entry in runs[0]]
        curves.append(MethodCurves(arm, steps, {key: [[entry[key] for entry in run] for run in runs] for key in keys}))
    title = f"{study} on {model}: training batch means, seeds {seeds}"
    plot_comparison(curves, names, out_png, window=1, title=title)


def analysis(root: Path) -> dict:
    return analysis_and_logs(root)[0]


def analysis_and_logs(root: Path) -> tuple[dict, dict[str, list[dict]]]:
    """The pre-registered statistic over the seeds whose three arms are all evaluated (the stopping rule): per arm
    mean and std of each outcome; each difference with Welch's test, the 95% bootstrap CI and its verdict; Holm over
    the nine primary comparisons; H8a's and H8b's verdicts; the secondary outcomes. ``root`` is the study's folder
    (outputs/smollm2_gdpo_grpo) or its committed copy (docs/results/smollm2_gdpo_grpo): both give the same. The
    RL runs' training logs come back beside it, read once."""
    runs = {(arm, seed): run_outcomes(evaluation(root / f"{arm}-seed{seed}")) for seed in SEEDS for arm in ARMS
            if (evaluation(root / f"{arm}-seed{seed}") / "summary.json").is_file()}  # fmt: skip
    seeds = seeds_with_every_arm(runs)
    if len(seeds) < 2:
        raise SystemExit(f"{len(seeds)} seed(s) with all three arms evaluated: the statistic needs at least 2")
    values = {(arm, name): [runs[arm, seed][name] for seed in seeds] for arm in ARMS for name in OUTCOMES}
    comparisons = []
    for first, second in DIFFERENCES:
        for name in OUTCOMES:
            a, b = values[first, name], values[second, name]
            ci = bootstrap_diff_ci(a, b, seed=0)
            comparisons.append({"difference": f"{first} - {second}", "outcome": name, "diff": sum(a) / len(a) - sum(b) / len(b),
                                "ci": list(ci), "p": welch_t_test(a, b).p, "verdict": verdict(ci)})  # fmt: skip
    for row, adjusted in zip(comparisons, holm_adjusted([row["p"] for row in comparisons]), strict=True):
        row |= {"holm_p": adjusted, "holds_under_holm": row["verdict"] != "level" and adjusted <= 0.05}

    def reading(difference: str) -> str:
        rows = [r for r in comparisons if r["difference"] == difference]
        if any(r["verdict"] == "behind" and r["holds_under_holm"] for r in rows):
            return "contradicted"
        return "supported" if any(r["verdict"] == "ahead" and r["holds_under_holm"] for r in rows) else "not supported"

    secondary = [*SECONDARY, "format_uncut"]
    logs = training_logs(root, seeds)
    result = {
        "seeds": seeds,
        "start": run_outcomes(root / "eval-start") if (root / "eval-start" / "summary.json").is_file() else None,
        "runs": [{"arm": arm, "seed": seed, **runs[arm, seed]} for seed in seeds for arm in ARMS],
        "arms": {arm: {name: mean_std(values[arm, name]) for name in OUTCOMES} for arm in ARMS},
        "secondary": {
            arm: {name: mean_std([runs[arm, seed][name] for seed in seeds]) for name in secondary} for arm in ARMS
        },  # fmt: skip
        "training": curves(logs, seeds),
        "comparisons": comparisons,
        "verdicts": {
            "H8a gdpo - grpo": reading("gdpo - grpo"),
            "H8b gdpo - sft": reading("gdpo - sft"),
            "H8b grpo - sft": reading("grpo - sft"),
        },  # fmt: skip
    }
    return result, logs


def mean_std_rows(header, by_arm: dict) -> list[str]:
    """A Markdown table of ``mean ± std`` cells: a header row of ``header``, then one row per arm of ``by_arm``
    (arm -> (mean, std) pairs in header order). H8's and H9's tables share it."""
    lines = ["| arm | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]
    lines += [
        f"| {arm} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in pairs) + " |" for arm, pairs in by_arm.items()
    ]
    return lines


def secondary_tables(secondary: dict, training: dict, curves: list[str], note: str = "") -> list[str]:
    """The secondary outcomes' two tables: on the evaluation (``secondary``: arm -> outcome -> (mean, std)) and in
    training (``training``: arm -> (mean, std) per curve of ``curves``); ``note`` ends the second title."""
    names = list(next(iter(secondary.values())))
    lines = ["", "Secondary, on the evaluation (share cut at the limit, mean tokens, format among the uncut):", ""]
    lines += mean_std_rows(names, {arm: found.values() for arm, found in secondary.items()})
    lines += ["", f"Secondary, in training (each run's mean over its steps{note}):", ""]
    return lines + mean_std_rows(curves, training)


def copy_evaluation(folder: Path, target: Path) -> None:
    """An evaluation as committed: its summary.json and its completions gzipped with mtime 0 (a re-run of an
    analysis writes the same bytes, leaving git nothing to commit)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(folder / "summary.json", target / "summary.json")
    (target / "completions.jsonl.gz").write_bytes(gzip.compress((folder / "completions.jsonl").read_bytes(), mtime=0))


def tables(result: dict) -> str:
    """docs/results/smollm2_gdpo_grpo.md: the arms, the differences with Holm, the verdicts, the secondary outcomes."""

    def unheld(comparison: dict) -> bool:  # ahead or behind by the CI, but not under Holm ("level" needs no note)
        return comparison["verdict"] != "level" and not comparison["holds_under_holm"]

    lines = [f"# {STUDY}: arm means ± std over seeds {result['seeds']}", ""]
    lines += mean_std_rows(list(OUTCOMES), {arm: result["arms"][arm].values() for arm in ARMS})
    lines += [
        "",
        "| difference | outcome | diff | 95% CI | Welch p | Holm p | verdict |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    lines += [f"| {c['difference']} | {c['outcome']} | {c['diff']:+.3f} | [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] | "
              f"{c['p']:.3g} | {c['holm_p']:.3g} | {c['verdict']}{' (not under Holm)' if unheld(c) else ''} |"
              for c in result["comparisons"]]  # fmt: skip
    lines += ["", *(f"- {name}: {value}" for name, value in result["verdicts"].items())]
    training = {arm: [c["run_mean"] for c in found.values()] for arm, found in result["training"].items()}
    lines += secondary_tables(result["secondary"], training, list(CURVES), "; batch means as logged")
    return "\n".join([*lines, "", f"![H8's training curves]({STUDY}.png)"]) + "\n"


def json_text(result: dict) -> str:
    """docs/results/smollm2_gdpo_grpo.json as :func:`write` writes it: what the tests compare the committed file with,
    byte for byte."""
    return json.dumps(result, indent=2) + "\n"


def write(root: Path, docs: Path) -> None:
    """Write docs/results/smollm2_gdpo_grpo.json and .md, the RL runs' training logs (logs/smollm2_gdpo_grpo.json.gz),
    and under docs/results/smollm2_gdpo_grpo/ every evaluation's summary and completions and each control's build
    record."""
    result, logs = analysis_and_logs(root)
    # gzip with mtime 0 throughout: a re-run of `analyze` writes the same bytes, leaving git nothing to commit.
    write_logs(docs / "logs" / f"{STUDY}.json.gz", STUDY, COMMAND, logs)
    for folder in sorted(root.glob("eval-*")):
        copy_evaluation(folder, docs / STUDY / folder.name)
    for build in sorted(root.glob("sft-seed*/build.json")):  # the control logs no steps: its build record is its log
        (docs / STUDY / build.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(build, docs / STUDY / build.parent.name / "build.json")
    (docs / f"{STUDY}.json").write_text(json_text(result))
    (docs / f"{STUDY}.md").write_text(tables(result))
    plot_training(logs, result["seeds"], docs / f"{STUDY}.png")
    print(f"wrote {docs / STUDY}.json, .md, .png, logs/{STUDY}.json.gz and {docs / STUDY}/")
