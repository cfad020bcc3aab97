"""Study H8 (``smollm2_gdpo_grpo``): GDPO against GRPO and an SFT control on SmolLM2 from the shipped format start,
run as pre-registered in docs/results/README.md; resumable, so it can go on across sessions.

Each (seed, arm) is one job: train (GDPO and GRPO through ``gdpo train`` with the SmolLM2 recipes, checkpoints every
2 steps and resumed from the newest; the control through ``python -m gdpo_trl.tasks.smollm2_sft --control``), then
``gdpo eval`` greedy on the first 200 GSM8K test problems. Jobs go seed-major (seed 0's three arms, then seed 1's),
so a study cut short stays balanced across arms; a finished job is never run again. The format start itself is
evaluated once, first. Run it in the background, niced, and run it again after a stop to go on::

    nohup nice -n 10 python scripts/smollm2_study.py run --data DATA > outputs/smollm2_gdpo_grpo.log 2>&1 &
    python scripts/smollm2_study.py status
"""

from __future__ import annotations

import argparse
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
            "--save_steps", "2", "--output_dir", str(out), *resume]  # fmt: skip


def trained(arm: str, out: Path) -> bool:
    return (out / "build.json").is_file() if arm == "sft" else (out / "trainer_state.json").is_file()


def run_logged(command: list[str], log: Path) -> None:
    """Run ``command`` with its output appended to ``log``; a failure stops the study (run it again to retry)."""
    with log.open("a") as handle:
        handle.write(f"\n$ {' '.join(command)}\n")
        handle.flush()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"failed (exit {done.returncode}): {' '.join(command)}; see {log}")


def evaluate(model: str, data: Path, out: Path, log: Path) -> None:
    if not (out / "summary.json").is_file():
        run_logged([tool("gdpo"), "eval", "--model", model, "--dataset", str(data / "test.jsonl"), *EVAL,
                    "--output_dir", str(out)], log)  # fmt: skip


def evaluation(run: Path) -> Path:
    """Where a run's evaluation goes: beside the run (gdpo eval writes nothing inside a run's folder)."""
    return run.with_name(f"eval-{run.name}")


def jobs(root: Path):
    yield "start", None, root / "eval-start"
    for seed in SEEDS:
        for arm in ARMS:
            yield arm, seed, root / f"{arm}-seed{seed}"  # its evaluation: root / eval-{arm}-seed{seed}


def run(args) -> None:
    root, data = Path(args.out), Path(args.data)
    root.mkdir(parents=True, exist_ok=True)
    log = root / "study.log"
    for arm, seed, out in jobs(root):
        started = time.monotonic()
        if arm == "start":
            evaluate(START, data, out, log)
            print(f"{time.strftime('%H:%M:%S')} start evaluated ({time.monotonic() - started:.0f} s)", flush=True)
            continue
        if not trained(arm, out):
            print(f"{time.strftime('%H:%M:%S')} train {arm} seed {seed}", flush=True)
            run_logged(train_command(arm, seed, data, out), log)
        print(f"{time.strftime('%H:%M:%S')} eval {arm} seed {seed}", flush=True)
        evaluate(str(out), data, evaluation(out), log)
        print(f"{time.strftime('%H:%M:%S')} done {arm} seed {seed} ({time.monotonic() - started:.0f} s)", flush=True)


def status(args) -> None:
    """One line per job: trained, evaluated (no outcome is shown before the study ends: the stopping rule)."""
    root = Path(args.out)
    for arm, seed, out in jobs(root):
        done_eval = ((out if arm == "start" else evaluation(out)) / "summary.json").is_file()
        done_train = arm == "start" or trained(arm, out)
        checkpoints = sorted(p.name for p in out.glob("checkpoint-*"))
        print(f"{arm:6} seed {seed!s:4} trained {done_train!s:5} evaluated {done_eval!s:5} {' '.join(checkpoints)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "status"])
    parser.add_argument("--data", help="the GSM8K folder (train.jsonl, test.jsonl), for run")
    parser.add_argument("--out", default=str(ROOT / "outputs" / STUDY), help=f"default: outputs/{STUDY}")
    args = parser.parse_args()
    if args.command == "run" and not args.data:
        parser.error("run needs --data (the GSM8K folder)")
    (run if args.command == "run" else status)(args)


if __name__ == "__main__":
    main()
