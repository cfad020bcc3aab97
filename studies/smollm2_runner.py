"""Study H8 (``smollm2_gdpo_grpo``): GDPO against GRPO and an SFT control on SmolLM2 from the shipped format start,
run as pre-registered in docs/results/README.md; resumable, so it can go on across sessions.

Each (seed, arm) is one job: train (GDPO and GRPO through ``gdpo train`` with the SmolLM2 recipes, checkpoints every
2 steps and resumed from the newest; the control through ``python -m gdpo_trl.tasks.smollm2_sft --control``), then
``gdpo eval`` greedy on the first 200 GSM8K test problems. Jobs go seed-major (seed 0's three arms, then seed 1's),
so a study cut short stays balanced across arms; a finished job is never run again; ``--workers 2`` runs two jobs at
a time with one torch thread each, about 1.6 times the work an hour on a 2-core machine (docs/results/README.md, H8's
second amendment). Each job's output goes to ``<job>.log`` beside it. The format start itself is evaluated once,
first. Run it in the background, niced, and run it again after a stop to go on::

    nohup nice -n 10 python -m studies.smollm2_runner run --data DATA --workers 2 > outputs/smollm2_gdpo_grpo.log 2>&1 &
    python -m studies.smollm2_runner status
    python -m studies.smollm2_runner analyze   # once every run is evaluated: tables, raw logs and completions
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from studies.smollm2_study import ARMS, SEEDS, STUDY, evaluation, seeds_with_every_arm

ROOT = Path(__file__).resolve().parents[1]
START = "builtin:smollm2-135m-gsm8k-format"
STEPS = 10
# The recipes' micro-batches when H8 was registered (16 completions trained on as 2 x 8); the recipes may change.
MICRO_BATCHES = ["--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "2"]
# Registered before the recipes sampled from merged LoRA weights: the study's runs sample through the adapters.
UNMERGED = ["--merge_lora_for_generation", "false", "--fast_sampling", "false"]  # and with transformers' sampler
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
            "--save_steps", "2", *MICRO_BATCHES, *UNMERGED, "--output_dir", str(out), *resume]  # fmt: skip


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
    from studies.study_jobs import check_study_folder

    root, evaluated = Path(args.out), set()
    check_study_folder(root, "status")
    for arm, seed, out in jobs(root):
        done_eval = ((out if arm == "start" else evaluation(out)) / "summary.json").is_file()
        done_train = arm == "start" or trained(arm, out)
        checkpoints = sorted(p.name for p in out.glob("checkpoint-*"))
        print(f"{arm:6} seed {seed!s:4} trained {done_train!s:5} evaluated {done_eval!s:5} {' '.join(checkpoints)}")
        evaluated |= {(arm, seed)} if done_eval else set()
    runs = sum(seed is not None for _, seed in evaluated)
    print(
        f"{runs} of {len(SEEDS) * len(ARMS)} runs evaluated; seeds with all three arms: {seeds_with_every_arm(evaluated)}"
    )


def analyze(args) -> None:
    """Write the tables, the curves, the raw logs and every evaluation under docs/results/ (as pre-registered)."""
    from studies.smollm2_study import write

    write(Path(args.out), Path(args.docs))


def check_arguments(args) -> None:
    """Refuse, in one line naming the argument and the fix, what would fail only after the first job started (a
    missing data file: a RuntimeError after 41 s; --workers 0: ZeroDivisionError)."""
    if args.workers < 1:
        raise SystemExit(f"--workers {args.workers}: give 1 or more (jobs run at the same time)")
    if args.threads is not None and args.threads < 1:
        raise SystemExit(f"--threads {args.threads}: give 1 or more, or leave it out (the CPU's cores / --workers)")
    if args.command != "run":
        return
    if not args.data:
        raise SystemExit("run needs --data (the GSM8K folder: train.jsonl and test.jsonl)")
    data = Path(args.data)
    if not data.is_dir():
        raise SystemExit(f"--data {data}: not a folder; give the GSM8K folder holding train.jsonl and test.jsonl")
    missing = [name for name in ("train.jsonl", "test.jsonl") if not (data / name).is_file()]
    if missing:
        raise SystemExit(
            f"--data {data}: no {' or '.join(missing)} there (openai/grade-school-math's files: train.jsonl, test.jsonl)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "status", "analyze"])
    parser.add_argument("--data", help="the GSM8K folder (train.jsonl, test.jsonl), for run")
    parser.add_argument("--out", default=str(ROOT / "outputs" / STUDY), help=f"default: outputs/{STUDY}")
    parser.add_argument("--workers", type=int, default=1, help="jobs run at the same time (default 1)")
    parser.add_argument("--threads", type=int, help="torch threads a job (default: the CPU's cores / --workers)")
    parser.add_argument("--docs", default=str(ROOT / "docs" / "results"), help="where analyze writes (docs/results)")
    args = parser.parse_args()
    check_arguments(args)
    {"run": run, "status": status, "analyze": analyze}[args.command](args)


if __name__ == "__main__":
    main()
