"""Seconds to the first error: how long ``gdpo train`` takes to answer an argument mistake, against the import of
torch and TRL it answers before.

Not a test (timings depend on the machine and its load): run ``python scripts/benchmark_first_error.py [--runs 3]``.
Each run is a fresh process in an empty temporary folder: ``python -c "import torch, trl"`` for the reference, then
``gdpo train`` (the console script next to this Python, else ``python -m gdpo_trl.cli.main``) with each mistake
below. The script checks that each mistake ended with exit status 2 and one error line holding the expected words,
and prints each one's median wall time, its ratio to the import's median (the goal: at most 0.1) and the machine's
load average before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECIPE = ["--config", "cpu/gdpo"]
# (label, arguments after `gdpo train`, words the error line holds)
MISTAKES = [
    ("missing recipe", ["--config", "missing.yaml"], "missing.yaml"),
    ("misspelt flag", [*RECIPE, "--max_step", "2"], "did you mean max_steps"),
    ("value of the wrong type", [*RECIPE, "--max_steps", "two"], "invalid int value"),
    ("misspelt reward", [*RECIPE, "--reward_funcs", "format", "corectness"], "did you mean correctness"),
    ("split of a generated source", [*RECIPE, "--dataset_train_split", "test"], "dataset_train_split 'test'"),
    ("negative learning rate", [*RECIPE, "--learning_rate", "-1e-3"], "learning_rate=-0.001"),
    ("one weight short", [*RECIPE, "--reward_weights", "1", "2"], "2 weights for 3 reward functions"),
    ("bf16 on a CPU-only machine", [*RECIPE, "--use_cpu", "false", "--bf16", "true"], "bf16: true needs a GPU"),
    ("batch over 3 processes", [*RECIPE, "--num_processes", "3", "--per_device_train_batch_size", "4"], "3 processes"),
    ("one generation per prompt", [*RECIPE, "--num_generations", "1"], "num_generations=1"),
]
IMPORT = [sys.executable, "-c", "import torch, trl"]


def gdpo_command() -> list[str]:
    """The installed ``gdpo`` console script (what a user types), else the module it runs."""
    script = Path(sys.executable).parent / "gdpo"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gdpo_trl.cli.main"]


def timed(command: list[str], folder: str, words: str | None = None) -> float:
    """Wall seconds of one fresh ``command``; with ``words``, it must end in exit status 2 and one error line."""
    start = time.perf_counter()
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if words is None:
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
        return seconds
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    if result.returncode != 2 or len(errors) != 1 or words not in errors[0]:
        raise SystemExit(
            f"unexpected result of {' '.join(command)} (exit {result.returncode}):\n{result.stderr[-2000:]}"
        )
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per command (default: 3)")
    args = parser.parse_args(argv)
    gdpo = [*gdpo_command(), "train"]
    load_before = os.getloadavg()
    folder = tempfile.mkdtemp(prefix="gdpo-first-error-")
    try:
        timed(IMPORT, folder)  # a first import warms the disk cache, as a user's second command would find it
        reference = statistics.median(timed(IMPORT, folder) for _ in range(args.runs))
        rows = []
        for label, mistake, words in MISTAKES:
            seconds = statistics.median(timed([*gdpo, *mistake], folder, words) for _ in range(args.runs))
            rows.append((label, " ".join(mistake), seconds))
    finally:
        shutil.rmtree(folder)
    print(f"import torch, trl: {reference:.2f} s (median of {args.runs} fresh processes)")
    print(f"{'mistake':<28} {'seconds':>7} {'ratio':>6}  command (gdpo train ...)")
    for label, command, seconds in rows:
        ratio = seconds / reference
        print(f"{label:<28} {seconds:>7.2f} {ratio:>6.3f}{' ' if ratio <= 0.1 else '!'} {command}")
    worst = max(seconds for _, _, seconds in rows) / reference
    print(f"worst ratio: {worst:.3f} (goal: at most 0.1; '!' marks a mistake above it)")
    for when, load in (("before", load_before), ("after", os.getloadavg())):
        print(f"load average {when} (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in load))


if __name__ == "__main__":
    main()
