"""One run (not a study) of recipes/cpu/qwen_gdpo_strict at study H9's GDPO seed-0 settings, then its evaluation.

H9's settings, as its runner ran them (its commands are in docs/results/qwen_gdpo_grpo/gdpo-seed0.log.gz): one torch
thread, float32, seed 0, 10 steps, a checkpoint every 2 steps (the last one kept), GSM8K train; then ``gdpo eval``
greedy on the first 200 GSM8K test problems with the training prompt, batches of 50, 400 new tokens, float32. Only
the recipe differs: the rewards (gdpo_trl/rewards/reasoning.py and the recipe's reward_conditions).

Resumable: a finished training (its trainer_state.json at the top of the folder) is not run again, a stopped one
resumes from its newest checkpoint, a finished evaluation (its summary.json) is kept. Every command and its output
go to ``run.log`` in the folder. Run it in the background, niced, from the repository root::

    nohup nice -n 10 .venv/bin/python studies/qwen_strict_run.py --data DATA > outputs/qwen_strict.log 2>&1 &

``DATA`` is a folder with GSM8K's train.jsonl and test.jsonl (openai/grade-school-math). The commands are written
with paths relative to the repository root, so the log names no machine's folders but DATA's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RECIPE = Path("recipes/cpu/qwen_gdpo_strict/config.yaml")
FOLDER = Path("outputs/qwen_strict")
RUN = FOLDER / "gdpo-strict-seed0"
EVALUATION = FOLDER / "eval-gdpo-strict-seed0"
THREADS = 1  # the thread count changes sampled completions; H9 ran every command with one
SEED, STEPS, SAVE_STEPS, DTYPE = 0, 10, 2, "float32"
EVAL = ["--limit", "200", "--max_new_tokens", "400", "--batch_size", "50", "--dtype", DTYPE]


def gdpo() -> str:
    """This environment's ``gdpo`` console script, relative to the repository root where it lies inside it."""
    script = Path(sys.executable).with_name("gdpo")
    try:
        return str(script.relative_to(ROOT))
    except ValueError:
        return str(script)


def train_command(data: Path) -> list[str]:
    resume = ["--resume_from_checkpoint", "true"] if any((ROOT / RUN).glob("checkpoint-*")) else []
    resume = resume or (["--overwrite_output_dir", "true"] if (ROOT / RUN).exists() else [])
    return [gdpo(), "train", "--config", str(RECIPE), "--dataset_name", str(data / "train.jsonl"), "--seed", str(SEED),
            "--max_steps", str(STEPS), "--save_steps", str(SAVE_STEPS), "--save_total_limit", "1",
            "--cpu_dtype", DTYPE, "--output_dir", str(RUN), *resume]  # fmt: skip


def eval_command(data: Path) -> list[str]:
    prompt = yaml.safe_load((ROOT / RECIPE).read_text())["system_prompt"]
    return [gdpo(), "eval", "--model", str(RUN), "--dataset", str(data / "test.jsonl"), *EVAL,
            "--system_prompt", prompt, "--output_dir", str(EVALUATION)]  # fmt: skip


def run_logged(command: list[str], log: Path) -> None:
    with log.open("a") as handle:
        handle.write(f"\n{time.strftime('%Y-%m-%d %H:%M:%S')}\n$ {' '.join(command)}\n")
        handle.flush()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": str(THREADS)}
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"failed (exit {done.returncode}): {command[1]}; see {log}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with GSM8K's train.jsonl and test.jsonl")
    args = parser.parse_args(argv)
    (ROOT / FOLDER).mkdir(parents=True, exist_ok=True)
    log = ROOT / FOLDER / "run.log"
    if not (ROOT / RUN / "trainer_state.json").is_file():
        print(f"{time.strftime('%H:%M:%S')} train", flush=True)
        run_logged(train_command(args.data), log)
    if not (ROOT / EVALUATION / "summary.json").is_file():
        print(f"{time.strftime('%H:%M:%S')} evaluate", flush=True)
        run_logged(eval_command(args.data), log)
    print(f"{time.strftime('%H:%M:%S')} done", flush=True)


if __name__ == "__main__":
    main()
