"""Saves that cannot lie, on folders built by hand: the record names a damaged final model, a finished run
whose model was cut short is restored from its checkpoint or trains its last steps again, a run with nothing whole
is called unrecoverable (and only then is a deleting command given), and a resume with another process count is
named as such. The kills themselves are in tests/run/test_resume.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.run.checkpoints import resolve_resume_checkpoint
from gdpo_trl.storage.final_model import (
    PARTIAL_NAME,
    RECORD_NAME,
    final_model_problem,
    publish,
    settle_final_model,
)


def safetensors_bytes(values: int) -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [values], "data_offsets": [0, 4 * values]}}).encode()
    return len(header).to_bytes(8, "little") + header + b"\0" * (4 * values)


def final_model(folder: Path, values: int = 64) -> None:
    """``folder`` holding a final model saved the new way: written aside, published with its record."""
    staged = folder / PARTIAL_NAME
    staged.mkdir(parents=True)
    (staged / "model.safetensors").write_bytes(safetensors_bytes(values))
    (staged / "config.json").write_text("{}")
    publish(staged, folder)


def checkpoint(folder: Path, step: int, ranks: int = 1, values: int = 64) -> Path:
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(safetensors_bytes(values))
    (path / "config.json").write_text("{}")
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    for name in ("optimizer.pt", "scheduler.pt"):
        (path / name).write_bytes(b"")
    names = ["rng_state.pth"] if ranks == 1 else [f"rng_state_{r}.pth" for r in range(ranks)]
    for name in names:
        (path / name).write_bytes(b"")
    return path


def test_publish_leaves_nothing_partial_and_the_record_vouches_for_the_model(tmp_path):
    final_model(tmp_path)
    assert not (tmp_path / PARTIAL_NAME).exists()
    assert final_model_problem(tmp_path) is None
    record = json.loads((tmp_path / RECORD_NAME).read_text())["files"]
    assert record["model.safetensors"]["bytes"] == (tmp_path / "model.safetensors").stat().st_size


def test_a_cut_or_changed_final_model_is_named_against_the_record(tmp_path):
    final_model(tmp_path)
    weights = tmp_path / "model.safetensors"
    size = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[: size // 2])
    assert final_model_problem(tmp_path) == f"{weights} is {size // 2:,} bytes where the run saved {size:,}"
    weights.write_bytes(safetensors_bytes(64)[:-1] + b"\1")  # same size, other bytes
    assert final_model_problem(tmp_path) == f"{weights} differs from what the run saved (SHA-256)"


def test_a_run_saved_before_records_is_checked_by_its_header(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(64)[:100])
    assert "model.safetensors is truncated" in final_model_problem(tmp_path)


def test_a_finished_run_with_a_cut_model_is_restored_from_the_same_step(tmp_path, caplog):
    final_model(tmp_path)
    last = checkpoint(tmp_path, 6)
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 10)
    assert settle_final_model(tmp_path, last, 6, 6, main=True) == "restored"
    assert "restored the final model from" in caplog.text and "(the same step 6)" in caplog.text
    assert (tmp_path / "model.safetensors").read_bytes() == (last / "model.safetensors").read_bytes()
    assert final_model_problem(tmp_path) is None
    assert not (tmp_path / "optimizer.pt").exists()  # training state stays in the checkpoint


def test_a_cut_model_ahead_of_the_last_checkpoint_trains_the_last_steps_again(tmp_path, caplog):
    final_model(tmp_path)
    last = checkpoint(tmp_path, 4)
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 10)
    assert settle_final_model(tmp_path, last, 4, 6, main=True) == "retrain"
    assert "training steps 5-6 again from checkpoint-4" in caplog.text


def test_a_whole_final_model_without_checkpoint_is_kept_and_no_deletion_advised(tmp_path):
    final_model(tmp_path)
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 6}))
    with pytest.raises(InputError) as refused:
        resolve_resume_checkpoint(str(tmp_path), "true")
    line = str(refused.value)
    assert "its final model is whole; nothing was changed" in line and f"--model_name_or_path {tmp_path}" in line
    assert "overwrite_output_dir" not in line and "\n" not in line


def test_only_an_unrecoverable_run_gets_the_deleting_command_and_is_called_so(tmp_path):
    final_model(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 10)
    with pytest.raises(InputError) as refused:
        resolve_resume_checkpoint(str(tmp_path), "true")
    line = str(refused.value)
    assert f"{tmp_path}/model.safetensors is 10 bytes where the run saved" in line
    assert "the run cannot be recovered" in line and "--overwrite_output_dir true (this deletes it)" in line


@pytest.mark.parametrize("saved, now", [(1, 2), (2, 1)])
def test_resuming_with_another_process_count_is_named_as_such(tmp_path, saved, now):
    checkpoint(tmp_path, 6, ranks=saved)
    for resume in ("true", str(tmp_path / "checkpoint-6")):
        with pytest.raises(InputError) as refused:
            resolve_resume_checkpoint(str(tmp_path), resume, world_size=now)
        line = str(refused.value)
        plural = "es" if saved > 1 else ""
        assert f"was saved by a run on {saved} process{plural} and this run has {now}" in line
        assert f"Run it with --num_processes {saved}" in line
        assert "rng_state" not in line and "overwrite_output_dir" not in line and "\n" not in line


def test_resuming_a_one_process_run_on_two_is_refused_before_any_process_starts(tmp_path, capsys):
    """Before: every process loaded torch and TRL, then failed on rng_state_1.pth after 54 s, advising
    --overwrite_output_dir (which deletes the run)."""
    import time

    import yaml

    from gdpo_trl.cli.main import main as gdpo
    from tests.helpers.bad_inputs import BASE_RECIPE, assert_one_line_error, run_cli, snapshot

    out = tmp_path / "out"
    checkpoint(out, 6, ranks=1)
    before = snapshot(out)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(BASE_RECIPE))
    argv = ["train", "--config", str(recipe), "--output_dir", str(out), "--resume_from_checkpoint", "true"]
    start = time.monotonic()
    code, err = run_cli(gdpo, [*argv, "--num_processes", "2", "--main_process_port", "29731"], capsys)
    print(f"refused after {time.monotonic() - start:.1f} s")
    assert code == 2
    assert_one_line_error(err, "gdpo train", ["saved by a run on 1 process and this run has 2", "--num_processes 1"])
    assert "overwrite" not in err and snapshot(out) == before
