"""scripts/gpu_check.py (`make gpu-check`) cannot run here (no GPU), so its commands are checked the other way: each
training check parses as `gdpo train` parses it, with the batch arithmetic it relies on; without a GPU it refuses in
one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
gpu_check = load_script("gpu_check")


def test_every_training_check_parses_as_gdpo_train_would(tmp_path):
    from gdpo_trl.cli.first_checks import split_launch
    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.recipe.field_table import load_table

    trainings = [argv for _, argv in gpu_check.checks(tmp_path, steps=3) if argv[0] == "train"]
    assert len(trainings) == 2
    for argv in trainings:
        recipe_argv, launch = split_launch(argv[1:], load_table())
        assert "--bf16" not in recipe_argv  # the recipe's bf16: true (parsed here on the CPU, so switched off)
        script, training, model = parse_args([*recipe_argv, "--use_cpu", "true", "--bf16", "false"])
        assert model.model_name_or_path == "builtin:qwen2.5-0.5b" and script.dataset_name == "sample"
        assert Path(training.output_dir).parent == tmp_path
        # One generation batch is whole groups: what TRL needs before it generates anything.
        batch = training.per_device_train_batch_size * training.gradient_accumulation_steps
        assert batch % training.num_generations == 0
    lora, zero3 = trainings
    assert "--config_file" in split_launch(zero3[1:], load_table())[1]  # accelerate's ZeRO-3 config, one process
    assert parse_args([*split_launch(lora[1:], load_table())[0], "--use_cpu", "true", "--bf16", "false"])[2].use_peft


def test_without_a_gpu_it_refuses_in_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "needs a CUDA GPU" in result.stderr and not (tmp_path / "out").exists()
