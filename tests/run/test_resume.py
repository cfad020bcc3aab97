"""A run SIGKILLed mid-step and twice mid-save resumes to the same losses as an uninterrupted run.

Then resuming is exact or refused: a finished run is left byte for byte as it was, a setting a resume cannot apply
is refused naming it and its class, and a longer ``max_steps`` is applied and named.

Each run is ``gdpo train`` in its own process (``tests/helpers/kill_runner.py``), killed with SIGKILL at a chosen point:
during optimizer step 3 (checkpoint-2 complete), while checkpoint-4's ``optimizer.pt`` is half written, and while
checkpoint-6 lacks only ``trainer_state.json``. Every restart is the same command with
``--resume_from_checkpoint true``. About 2 minutes on one busy CPU core (five short trainings of the tiny model).
"""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gdpo_trl.cli.train import main as train_main
from tests.helpers.bad_inputs import assert_one_line_error, run_cli, snapshot

ROOT = Path(__file__).resolve().parents[2]
RECIPE = """\
model_name_or_path: builtin:tiny
dtype: float32
dataset_name: synthetic
synthetic_size: 64
reward_funcs: [tests.helpers.toy.parity_reward, tests.helpers.toy.length_mod_reward]
num_generations: 4
per_device_train_batch_size: 8
max_completion_length: 8
learning_rate: 1.0e-2
lr_scheduler_type: linear
max_steps: 6
seed: 0
use_cpu: true
bf16: false
cpu_threads: 1
logging_steps: 1
report_to: none
save_strategy: steps
save_steps: 2
"""


def run(recipe: Path, output_dir: Path, kill: str = "", resume: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "GDPO_TEST_KILL": kill, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = ["--config", str(recipe), "--output_dir", str(output_dir)]
    args += ["--resume_from_checkpoint", "true"] if resume else []
    command = [sys.executable, str(ROOT / "tests" / "helpers" / "kill_runner.py"), *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def logged_steps(output_dir: Path) -> list[dict]:
    """The per-step log entries of the final trainer_state.json (the end-of-training summary has no loss)."""
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return [entry for entry in history if "loss" in entry]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    recipe = folder / "recipe.yaml"
    recipe.write_text(RECIPE)
    whole = run(recipe, folder / "whole")
    assert whole.returncode == 0, whole.stderr[-3000:]
    killed, outputs = folder / "killed", []
    for kill in ("step:2", "optimizer:4", "state:6", "final:6", ""):
        outputs.append(run(recipe, killed, kill=kill, resume=True))
    return folder / "whole", killed, outputs


def test_each_kill_was_a_sigkill_and_the_last_run_finished(runs):
    _, _, outputs = runs
    assert [o.returncode for o in outputs] == [-signal.SIGKILL] * 4 + [0], outputs[-1].stderr[-3000:]


def test_a_half_written_checkpoint_never_has_a_checkpoint_name(runs):
    _, killed, outputs = runs
    second_resume, third_resume = outputs[2].stdout + outputs[2].stderr, outputs[3].stdout + outputs[3].stderr
    assert "skipped incomplete" not in second_resume + third_resume  # checkpoints 4 and 6 were cut while staged
    assert "Resuming from checkpoint-2" not in third_resume  # checkpoint-4 was renamed into place when whole
    assert sorted(p.name for p in killed.iterdir() if p.name.startswith(".")) == []  # nothing partial left


def test_a_kill_during_the_final_save_is_restored_from_the_last_checkpoint(runs):
    whole, killed, outputs = runs
    last = outputs[-1].stdout + outputs[-1].stderr
    assert f"{killed}/model.safetensors is missing" in last or f"no final model in {killed}" in last, last[-2000:]
    assert "restored the final model from" in last and "checkpoint-6 (the same step 6)" in last
    assert "already reached step 6 of max_steps=6; nothing to train and only its final model was restored" in last
    assert (killed / "model.safetensors").read_bytes() == (killed / "checkpoint-6" / "model.safetensors").read_bytes()
    record = json.loads((killed / "saved_model.json").read_text())["files"]
    assert record["model.safetensors"]["bytes"] == (whole / "model.safetensors").stat().st_size


def test_logged_steps_run_on_without_gap_or_repeat(runs):
    _, killed, _ = runs
    assert [entry["step"] for entry in logged_steps(killed)] == [1, 2, 3, 4, 5, 6]


def test_losses_equal_an_uninterrupted_run(runs):
    whole, killed, _ = runs
    expected, got = logged_steps(whole), logged_steps(killed)
    for key in ("loss", "grad_norm", "reward", "learning_rate"):
        assert [e[key] for e in got] == pytest.approx([e[key] for e in expected], rel=1e-6, abs=1e-9), key
    assert any(abs(e["loss"]) > 1e-3 for e in expected)  # the comparison is not between zeros


# --- resume is exact or refused: a finished run, changed settings ------------------------------------------------------


def test_no_resume_above_reported_changed_settings(runs):
    _, _, outputs = runs
    assert not any("changed settings" in o.stderr or "other settings" in o.stderr for o in outputs)


def test_resuming_a_finished_run_says_so_and_changes_nothing(runs, capsys):
    whole, _, _ = runs
    before = snapshot(whole)
    train_main(
        ["--config", str(whole.parent / "recipe.yaml"), "--output_dir", str(whole), "--resume_from_checkpoint", "true"]
    )
    assert capsys.readouterr().out.strip() == (
        f"gdpo train: the run in {str(whole)!r} already reached step 6 of max_steps=6; nothing to train and nothing "
        "changed (its model is in output_dir). To train further, raise --max_steps."
    )
    assert snapshot(whole) == before


@pytest.fixture
def half_run(runs, tmp_path):
    """A copy of the uninterrupted run as it was after step 4 (checkpoint-2 and checkpoint-4, no final model)."""
    whole, _, _ = runs
    out = tmp_path / "out"
    out.mkdir()
    for name in ("checkpoint-2", "checkpoint-4"):
        shutil.copytree(whole / name, out / name)
    return whole.parent / "recipe.yaml", out


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--learning_rate", "0.02"], "learning_rate 0.01 -> 0.02 (optimizer)"),
        (["--weight_decay", "0.1"], "weight_decay 0.0 -> 0.1 (optimizer)"),
        (["--lr_scheduler_type", "cosine"], "lr_scheduler_type 'linear' -> 'cosine' (schedule)"),
        (["--warmup_steps", "2"], "warmup_steps 0 -> 2.0 (schedule)"),
        (["--reward_funcs", "tests.helpers.toy.parity_reward"], "reward_funcs"),
        (["--reward_weights", "1.0", "2.0"], "reward_weights None -> [1.0, 2.0] (rewards)"),
        (
            ["--model_name_or_path", "builtin:warmstart"],
            "model_name_or_path 'builtin:tiny' -> 'builtin:warmstart' (model)",
        ),
        (["--per_device_train_batch_size", "4"], "per_device_train_batch_size 8 -> 4 (batch)"),
        (["--num_generations", "8"], "num_generations 4 -> 8 (batch)"),
        (["--gradient_accumulation_steps", "2"], "gradient_accumulation_steps 1 -> 2 (batch)"),
    ],
)
def test_a_changed_setting_a_resume_cannot_apply_is_refused_naming_it(half_run, capsys, monkeypatch, flags, named):
    recipe, out = half_run
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    before = snapshot(out)
    argv = ["--config", str(recipe), "--output_dir", str(out), "--resume_from_checkpoint", "true", *flags]
    code, err = run_cli(train_main, argv, capsys)
    assert code == 2
    words = ["checkpoint-4 was trained with other settings", named, "resume with the run's own values"]
    assert_one_line_error(err, "gdpo train", words)
    assert snapshot(out) == before


def test_a_longer_max_steps_is_applied_and_named_with_the_new_schedule(runs, half_run, caplog):
    """Steps 5-8 follow the learning rates of an 8-step linear schedule (the rate logged at step k is that of step
    k - 1: 1e-2 * (N - k + 1) / N); steps 1-4 are the 6-step run's."""
    whole, _, _ = runs
    recipe, out = half_run
    argv = ["--config", str(recipe), "--output_dir", str(out), "--resume_from_checkpoint", "true", "--max_steps", "8"]
    with caplog.at_level(logging.WARNING, logger="gdpo_trl.run.resume_settings"):
        train_main(argv)
    assert [r.getMessage() for r in caplog.records if r.name == "gdpo_trl.run.resume_settings"] == [
        "Resuming from checkpoint-4 with changed settings, applied from step 5 on: max_steps 6 -> 8 (the learning "
        "rates of the remaining steps are those of a run of the new length)."
    ]
    steps = logged_steps(out)
    assert [e["step"] for e in steps] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [e["learning_rate"] for e in steps[:4]] == pytest.approx([1e-2 * (7 - k) / 6 for k in range(1, 5)])
    assert [e["learning_rate"] for e in steps[4:]] == pytest.approx([1e-2 * (9 - k) / 8 for k in range(5, 9)])
    assert [e["loss"] for e in steps[:4]] == pytest.approx([e["loss"] for e in logged_steps(whole)[:4]], rel=1e-6)
