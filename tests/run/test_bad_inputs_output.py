"""Nothing a user makes is lost: the resume and overwrite guards, and an unusable destination (the output folder's
lock: test_run_lock.py).

Each refusal is checked as ``gdpo train`` reports it (exit status 2, one ``gdpo train: error:`` line naming the
culprit, no traceback) and leaves ``output_dir`` and any earlier run in it byte for byte as it was
(:func:`tests.helpers.bad_inputs.check_train_rejects`).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import gdpo_trl.run.output_checks as output_checks
from gdpo_trl.core.errors import InputError
from gdpo_trl.run.output_checks import check_free_space, check_overwrite_keeps_inputs
from tests.helpers.bad_inputs import assert_one_line_error, check_train_rejects, earlier_run
from tests.helpers.checkpoints import make_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, text=True, **kwargs)


# --- resume and overwrite ----------------------------------------------------------------------------------------------


def test_resume_from_elsewhere_into_a_folder_holding_another_run_is_refused(tmp_path, capsys, monkeypatch):
    earlier_run(tmp_path / "out", "model")  # a finished run
    other = make_checkpoint(tmp_path / "other", 2)
    words = ["already holds another run", "model.safetensors", str(other), str(tmp_path / "other")]
    check_train_rejects(tmp_path, capsys, monkeypatch, {}, ["--resume_from_checkpoint", str(other)], None, words)


def test_overwrite_and_resume_together_are_refused(tmp_path, capsys, monkeypatch):
    earlier_run(tmp_path / "out", "checkpoints")
    flags = ["--resume_from_checkpoint", "true", "--overwrite_output_dir", "true"]
    check_train_rejects(tmp_path, capsys, monkeypatch, {}, flags, None, ["contradict", "checkpoint-4", "Drop one"])


@pytest.mark.parametrize("where", ["{out}", "{out}/checkpoint-4"])
def test_overwrite_never_deletes_the_model_it_trains(tmp_path, capsys, monkeypatch, where):
    out = tmp_path / "out"
    earlier_run(out, "checkpoints")
    (out / "config.json").write_text("{}")  # the final model of that run
    shutil.copy(out / "checkpoint-4" / "model.safetensors", out / "model.safetensors")
    for folder in (out, out / "checkpoint-4"):  # a run saves its tokenizer beside each model
        (folder / "tokenizer_config.json").write_text("{}")
    model = where.replace("{out}", str(out))
    flags = ["--overwrite_output_dir", "true"]
    words = ["--overwrite_output_dir true would delete", f"model_name_or_path {model!r}"]
    check_train_rejects(tmp_path, capsys, monkeypatch, {"model_name_or_path": model}, flags, None, words)


def test_overwrite_never_deletes_the_data_it_reads(tmp_path):
    out = tmp_path / "out"
    checkpoint = make_checkpoint(out, 4)
    (checkpoint / "rows.jsonl").write_text("{}\n")
    inputs = {"dataset_path": str(checkpoint / "rows.jsonl"), "model_name_or_path": "builtin:tiny"}
    with pytest.raises(InputError, match="dataset_path"):
        check_overwrite_keeps_inputs(str(out), True, None, inputs)
    (out / "notes.jsonl").write_text("{}\n")  # beside the run, not deleted by an overwrite: fine
    check_overwrite_keeps_inputs(str(out), True, None, {"dataset_name": str(out / "notes.jsonl")})


# --- a destination that cannot take the run -----------------------------------------------------------------------------


def test_output_dir_that_is_a_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "out").write_text("my notes")
    check_train_rejects(tmp_path, capsys, monkeypatch, {}, [], None, ["'" + str(tmp_path / "out"), "is a file"])
    assert (tmp_path / "out").read_text() == "my notes"


def test_empty_output_dir(tmp_path, capsys, monkeypatch):
    flags = ["--output_dir", ""]
    check_train_rejects(
        tmp_path, capsys, monkeypatch, {}, flags, None, ["output_dir is empty", "--output_dir outputs/"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recipe.yaml"]


def test_output_dir_under_a_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "notes").write_text("x")
    flags = ["--output_dir", str(tmp_path / "notes" / "run")]
    check_train_rejects(tmp_path, capsys, monkeypatch, {}, flags, None, ["cannot be created", "is a file"])


def test_read_only_output_dir(tmp_path, capsys, monkeypatch):
    (tmp_path / "out").mkdir()
    monkeypatch.setattr(output_checks, "can_write", lambda folder: False)
    check_train_rejects(tmp_path, capsys, monkeypatch, {}, [], None, ["is not writable", "permissions"])


def test_read_only_folder_is_found_for_real():
    """As an unprivileged user (root writes anywhere), a real read-only folder fails the real probe."""
    base = Path(tempfile.mkdtemp(prefix="gdpo-readonly-", dir="/tmp"))
    try:
        base.chmod(0o755)
        (base / "locked").mkdir()
        (base / "locked").chmod(0o555)
        (base / "open").mkdir()
        (base / "open").chmod(0o777)
        child = python(
            f"""
            import os
            from gdpo_trl.run.output_checks import check_output_dir_writable  # imported before giving up root
            os.setgid(65534); os.setuid(65534)
            for target in ("locked", "locked/new/run", "open/run"):
                try:
                    check_output_dir_writable(os.path.join({str(base)!r}, target))
                    print("accepted", target)
                except ValueError as error:
                    print("refused", error)
            """,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = child.communicate(timeout=120)
        if child.returncode != 0 and "Operation not permitted" in err:
            pytest.skip("cannot switch to an unprivileged user here")
        assert child.returncode == 0, err
        assert out.count("refused") == 2 and "accepted open/run" in out, out
        assert "is not writable" in out and "would be created in" in out, out
        assert sorted(p.name for p in base.rglob("*")) == ["locked", "open"]  # the probes left nothing
    finally:
        shutil.rmtree(base)


def test_disk_without_room_is_found_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(output_checks.shutil, "disk_usage", lambda path: SimpleNamespace(free=500_000))
    check_train_rejects(tmp_path, capsys, monkeypatch, {}, [], None, ["500.0 KB free", "1.0 MB", "free some space"])


def test_disk_room_is_sized_to_the_resolved_model(tmp_path, capsys, monkeypatch):
    """A fixed 64 MiB refused a run (and its resume) that needed about 12 MB. A builtin: model's size is
    known once it is resolved (builtin:warmstart: 624 kB of weights, so 1.2 MB at least), before it is loaded."""
    monkeypatch.setattr(output_checks.shutil, "disk_usage", lambda path: SimpleNamespace(free=1_100_000))
    words = ["1.1 MB free", "less than the 1.2 MB", "2 x the model's 623.9 KB of weights"]
    check_train_rejects(tmp_path, capsys, monkeypatch, {"model_name_or_path": "builtin:warmstart"}, [], None, words)


def test_disk_room_is_measured_against_the_models_size(tmp_path, monkeypatch):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"\0" * 3_000_000)
    monkeypatch.setattr(output_checks.shutil, "disk_usage", lambda path: SimpleNamespace(free=5_000_000))
    with pytest.raises(InputError, match=r"less than the 6.0 MB .*2 x the model's 3.0 MB"):
        check_free_space(str(tmp_path / "out"), str(model))
    monkeypatch.setattr(output_checks.shutil, "disk_usage", lambda path: SimpleNamespace(free=7_000_000))
    check_free_space(str(tmp_path / "out"), str(model))


@pytest.mark.parametrize(
    "error",
    [
        OSError(28, "No space left on device"),  # what json, shutil and os writes raise
        RuntimeError(
            "[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing file data/0: "
            "file write failed"
        ),  # what torch.save raises
    ],  # fmt: skip
    ids=["oserror", "torch_save"],
)
def test_a_disk_that_fills_during_a_save_leaves_the_newest_whole_checkpoint(tmp_path, capsys, monkeypatch, error):
    """Checkpoint-1 saves; checkpoint-2's optimizer.pt meets a full disk. One line names checkpoint-1, which resumes."""
    import yaml
    from transformers import Trainer

    from gdpo_trl.cli.train import main as train_main
    from gdpo_trl.run.checkpoints import checkpoint_problems
    from tests.helpers.bad_inputs import BASE_RECIPE, run_cli

    save = Trainer._save_optimizer_and_scheduler

    def fills_at_step_2(self, output_dir):
        if self.state.global_step == 2:
            raise error
        save(self, output_dir)

    monkeypatch.setattr(Trainer, "_save_optimizer_and_scheduler", fills_at_step_2)
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    out = tmp_path / "out"
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**BASE_RECIPE, "max_steps": 2, "save_strategy": "steps", "save_steps": 1}))
    code, err = run_cli(train_main, ["--config", str(config), "--output_dir", str(out)], capsys)
    assert code == 2
    reason = "No space left on device" if isinstance(error, OSError) else "PytorchStreamWriter failed"
    words = [f"the disk filled while saving into {str(out)!r}", reason, "free some space",
             "checkpoint-1 is the newest whole checkpoint", "--resume_from_checkpoint true"]  # fmt: skip
    assert_one_line_error(err, "gdpo train", words)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("checkpoint") or ".partial" in p.name) == [
        "checkpoint-1"
    ]  # checkpoint-2 was cut while staged: removed, never named (gdpo_trl.trainer.safe_saves)
    assert checkpoint_problems(out / "checkpoint-1") == []
    assert not (out / "model.safetensors").exists()  # training stopped there
