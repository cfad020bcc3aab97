"""One run per output_dir (gdpo_trl/run/run_lock.py): the lock is held by real processes, one that keeps it, one
killed with SIGKILL, and one whose forked child outlives it; a refusal is one ``gdpo train: error:`` line that leaves
the folder as it was, and a finished run leaves no lock file behind."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.run.run_lock import LOCK_NAME, hold_output_dir, lock_output_dir, releases_run_locks
from tests.helpers.bad_inputs import check_train_rejects, earlier_run, snapshot

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, text=True, **kwargs)


@pytest.fixture
def holder(tmp_path):
    """A process holding the lock on ``tmp_path/out``, as a training run would; yields it, kills it after."""
    process = python(
        f"""
        import time
        from gdpo_trl.run.run_lock import lock_output_dir
        lock_output_dir({str(tmp_path / "out")!r})
        print("locked", flush=True)
        time.sleep(120)
        """,
        stdout=subprocess.PIPE,
    )
    assert process.stdout.readline().strip() == "locked"
    yield process
    process.kill()
    process.wait()


# --- the lock ------------------------------------------------------------------------------------------


def test_second_run_into_a_locked_output_dir_is_refused_naming_the_holder(tmp_path, capsys, monkeypatch, holder):
    err = check_train_rejects(tmp_path, capsys, monkeypatch, {}, [], None, ["in use by another gdpo train run"])
    line = err.strip().splitlines()[-1]
    assert str(tmp_path / "out") in line and f"pid {holder.pid}" in line


def test_a_killed_run_leaves_no_stuck_lock(tmp_path, holder):
    with pytest.raises(InputError, match=f"pid {holder.pid}"):
        lock_output_dir(tmp_path / "out")
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (tmp_path / "out" / LOCK_NAME).is_file()  # the stale file stays; the OS dropped the lock itself
    with lock_output_dir(tmp_path / "out") as lock:
        assert f"pid={os.getpid()}" in lock.path.read_text()
    assert list((tmp_path / "out").iterdir()) == []  # released: the stale file is gone too


def test_a_forked_child_does_not_keep_a_dead_runs_lock(tmp_path):
    """A data-loader worker forked by a run that is then killed must not keep the folder locked."""
    out = tmp_path / "out"
    parent = python(
        f"""
        import os, time
        from gdpo_trl.run.run_lock import lock_output_dir
        lock_output_dir({str(out)!r})
        if os.fork() == 0:
            # Printed once fork has returned here, so after the fork hooks ran: the test never races the child's start.
            print(os.getpid(), flush=True)
            time.sleep(120)  # the child outlives its parent
            os._exit(0)
        os._exit(1)  # dies without releasing, as if killed
        """,
        stdout=subprocess.PIPE,
    )
    child = int(parent.stdout.readline())
    parent.wait()
    try:
        os.kill(child, 0)  # still alive, holding a copy of the parent's descriptors
        lock_output_dir(out).release()
    finally:
        os.kill(child, signal.SIGKILL)


def test_only_the_process_that_writes_takes_the_lock(tmp_path):
    args = SimpleNamespace(output_dir=str(tmp_path / "a"), process_index=1, local_process_index=1)
    assert hold_output_dir(args) is None and not (tmp_path / "a").exists()
    per_node = SimpleNamespace(
        output_dir=str(tmp_path / "b"), process_index=3, local_process_index=0, save_on_each_node=True
    )

    @releases_run_locks
    def main():
        lock = hold_output_dir(per_node)
        assert lock is not None and (tmp_path / "b" / LOCK_NAME).is_file()
        assert hold_output_dir(per_node) is lock  # taken twice in one process: the same lock

    main()
    assert not (tmp_path / "b").exists()  # released when main returned


def test_lock_is_released_when_main_fails_and_an_earlier_run_is_untouched(tmp_path):
    earlier_run(tmp_path / "out", "checkpoints")
    before = snapshot(tmp_path / "out")

    @releases_run_locks
    def main():
        hold_output_dir(SimpleNamespace(output_dir=str(tmp_path / "out"), process_index=0))
        raise InputError("bad data")

    with pytest.raises(InputError):
        main()
    assert snapshot(tmp_path / "out") == before
    lock_output_dir(tmp_path / "out").release()  # free again


def test_a_finished_run_leaves_no_lock_file(tmp_path, capsys):
    """End to end: one training step of the tiny model; the lock is gone from the saved run afterwards."""
    import yaml

    from gdpo_trl.cli.train import main as train_main
    from tests.helpers.bad_inputs import BASE_RECIPE

    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(BASE_RECIPE))
    train_main(["--config", str(config), "--output_dir", str(tmp_path / "out")])
    assert (tmp_path / "out" / "model.safetensors").is_file()
    assert not (tmp_path / "out" / LOCK_NAME).exists()
