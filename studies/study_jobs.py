"""Running a seed study's jobs in the background, resumably: the part of a study runner that is not its design.

A study (studies/qwen_runner.py) is a list of jobs, each "train one (arm, seed) unless trained, then evaluate it unless
evaluated", run in a fixed order so a study cut short stays balanced across arms. Each job's commands and output go
to ``<job>.log`` beside it; a failed command stops that job with the log's name (run the study again to retry: a run
resumes from its newest checkpoint). Every command gets the same torch thread count (``OMP_NUM_THREADS``), because
the thread count changes sampled completions (study H8's seed 0), and the Hub is switched off.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def tool(name: str) -> str:
    """A console script of this Python's environment (``gdpo``), so a study runs the package it was started with."""
    return str(Path(sys.executable).with_name(name))


def run_logged(command: list[str], log: Path, threads: int, cwd: Path) -> None:
    """Run ``command`` with its output appended to ``log`` and ``threads`` torch threads; a failure raises naming the
    command and the log."""
    with log.open("a") as handle:
        handle.write(f"\n$ {' '.join(command)}\n")
        handle.flush()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if done.returncode:
        raise RuntimeError(f"failed (exit {done.returncode}): {' '.join(command)}; see {log}")


def stamp(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", flush=True)


def run_jobs(jobs: Iterable[tuple], run_job: Callable[..., None], workers: int) -> None:
    """``run_job(*job)`` for every job, ``workers`` at a time, in the order given (the pool takes jobs in submission
    order); every failure is reported at the end, one line each, and the exit status says so."""
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(run_job, *job) for job in jobs]
    failed = [str(future.exception()) for future in futures if future.exception()]
    if failed:
        raise SystemExit("\n".join(failed))
