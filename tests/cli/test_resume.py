"""A run SIGKILLed mid-step and twice mid-save resumes to the same losses as an uninterrupted run.

Each run is ``gdpo train`` in its own process (``tests/helpers/kill_runner.py``), killed with SIGKILL at a chosen point:
during optimizer step 3 (checkpoint-2 complete), while checkpoint-4's ``optimizer.pt`` is half written, and while
checkpoint-6 lacks only ``trainer_state.json``. Every restart is the same command with
``--resume_from_checkpoint true``. About 2 minutes on one busy CPU core (five short trainings of the tiny model).
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

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
    for kill in ("step:2", "optimizer:4", "state:6", ""):
        outputs.append(run(recipe, killed, kill=kill, resume=True))
    return folder / "whole", killed, outputs


def test_each_kill_was_a_sigkill_and_the_last_run_finished(runs):
    _, _, outputs = runs
    assert [o.returncode for o in outputs] == [-signal.SIGKILL] * 3 + [0], outputs[-1].stderr[-3000:]


def test_resume_skips_the_half_written_checkpoints_and_says_why(runs):
    _, _, outputs = runs
    second_resume, third_resume = outputs[2].stdout + outputs[2].stderr, outputs[3].stdout + outputs[3].stderr
    assert "Resuming from checkpoint-2; skipped incomplete checkpoint-4" in second_resume
    assert "optimizer.pt is truncated" in second_resume
    assert "no trainer_state.json" in second_resume
    assert "Resuming from checkpoint-4; skipped incomplete checkpoint-6 (no trainer_state.json" in third_resume


def test_logged_steps_run_on_without_gap_or_repeat(runs):
    _, killed, _ = runs
    assert [entry["step"] for entry in logged_steps(killed)] == [1, 2, 3, 4, 5, 6]


def test_losses_equal_an_uninterrupted_run(runs):
    whole, killed, _ = runs
    expected, got = logged_steps(whole), logged_steps(killed)
    for key in ("loss", "grad_norm", "reward", "learning_rate"):
        assert [e[key] for e in got] == pytest.approx([e[key] for e in expected], rel=1e-6, abs=1e-9), key
    assert any(abs(e["loss"]) > 1e-3 for e in expected)  # the comparison is not between zeros
