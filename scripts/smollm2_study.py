"""Study H8 (``smollm2_gdpo_grpo``): GDPO against GRPO and an SFT control on SmolLM2 from the shipped format start,
run as pre-registered in docs/results/README.md; resumable, so it can go on across sessions.

Each (seed, arm) is one job: train (GDPO and GRPO through ``gdpo train`` with the SmolLM2 recipes, checkpoints every
2 steps and resumed from the newest; the control through ``python -m gdpo_trl.tasks.smollm2_sft --control``), then
``gdpo eval`` greedy on the first 200 GSM8K test problems. Jobs go seed-major (seed 0's three arms, then seed 1's),
so a study cut short stays balanced across arms; a finished job is never run again; ``--workers 2`` runs two jobs at
a time with one torch thread each, about 1.6 times the work an hour on a 2-core machine (docs/results/README.md, H8's
second amendment). Each job's output goes to ``<job>.log`` beside it. The format start itself is evaluated once,
first. Run it in the background, niced, and run it again after a stop to go on::

    nohup nice -n 10 python scripts/smollm2_study.py run --data DATA --workers 2 > outputs/smollm2_gdpo_grpo.log 2>&1 &
    python scripts/smollm2_study.py status
    python scripts/smollm2_study.py analyze   # once every run is evaluated: tables, raw logs and completions
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDY = "smollm2_gdpo_grpo"
START = "builtin:smollm2-135m-gsm8k-format"
ARMS = ("gdpo", "grpo", "sft")
SEEDS = (0, 1, 2, 3, 4)
STEPS = 10
# The recipes' micro-batches when H8 was registered (16 completions trained on as 2 x 8); the recipes may change.
MICRO_BATCHES = ["--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "2"]
EVAL = ["--limit", "200", "--max_new_tokens", "256", "--batch_size", "50", "--dtype", "bfloat16"]


def tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def train_command(arm: str, seed: int, data: Path, out: Path) -> list[str]:
    if arm == "sft":
        return [sys.executable, "-m", "gdpo_trl.tasks.smollm2_sft", str(out), "--data", str(data / "train.jsonl"),
                "--control", "--seed", str(seed)]  # fmt: skip
    # Resume from the newest checkpoint; a run stopped before its first one starts over.
    resume = ["--resume_from_checkpoint", "true"] if any(out.glob("checkpoint-*")) else []
    resume = resume or (["--overwrite_output_dir", "true"] if out.exists() else [])
    return [tool("gdpo"), "train", "--config", str(ROOT / f"recipes/cpu/smollm2_{arm}/config.yaml"),
            "--dataset_name", str(data / "train.jsonl"), "--seed", str(seed), "--max_steps", str(STEPS),
            "--save_steps", "2", *MICRO_BATCHES, "--output_dir", str(out), *resume]  # fmt: skip


def trained(arm: str, out: Path) -> bool:
    return (out / "build.json").is_file() if arm == "sft" else (out / "trainer_state.json").is_file()


def run_logged(command: list[str], log: Path, threads: int | None = None) -> None:
    """Run ``command`` with its output appended to ``log`` and ``threads`` torch threads (OMP_NUM_THREADS; None leaves
    torch's choice); a failure stops the job (run the study again to retry)."""
    with log.open("a") as handle:
        handle.write(f"\n$ {' '.join(command)}\n")
        handle.flush()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        env |= {"OMP_NUM_THREADS": str(threads)} if threads else {}
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"failed (exit {done.returncode}): {' '.join(command)}; see {log}")


def evaluate(model: str, data: Path, out: Path, log: Path, threads: int | None = None) -> None:
    if not (out / "summary.json").is_file():
        run_logged([tool("gdpo"), "eval", "--model", model, "--dataset", str(data / "test.jsonl"), *EVAL,
                    "--output_dir", str(out)], log, threads)  # fmt: skip


def evaluation(run: Path) -> Path:
    """Where a run's evaluation goes: beside the run (gdpo eval writes nothing inside a run's folder)."""
    return run.with_name(f"eval-{run.name}")


def jobs(root: Path):
    yield "start", None, root / "eval-start"
    for seed in SEEDS:
        for arm in ARMS:
            yield arm, seed, root / f"{arm}-seed{seed}"  # its evaluation: root / eval-{arm}-seed{seed}


def run_job(arm: str, seed: int | None, out: Path, data: Path, threads: int | None) -> None:
    """Train one (arm, seed) unless trained, then evaluate it unless evaluated; its output goes to <out>.log."""
    started, log = time.monotonic(), out.with_name(f"{out.name}.log")
    if arm == "start":
        evaluate(START, data, out, log, threads)
    else:
        if not trained(arm, out):
            print(f"{time.strftime('%H:%M:%S')} train {arm} seed {seed}", flush=True)
            run_logged(train_command(arm, seed, data, out), log, threads)
        print(f"{time.strftime('%H:%M:%S')} eval {arm} seed {seed}", flush=True)
        evaluate(str(out), data, evaluation(out), log, threads)
    print(f"{time.strftime('%H:%M:%S')} done {arm} seed {seed} ({time.monotonic() - started:.0f} s)", flush=True)


def run(args) -> None:
    """Every job not done yet, ``--workers`` at a time in seed-major order (the start's evaluation first, alone)."""
    from concurrent.futures import ThreadPoolExecutor

    root, data = Path(args.out), Path(args.data)
    root.mkdir(parents=True, exist_ok=True)
    # A decode step of a 135M model is too small to keep two threads busy: on 2 cores, two one-thread jobs side by side
    # generate about 1.6 times the tokens an hour of one two-thread job (measured: H8's second amendment).
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.workers)
    start, *rest = jobs(root)
    run_job(*start, data, threads * args.workers)
    with ThreadPoolExecutor(args.workers) as pool:  # the pool takes jobs in submission order: seed-major
        futures = [pool.submit(run_job, *job, data, threads) for job in rest]
    failed = [str(f.exception()) for f in futures if f.exception()]
    if failed:
        raise SystemExit("\n".join(failed))


def status(args) -> None:
    """One line per job: trained, evaluated (no outcome is shown before the study ends: the stopping rule)."""
    root, evaluated = Path(args.out), set()
    for arm, seed, out in jobs(root):
        done_eval = ((out if arm == "start" else evaluation(out)) / "summary.json").is_file()
        done_train = arm == "start" or trained(arm, out)
        checkpoints = sorted(p.name for p in out.glob("checkpoint-*"))
        print(f"{arm:6} seed {seed!s:4} trained {done_train!s:5} evaluated {done_eval!s:5} {' '.join(checkpoints)}")
        evaluated |= {(arm, seed)} if done_eval else set()
    complete = [seed for seed in SEEDS if all((arm, seed) in evaluated for arm in ARMS)]
    runs = sum(seed is not None for _, seed in evaluated)
    print(f"{runs} of {len(SEEDS) * len(ARMS)} runs evaluated; seeds with all three arms: {complete}")


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
    plain, packed = evaluation / "completions.jsonl", evaluation / "completions.jsonl.gz"
    text = plain.read_text() if plain.is_file() else gzip.decompress(packed.read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines()]


def run_outcomes(evaluation: Path) -> dict:
    """One evaluation's primary and secondary outcomes, with format among the completions not cut at the limit."""
    metrics = json.loads((evaluation / "summary.json").read_text())["metrics"]
    uncut = [r["rewards"][0]["format"] for r in read_completions(evaluation) if not r["truncated"][0]]
    found = {name: metrics[key] for name, key in {**OUTCOMES, **SECONDARY}.items()}
    return found | {"format_uncut": sum(uncut) / len(uncut) if uncut else None}


def training_logs(root: Path, seeds: list[int]) -> dict[str, list[dict]]:
    """The RL runs' ``log_history`` by run name: from each run's trainer_state.json, or (committed) the logs file."""
    packed = root.parent / "logs" / f"{STUDY}.json.gz"
    if not (root / "gdpo-seed0" / "trainer_state.json").is_file() and packed.is_file():
        return json.loads(gzip.decompress(packed.read_bytes()))
    return {f"{arm}-seed{seed}": json.loads((root / f"{arm}-seed{seed}" / "trainer_state.json").read_text())["log_history"]
            for seed in seeds for arm in ("gdpo", "grpo")}  # fmt: skip


def curves(logs: dict[str, list[dict]], seeds: list[int]) -> dict:
    """Per RL arm and curve: the mean over seeds at each step, and each run's mean over its steps (mean ± std)."""
    from gdpo_trl.results.stats import mean_std

    found = {}
    for arm in ("gdpo", "grpo"):
        steps = {seed: [entry for entry in logs[f"{arm}-seed{seed}"] if "step_time" in entry] for seed in seeds}
        found[arm] = {}
        for name, key in CURVES.items():
            per_run = [[entry.get(key, 0.0) for entry in steps[seed]] for seed in seeds]
            found[arm][name] = {
                "per_step": [sum(values) / len(values) for values in zip(*per_run, strict=True)],
                "run_mean": mean_std([sum(run) / len(run) for run in per_run]),
            }
    return found


def plot_training(logs: dict[str, list[dict]], seeds: list[int], out_png: Path) -> None:
    """The RL arms' training curves, one panel per reward and the total: mean over seeds, min-max band."""
    from gdpo_trl.results.compare import MethodCurves, plot_comparison
    from gdpo_trl.results.runs import reward_key

    names = ["format_reward", "correctness_reward", "integer_reward"]
    keys = [*(reward_key(name) for name in names), "reward"]
    curves = []
    for arm in ("gdpo", "grpo"):
        runs = [[entry for entry in logs[f"{arm}-seed{seed}"] if "step_time" in entry] for seed in seeds]
        steps = [entry["step"] for entry in runs[0]]
        curves.append(MethodCurves(arm, steps, {key: [[entry[key] for entry in run] for run in runs] for key in keys}))
    title = f"H8 on SmolLM2-135M: training batch means, seeds {seeds}"
    plot_comparison(curves, names, out_png, window=1, title=title)


def analysis(root: Path) -> dict:
    """The pre-registered statistic over the seeds whose three arms are all evaluated (the stopping rule): per arm
    mean and std of each outcome; each difference with Welch's test, the 95% bootstrap CI and its verdict; Holm over
    the nine primary comparisons; H8a's and H8b's verdicts; the secondary outcomes. ``root`` is the study's folder
    (outputs/smollm2_gdpo_grpo) or its committed copy (docs/results/smollm2_gdpo_grpo): both give the same."""
    from gdpo_trl.results.stats import bootstrap_diff_ci, holm_adjusted, mean_std, verdict, welch_t_test

    runs = {(arm, seed): run_outcomes(evaluation(root / f"{arm}-seed{seed}")) for seed in SEEDS for arm in ARMS
            if (evaluation(root / f"{arm}-seed{seed}") / "summary.json").is_file()}  # fmt: skip
    seeds = [seed for seed in SEEDS if all((arm, seed) in runs for arm in ARMS)]
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
    return {
        "seeds": seeds,
        "start": run_outcomes(root / "eval-start") if (root / "eval-start" / "summary.json").is_file() else None,
        "runs": [{"arm": arm, "seed": seed, **runs[arm, seed]} for seed in seeds for arm in ARMS],
        "arms": {arm: {name: mean_std(values[arm, name]) for name in OUTCOMES} for arm in ARMS},
        "secondary": {
            arm: {name: mean_std([runs[arm, seed][name] for seed in seeds]) for name in secondary} for arm in ARMS
        },  # fmt: skip
        "training": curves(training_logs(root, seeds), seeds),
        "comparisons": comparisons,
        "verdicts": {
            "H8a gdpo - grpo": reading("gdpo - grpo"),
            "H8b gdpo - sft": reading("gdpo - sft"),
            "H8b grpo - sft": reading("grpo - sft"),
        },  # fmt: skip
    }


def tables(result: dict) -> str:
    """docs/results/smollm2_gdpo_grpo.md: the arms, the differences with Holm, the verdicts, the secondary outcomes."""
    lines = [f"# {STUDY}: arm means ± std over seeds {result['seeds']}", "", "| arm | " + " | ".join(OUTCOMES) + " |",
             "|---|" + "---:|" * len(OUTCOMES)]  # fmt: skip
    lines += [f"| {arm} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in result["arms"][arm].values()) + " |"
              for arm in ARMS]  # fmt: skip
    lines += [
        "",
        "| difference | outcome | diff | 95% CI | Welch p | Holm p | verdict |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    lines += [f"| {c['difference']} | {c['outcome']} | {c['diff']:+.3f} | [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] | "
              f"{c['p']:.3g} | {c['holm_p']:.3g} | {c['verdict']}{'' if c['holds_under_holm'] else ' (not under Holm)'} |"
              for c in result["comparisons"]]  # fmt: skip
    lines += ["", *(f"- {name}: {value}" for name, value in result["verdicts"].items())]
    names = list(next(iter(result["secondary"].values())))
    lines += ["", "Secondary, on the evaluation (share cut at the limit, mean tokens, format among the uncut):", "",
              "| arm | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]  # fmt: skip
    lines += [f"| {arm} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in result["secondary"][arm].values()) + " |"
              for arm in ARMS]  # fmt: skip
    names = list(CURVES)
    lines += ["", "Secondary, in training (each run's mean over its steps; batch means as logged):", "",
              "| arm | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]  # fmt: skip
    lines += [f"| {arm} | " + " | ".join(f"{c['run_mean'][0]:.3f} ± {c['run_mean'][1]:.3f}" for c in found.values()) + " |"
              for arm, found in result["training"].items()]  # fmt: skip
    return "\n".join([*lines, "", f"![H8's training curves]({STUDY}.png)"]) + "\n"


def analyze(args) -> None:
    """Write docs/results/smollm2_gdpo_grpo.json and .md, the runs' training logs (logs/smollm2_gdpo_grpo.json.gz)
    and every evaluation's summary and completions (docs/results/smollm2_gdpo_grpo/)."""
    import shutil

    root, docs = Path(args.out), Path(args.docs)
    result = analysis(root)
    logs = training_logs(root, result["seeds"])
    with gzip.open(docs / "logs" / f"{STUDY}.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(logs, handle)
    for folder in sorted(root.glob("eval-*")):
        target = docs / STUDY / folder.name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / "summary.json", target / "summary.json")
        with (folder / "completions.jsonl").open("rb") as src, gzip.open(target / "completions.jsonl.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
    (docs / f"{STUDY}.json").write_text(json.dumps(result, indent=2) + "\n")
    (docs / f"{STUDY}.md").write_text(tables(result))
    plot_training(logs, result["seeds"], docs / f"{STUDY}.png")
    print(f"wrote {docs / STUDY}.json, .md, .png, logs/{STUDY}.json.gz and {docs / STUDY}/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "status", "analyze"])
    parser.add_argument("--data", help="the GSM8K folder (train.jsonl, test.jsonl), for run")
    parser.add_argument("--out", default=str(ROOT / "outputs" / STUDY), help=f"default: outputs/{STUDY}")
    parser.add_argument("--workers", type=int, default=1, help="jobs run at the same time (default 1)")
    parser.add_argument("--threads", type=int, help="torch threads a job (default: the CPU's cores / --workers)")
    parser.add_argument("--docs", default=str(ROOT / "docs" / "results"), help="where analyze writes (docs/results)")
    args = parser.parse_args()
    if args.command == "run" and not args.data:
        parser.error("run needs --data (the GSM8K folder)")
    {"run": run, "status": status, "analyze": analyze}[args.command](args)


if __name__ == "__main__":
    main()
