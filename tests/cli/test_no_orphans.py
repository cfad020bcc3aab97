"""No orphans: when the top ``gdpo train`` process of a 2-process run is SIGKILLed, accelerate's workers
(each in its own session, so no signal to the top process or its group reaches them) stop within seconds and the
run's lock is free again; Ctrl-C prints one line for the run."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gdpo_trl.cli import orphans
from gdpo_trl.run.run_lock import LOCK_NAME

ROOT = Path(__file__).resolve().parents[2]
RECIPE = str(ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml")
WORKERS_GONE_WITHIN_S = 10.0


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_two_process_run(out: Path) -> tuple[subprocess.Popen, list[int]]:
    """A long 2-process run of builtin:tiny; returns the top process and its two workers, once both are training."""
    command = [sys.executable, "-m", "gdpo_trl.cli.main", "train", "--config", RECIPE, "--num_processes", "2",
               "--model_name_or_path", "builtin:tiny", "--max_steps", "500", "--save_strategy", "no",
               "--output_dir", str(out)]  # fmt: skip
    top = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        workers = children(top.pid)
        if len(workers) == 2 and (out / LOCK_NAME).exists():
            return top, workers
        assert top.poll() is None, top.communicate()[1][-3000:]
        time.sleep(0.5)
    top.kill()
    raise AssertionError("the two workers did not start within 240 s")


def lock_is_free(out: Path) -> bool:
    if not (out / LOCK_NAME).exists():  # a run that ends cleanly removes it
        return True
    with open(out / LOCK_NAME, "a") as file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)
        return True


@pytest.mark.slow  # two processes loading torch and TRL: ~30 s on the shared 2-core machine
def test_sigkill_of_the_top_process_stops_its_workers(tmp_path):
    out = tmp_path / "out"
    top, workers = start_two_process_run(out)
    assert not lock_is_free(out)
    os.kill(top.pid, signal.SIGKILL)  # no handler runs: only the workers themselves can notice
    killed = time.monotonic()
    top.wait()
    while any(alive(pid) for pid in workers) and time.monotonic() - killed < 30:
        time.sleep(0.1)
    took = time.monotonic() - killed
    print(f"workers gone {took:.1f} s after SIGKILL of the top process")
    survivors = [pid for pid in workers if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors and took < WORKERS_GONE_WITHIN_S, f"{survivors} alive {took:.1f} s after the kill"
    # Whatever held the run's lock is gone too, within the same time (a loaded machine reaps the last one later).
    while not lock_is_free(out) and time.monotonic() - killed < WORKERS_GONE_WITHIN_S:
        time.sleep(0.1)
    assert lock_is_free(out), f"the run's lock is still held {time.monotonic() - killed:.1f} s after the kill"


def test_a_process_started_by_hand_follows_no_launcher(monkeypatch):
    monkeypatch.delenv(orphans.LAUNCHER_ENV, raising=False)
    assert orphans.follow_launcher() is False


def test_a_vanished_launcher_is_seen(monkeypatch):
    assert orphans.launcher_alive(os.getpid())
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not orphans.launcher_alive(dead.pid)


@pytest.mark.slow  # as above
def test_ctrl_c_on_two_processes_prints_one_line(tmp_path):
    out = tmp_path / "out"
    top, workers = start_two_process_run(out)
    time.sleep(3)  # the workers are past their imports: a Ctrl-C there used to print each rank's traceback
    os.killpg(top.pid, signal.SIGINT)  # what a terminal does: the foreground group, the workers being elsewhere
    _, err = top.communicate(timeout=60)
    err = err.decode()
    print(err[-2000:])
    assert top.returncode == orphans.INTERRUPTED, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.count("stopped by SIGINT") == 1, err[-3000:]
    assert "No checkpoint was written yet, so there is nothing to resume." in err
    assert not any(alive(pid) for pid in workers)
    assert lock_is_free(out)
