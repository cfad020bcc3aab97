"""Which checkpoint folders count as complete, which one a resume picks, and what --overwrite_output_dir deletes."""

import json
import logging
import shutil
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import save_file

from gdpo_trl.core.errors import InputError
from gdpo_trl.run.checkpoints import (
    checkpoint_problems,
    prepare_output_dir,
    prepare_run,
    resolve_resume_checkpoint,
    safetensors_problem,
)
from tests.helpers.checkpoints import make_checkpoint


def test_a_whole_checkpoint_has_no_problems(tmp_path):
    assert checkpoint_problems(make_checkpoint(tmp_path, 3)) == []


@pytest.mark.parametrize(
    ("skip", "truncate", "problem"),
    [
        (("model.safetensors",), (), "no model weights"),
        ((), ("model.safetensors",), "model.safetensors is truncated"),
        (("optimizer.pt",), (), "no optimizer.pt"),
        ((), ("optimizer.pt",), "optimizer.pt is truncated"),
        (("scheduler.pt",), (), "no scheduler.pt"),
        (("rng_state.pth",), (), "no rng_state.pth"),
        ((), ("rng_state.pth",), "rng_state.pth is truncated"),
        (("trainer_state.json",), (), "no trainer_state.json"),
        ((), ("trainer_state.json",), "trainer_state.json is truncated"),
    ],
)
def test_each_missing_or_truncated_file_is_named(tmp_path, skip, truncate, problem):
    problems = checkpoint_problems(make_checkpoint(tmp_path, 3, skip=skip, truncate=truncate))
    assert len(problems) == 1 and problems[0].startswith(problem)


@pytest.mark.parametrize("name", ["optimizer.pt", "scheduler.pt", "rng_state.pth"])
def test_a_zeroed_region_inside_a_torch_file_is_found(tmp_path, name):
    """Zeros over a tensor's bytes keep the zip directory whole, and torch.load returns wrong numbers silently."""
    folder = make_checkpoint(tmp_path, 3)
    torch.save({"state": torch.arange(1000.0)}, folder / name)
    data = bytearray((folder / name).read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    (folder / name).write_bytes(bytes(data))
    assert float(torch.load(folder / name)["state"].sum()) != float(torch.arange(1000.0).sum())  # silently wrong
    assert checkpoint_problems(folder) == [f"{name} is damaged (0 fails its checksum)"]


def test_resume_falls_back_from_a_damaged_optimizer_in_one_line(tmp_path, caplog):
    make_checkpoint(tmp_path, 2)
    path = make_checkpoint(tmp_path, 4) / "optimizer.pt"
    data = bytearray(path.read_bytes())
    data[100:164] = bytes(64)  # over the pickle: torch.load raises UnicodeDecodeError
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.INFO, logger="gdpo_trl.run.checkpoints"):
        assert resolve_resume_checkpoint(str(tmp_path), "true") == str(tmp_path / "checkpoint-2")
    assert [r.getMessage() for r in caplog.records] == [
        "Resuming from checkpoint-2; skipped incomplete checkpoint-4 (optimizer.pt is damaged (data.pkl fails its "
        "checksum))."
    ]


def test_empty_folder_and_wrong_step(tmp_path):
    (tmp_path / "checkpoint-5").mkdir()
    assert checkpoint_problems(tmp_path / "checkpoint-5") == ["empty folder"]
    folder = make_checkpoint(tmp_path, 7)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 6}))
    assert checkpoint_problems(folder) == ["trainer_state.json is for step 6"]


def test_save_only_model_and_several_processes(tmp_path):
    folder = make_checkpoint(tmp_path, 2, skip=("optimizer.pt", "scheduler.pt", "rng_state.pth"))
    assert checkpoint_problems(folder, save_only_model=True) == []
    assert checkpoint_problems(folder, world_size=2, save_only_model=False) == [
        "no optimizer.pt",
        "no scheduler.pt",
        "no rng_state_0.pth",
        "no rng_state_1.pth",
    ]


def test_safetensors_size_must_match_its_header(tmp_path):
    save_file({"a": torch.ones(10)}, str(tmp_path / "w.safetensors"))
    assert safetensors_problem(tmp_path / "w.safetensors") is None
    with (tmp_path / "w.safetensors").open("ab") as f:
        f.write(b"\0")
    assert "truncated" in safetensors_problem(tmp_path / "w.safetensors")


def test_resume_picks_the_newest_complete_checkpoint_and_says_what_it_skipped(tmp_path, caplog):
    make_checkpoint(tmp_path, 2)
    make_checkpoint(tmp_path, 10)
    make_checkpoint(tmp_path, 20, truncate=("optimizer.pt",))
    (tmp_path / "checkpoint-30").mkdir()
    with caplog.at_level(logging.INFO, logger="gdpo_trl.run.checkpoints"):
        assert resolve_resume_checkpoint(str(tmp_path), "true") == str(tmp_path / "checkpoint-10")  # by number
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "Resuming from checkpoint-10; skipped incomplete checkpoint-30 (empty folder); "
        "checkpoint-20 (optimizer.pt is truncated or unreadable)."
    ]
    assert resolve_resume_checkpoint(str(tmp_path), True) == str(tmp_path / "checkpoint-10")
    assert resolve_resume_checkpoint(str(tmp_path), str(tmp_path / "checkpoint-2")) == str(tmp_path / "checkpoint-2")
    assert resolve_resume_checkpoint(str(tmp_path), "false") is None
    assert resolve_resume_checkpoint(str(tmp_path), None) is None


def test_resume_with_nothing_there_starts_fresh(tmp_path):
    assert resolve_resume_checkpoint(str(tmp_path / "new"), "true") is None


def test_overwrite_deletes_the_earlier_run_only(tmp_path):
    make_checkpoint(tmp_path, 2)
    make_checkpoint(tmp_path, 4)
    for name in ("model.safetensors", "config.json", "trainer_state.json", "tokenizer.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    prepare_output_dir(str(tmp_path), None, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_only_the_main_process_deletes(tmp_path):
    make_checkpoint(tmp_path, 2)
    prepare_output_dir(str(tmp_path), None, overwrite=True, is_main_process=False)
    assert (tmp_path / "checkpoint-2").is_dir()


def test_resuming_is_allowed_and_an_empty_folder_is_fine(tmp_path):
    make_checkpoint(tmp_path / "run", 2)
    prepare_output_dir(str(tmp_path / "run"), "true", overwrite=False)  # no error: resuming
    (tmp_path / "empty").mkdir()
    prepare_output_dir(str(tmp_path / "empty"), None, overwrite=False)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "notes.txt").write_text("x")
    prepare_output_dir(str(tmp_path / "logs"), None, overwrite=False)  # other files are no earlier run
    # Nothing was deleted or added in any of the three folders.
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["checkpoint-2"]
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoint-2").iterdir()) == sorted(
        p.name for p in make_checkpoint(tmp_path / "reference", 2).iterdir()
    )
    assert list((tmp_path / "empty").iterdir()) == []
    assert [p.name for p in (tmp_path / "logs").iterdir()] == ["notes.txt"]
    assert (tmp_path / "logs" / "notes.txt").read_text() == "x"


def test_prepare_run_reads_the_training_arguments(tmp_path):
    make_checkpoint(tmp_path, 2)
    args = SimpleNamespace(
        output_dir=str(tmp_path), resume_from_checkpoint=None, overwrite_output_dir=False, process_index=0,
        world_size=1, save_only_model=False,
    )  # fmt: skip
    with pytest.raises(InputError, match="already holds a run"):
        prepare_run(args)
    args.resume_from_checkpoint = "true"
    assert prepare_run(args) == str(tmp_path / "checkpoint-2")


def test_a_checkpoint_without_a_recorded_recipe_resumes_with_a_warning(tmp_path, caplog):
    """Checkpoints saved before the recipe was recorded: the settings cannot be compared, and the line says so."""
    from gdpo_trl.run.resume_settings import check_resume_settings

    checkpoint = make_checkpoint(tmp_path, 2)
    args = SimpleNamespace(output_dir=str(tmp_path), max_steps=6)
    with caplog.at_level(logging.WARNING, logger="gdpo_trl.run.resume_settings"):
        assert check_resume_settings(str(checkpoint), None, args, None) == []
    assert [r.getMessage() for r in caplog.records] == [
        "Resuming from checkpoint-2, which records no recipe (saved by an older gdpo-trl): changed settings cannot "
        "be checked; resume with the run's own recipe."
    ]


def test_a_finished_run_is_told_by_its_final_state_even_when_its_last_checkpoint_is_older(tmp_path):
    """save_steps 4 and max_steps 6: checkpoint-4 is the newest, the final trainer_state.json says step 6."""
    from gdpo_trl.run.resume_settings import RunFinished, check_not_finished

    checkpoint = make_checkpoint(tmp_path, 4)
    args = SimpleNamespace(output_dir=str(tmp_path), max_steps=6)
    check_not_finished(tmp_path, checkpoint, args)  # step 4 of 6: resumes
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 6}))
    check_not_finished(tmp_path, checkpoint, args)  # no final model: steps 5-6 are trained again to save it
    for name in ("model.safetensors", "config.json"):  # the final model (the same bytes will do here)
        shutil.copy2(checkpoint / name, tmp_path / name)
    with pytest.raises(RunFinished, match="already reached step 6 of max_steps=6"):
        check_not_finished(tmp_path, checkpoint, args)
    args.max_steps = 8
    check_not_finished(tmp_path, checkpoint, args)  # a longer run: resumes from checkpoint-4
