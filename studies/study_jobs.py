"""Running a seed study's jobs in the background, resumably: the part of a study runner that is not its design.

A study (studies/qwen_runner.py) is a list of jobs, each "train one (arm, seed) unless trained, then evaluate it unless
evaluated", run in a fixed order so a study cut short stays balanced across arms. Each job's commands and output go
to ``<job>.log`` beside it; a failed command stops that job with the log's name (run the study again to retry: a run
resumes from its newest checkpoint). Every command gets the same torch thread count (``OMP_NUM_THREADS``), because
the thread count changes sampled completions (study H8's seed 0), and the Hub is switched off.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RUNNER_LOCK = ".runner.lock"  # inside a study folder: held by its runner's `run` while it runs


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


def check_study_folder(out: Path, command: str) -> None:
    """Refuse, in one line, a ``--out`` that is not a study folder: missing (a typo would show every job as not
    started) or a file."""
    if out.is_file():
        raise SystemExit(f"error: {command} --out {out}: a file, not a study folder (the folder `run` writes to)")
    if not out.is_dir():
        raise SystemExit(
            f"error: {command} --out {out}: no such folder; give the folder `run` wrote to (its default: the "
            "study's folder under outputs/)"
        )


@contextlib.contextmanager
def runner_lock(root: Path):
    """Hold ``root``'s runner lock while the block runs (its pid written in it), so that ``restore`` can tell a study
    that is running. Without ``fcntl`` nothing is held."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    with open(root / RUNNER_LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise SystemExit(f"error: {root} is being run already ({holder}): one runner per study") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def running_holder(root: Path) -> str | None:
    """Who runs the study in ``root`` now ("pid N"), or None when no runner holds its lock."""
    try:
        import fcntl
    except ImportError:
        return None
    lock = root / RUNNER_LOCK
    if not lock.is_file():
        return None
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            return handle.read().strip() or "another process"
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None
