"""Study H9's runner (studies/qwen_runner.py) refuses what would lose a job's files: ``restore`` while the study runs
or while a job is partly done, and ``status`` on a folder that is not the study's, one line each. Row ids are the
sweep's case ids."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from studies import qwen_runner, smollm2_runner
from studies.study_jobs import runner_lock

ROOT = Path(__file__).resolve().parents[2]


def kept_study(docs: Path) -> Path:
    """What ``keep`` committed of a study whose gdpo-seed0 job finished."""
    kept = docs / qwen_runner.STUDY
    (kept / "eval-gdpo-seed0").mkdir(parents=True)
    (kept / "eval-gdpo-seed0" / "summary.json").write_text('{"metrics": {}}\n')
    import gzip

    (kept / "eval-gdpo-seed0" / "completions.jsonl.gz").write_bytes(gzip.compress(b'{"index": 0}\n', mtime=0))
    (kept / "gdpo-seed0").mkdir()
    (kept / "gdpo-seed0" / "trainer_state.json").write_text(json.dumps({"log_history": [{"step": 10}]}))
    (kept / "gdpo-seed0.log.gz").write_bytes(gzip.compress(b"$ gdpo train (kept)\n", mtime=0))
    return kept


def files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def args(root: Path, docs: Path):
    return type("Args", (), {"out": str(root), "docs": str(docs)})


def test_c_qs_restore_over_running_partly_done(tmp_path):
    """Before (the case LOST): restore into a study whose gdpo-seed0 was training copied the kept trainer_state.json
    over the running job's and replaced its log, whose commands and progress were lost."""
    root, docs = tmp_path / "study", tmp_path / "docs"
    kept_study(docs)
    (root / "gdpo-seed0" / "checkpoint-4").mkdir(parents=True)
    (root / "gdpo-seed0" / "trainer_state.json").write_text('{"log_history": [{"step": 4}]}')
    (root / "gdpo-seed0.log").write_text("$ gdpo train (running)\n 40%| 4/10\n")
    before = files(root)
    with pytest.raises(SystemExit) as stop:
        qwen_runner.restore(args(root, docs))
    assert str(stop.value) == (
        f"error: restore: gdpo-seed0 is partly done in {root} (gdpo-seed0, gdpo-seed0.log); restore goes into a new "
        "study folder (--out), or finish that job with run first"
    )
    assert files(root) == before


def test_c_qs_restore_over_running(tmp_path):
    """A study whose runner is running (it holds the study's lock) is refused, naming the runner, even where no job
    has written yet."""
    root, docs = tmp_path / "study", tmp_path / "docs"
    kept_study(docs)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from studies.study_jobs import runner_lock\n"
         "with runner_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)", str(root)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(SystemExit) as stop:
            qwen_runner.restore(args(root, docs))
        assert str(stop.value) == (
            f"error: restore: {root} is being run now (pid {holder.pid}): stop the runner first, then restore"
        )
        with pytest.raises(SystemExit, match=rf"is being run already \(pid {holder.pid}\): one runner per study"):
            with runner_lock(root):
                pass
    finally:
        holder.kill()
        holder.wait()
    assert not (root / "gdpo-seed0").exists()
    qwen_runner.restore(args(root, docs))  # the runner gone: restored
    assert (root / "gdpo-seed0.log").read_text() == "$ gdpo train (kept)\n"
    assert qwen_runner.finished("gdpo", root / "gdpo-seed0")


def test_restore_never_overwrites_a_file(tmp_path):
    from studies.qwen_runner import write_new

    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(FileExistsError):
        write_new(tmp_path / "summary.json", b"kept")
    assert (tmp_path / "summary.json").read_text() == "{}"


@pytest.mark.parametrize("runner", [qwen_runner, smollm2_runner], ids=["qwen_runner", "smollm2_runner"])
@pytest.mark.parametrize(
    ("make", "words"),
    [(lambda p: None, "no such folder; give the folder `run` wrote to"),
     (lambda p: p.write_text("x"), "a file, not a study folder")],
    ids=["c_qs_status_missing", "c_qs_status_file"],
)  # fmt: skip
def test_status_on_a_folder_that_is_not_the_study_s(tmp_path, runner, make, words):
    """Before: a missing folder (a typo) listed every job as not started; a file, the same."""
    out = tmp_path / "outputs" / "qwen_gdpo_grop"
    out.parent.mkdir()
    make(out)
    with pytest.raises(SystemExit) as stop:
        runner.status(type("Args", (), {"out": str(out)}))
    assert str(stop.value) == f"error: status --out {out}: {words}" + (
        " (its default: the study's folder under outputs/)" if "no such" in words else " (the folder `run` writes to)"
    )


def test_status_as_a_command_is_one_line(tmp_path):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "studies.qwen_runner", "status", "--out", str(tmp_path / "nope")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: status --out {tmp_path / 'nope'}: no such folder")
    assert time.monotonic() - started < 30
