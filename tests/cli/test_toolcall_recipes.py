"""The tool-calling recipes: GDPO and GRPO differ only where the reference runs did, and the paper-scale batch
arithmetic reproduces the reference's 512 prompts x 4 completions per generation in mini-batches of 128 prompts."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _load(path):
    return yaml.safe_load((ROOT / path).read_text())


def _differing(a, b):
    return {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}


def test_gdpo_and_grpo_differ_only_in_aggregation_and_kl():
    paper = [_load(f"recipes/Qwen2.5-1.5B-Instruct/toolcall_{m}/config.yaml") for m in ("gdpo", "grpo")]
    assert _differing(*paper) == {"multi_objective_aggregation", "beta", "output_dir", "run_name"}
    assert (paper[0]["beta"], paper[1]["beta"]) == (0.0, 0.001)
    cpu = [_load(f"recipes/cpu/toolcall_{m}/config.yaml") for m in ("gdpo", "grpo")]
    assert _differing(*cpu) == {"multi_objective_aggregation", "output_dir", "run_name"}
    for gdpo, grpo in (paper, cpu):
        assert gdpo["multi_objective_aggregation"] == "normalize_then_sum"
        assert grpo["multi_objective_aggregation"] == "sum_then_normalize"
        assert gdpo["reward_funcs"] == ["tool_format", "tool_correctness"]


def test_paper_batch_arithmetic():
    from accelerate.commands.config.config_args import load_config_from_file

    recipe = _load("recipes/Qwen2.5-1.5B-Instruct/toolcall_gdpo/config.yaml")
    gpus = load_config_from_file(str(ROOT / "accelerate_configs" / "zero3.yaml")).num_processes
    per_micro_step = recipe["per_device_train_batch_size"] * gpus
    per_optimizer_step = per_micro_step * recipe["gradient_accumulation_steps"]
    per_generation = per_micro_step * recipe["steps_per_generation"]
    assert recipe["num_generations"] == 4
    assert per_optimizer_step // recipe["num_generations"] == 128  # the reference's mini-batch, in prompts
    assert per_generation // recipe["num_generations"] == 512  # the reference's batch, in prompts
    assert recipe["max_steps"] * per_optimizer_step // per_generation == 100  # the reference's ~100 steps
    assert recipe["learning_rate"] == 1e-6 and recipe["lr_scheduler_type"] == "constant"
    assert (recipe["epsilon"], recipe["temperature"], recipe["max_completion_length"]) == (0.2, 1.0, 1024)
