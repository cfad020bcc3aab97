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


def test_gd2po_recipes_are_their_gdpo_twins_with_gd2po_aggregation():
    """The GD2PO recipes (GSM8K-style and tool calling on CPU, tool calling at paper scale) change the aggregation,
    set the GD2PO paper's threshold and rename their outputs; nothing else."""
    twins = [("recipes/cpu/gdpo", "recipes/cpu/gd2po"), ("recipes/cpu/toolcall_gdpo", "recipes/cpu/toolcall_gd2po")]
    twins.append(("recipes/Qwen2.5-1.5B-Instruct/toolcall_gdpo", "recipes/Qwen2.5-1.5B-Instruct/toolcall_gd2po"))
    for gdpo_path, gd2po_path in twins:
        gdpo, gd2po = _load(f"{gdpo_path}/config.yaml"), _load(f"{gd2po_path}/config.yaml")
        assert _differing(gdpo, gd2po) == {"multi_objective_aggregation", "gd2po_threshold", "output_dir", "run_name"}
        assert (gd2po["multi_objective_aggregation"], gd2po["gd2po_threshold"]) == ("gd2po", 0.2)
        assert "gd2po" in gd2po["output_dir"] and "gd2po" in gd2po["run_name"]
