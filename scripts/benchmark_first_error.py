"""Seconds to the first error: how long ``gdpo train --config missing.yaml`` takes to say the recipe is not there.

Not a test (timings depend on the machine and its load): run ``python scripts/benchmark_first_error.py [--runs 7]``.
Each run is a fresh ``gdpo`` process (the console script next to this Python, else ``python -m gdpo_trl.cli.main``)
in an empty temporary folder; the script checks that each ended with exit status 2 and one error line naming the
file, and prints every run's wall time, their median and the machine's load average.
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


def gdpo_command() -> list[str]:
    """The installed ``gdpo`` console script (what a user types), else the module it runs."""
    script = Path(sys.executable).parent / "gdpo"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gdpo_trl.cli.main"]


def time_first_error(command: list[str], folder: str) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    if result.returncode != 2 or len(errors) != 1 or "missing.yaml" not in errors[0]:
        raise SystemExit(f"unexpected result (exit {result.returncode}):\n{result.stderr[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh processes to time (default: 7)")
    args = parser.parse_args(argv)
    command = [*gdpo_command(), "train", "--config", "missing.yaml"]
    folder = tempfile.mkdtemp(prefix="gdpo-first-error-")
    try:
        seconds = [time_first_error(command, folder) for _ in range(args.runs)]
    finally:
        shutil.rmtree(folder)
    print(f"command: {' '.join(command)}")
    print("runs (s): " + " ".join(f"{s:.2f}" for s in seconds))
    print(f"seconds to the first error: {statistics.median(seconds):.2f} (median of {args.runs} runs)")
    print("load average (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
