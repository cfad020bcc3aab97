"""What gdpo train's launcher prints when a process of a multi-process run fails (gdpo_trl.cli.run_records): the
cause once, from the records the processes left; the two-process runs are in tests/cli/test_gdpo_command.py."""

import json

import pytest

from gdpo_trl.cli import run_records
from gdpo_trl.cli.run_records import KILLED_BY_LAUNCHER, mark_saved, record_error, report_failure


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(run_records.RECORDS_ENV, str(tmp_path))
    return tmp_path


def as_rank(monkeypatch, rank: int) -> None:
    monkeypatch.setenv("RANK", str(rank))


def crash(message: str) -> RuntimeError:
    try:
        raise RuntimeError(message)
    except RuntimeError as error:
        return error


def test_the_earliest_handled_error_is_the_one_line(folder, monkeypatch):
    as_rank(monkeypatch, 1)
    assert record_error("gdpo train: error: Reward function 'r' raised KeyError on rank 1: 'gold'", 1)
    as_rank(monkeypatch, 0)
    record_error("gdpo train: error: RuntimeError: Connection closed by peer", 1, crash("Connection closed by peer"))
    lines, status = report_failure(folder, {0: 1, 1: 1})
    assert lines == ["gdpo train: error: Reward function 'r' raised KeyError on rank 1: 'gold'"] and status == 1


def test_a_process_error_is_recorded_once(folder, monkeypatch):
    as_rank(monkeypatch, 0)
    record_error("first", 2)
    record_error("second", 1)
    assert json.loads((folder / "rank0.json").read_text())["line"] == "first"


def test_a_rank_that_died_silently_is_named_before_the_crashes_it_caused(folder, monkeypatch):
    as_rank(monkeypatch, 0)
    record_error("gdpo train: error: RuntimeError: Connection closed by peer", 1, crash("Connection closed by peer"))
    lines, status = report_failure(folder, {0: 1, 1: -9})
    assert lines == [
        "gdpo train: error: rank 1 was killed by SIGKILL without an error message: something in it called os._exit, "
        "or it was killed (out of memory?); see its output above."
    ]
    assert status == 1


def test_a_rank_that_dies_after_everything_was_saved_does_not_fail_the_run(folder, monkeypatch):
    for rank in (0, 1):
        as_rank(monkeypatch, rank)
        mark_saved()
    lines, status = report_failure(folder, {0: KILLED_BY_LAUNCHER, 1: -6}, "outputs/run")
    assert lines == [
        "gdpo train: note: rank 1 was killed by SIGABRT while exiting, after the model and trainer state were saved "
        "to outputs/run; the run is complete."
    ]
    assert status == 0


def test_a_bug_prints_its_one_traceback(folder, monkeypatch):
    as_rank(monkeypatch, 1)
    record_error("gdpo train: error: RuntimeError: boom", 1, crash("boom"))
    lines, status = report_failure(folder, {0: KILLED_BY_LAUNCHER, 1: 1})
    assert lines[0].startswith("Traceback (most recent call last):") and lines[0].endswith("RuntimeError: boom")
    assert lines[1] == "gdpo train: error: RuntimeError: boom" and status == 1


def test_without_a_folder_nothing_is_recorded(tmp_path, monkeypatch):
    monkeypatch.delenv(run_records.RECORDS_ENV, raising=False)
    assert not record_error("line", 2)
    mark_saved()
    assert not list(tmp_path.iterdir())
