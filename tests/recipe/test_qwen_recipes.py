"""Every recipe under recipes/Qwen2.5-* runs one training step on Qwen2.5's real tokenizer (builtin:qwen2.5-tiny, the
real vocabulary), with only the model, device, precision, batch and length overridden, in this one process.

The GSM8K recipes read the shipped GSM8K-style sample instead of openai/gsm8k (the Hub is out of reach); the tool
recipes read the shipped ToolRL-format sample (gold calls written with <tool_call> ... </tool_call>, one added token
each in Qwen2.5's vocabulary) instead of ToolRL's train.parquet. FlashAttention-2 and Weights & Biases, which the
GPU recipes ask for, are replaced by SDPA and no reporting. On a CPU, TRL scores every position of prompt and
completion against the whole 151,936-row vocabulary (its chunked log-prob kernel compacts to the completion only
with Triton), so a step here costs seconds where the demo's character-level model takes a fraction of one.
"""

import json
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted(ROOT.glob("recipes/Qwen2.5-*/**/config.yaml"))
TOOLRL_SAMPLE = ROOT / "gdpo_trl" / "data" / "toolrl_sample.jsonl"
OVERRIDES = [
    "--model_name_or_path", "builtin:qwen2.5-tiny",
    "--use_cpu", "true", "--use_vllm", "false",
    "--bf16", "false", "--dtype", "float32", "--attn_implementation", "sdpa",
    "--per_device_train_batch_size", "2", "--num_generations", "2", "--gradient_accumulation_steps", "1",
    "--steps_per_generation", "1", "--max_steps", "1", "--max_completion_length", "8",
    "--report_to", "none",
]  # fmt: skip


def _ids(paths):
    return [str(path.relative_to(ROOT / "recipes")) for path in paths]


def test_all_qwen_recipes_are_covered():
    names = set(_ids(RECIPES))
    assert (
        "Qwen2.5-1.5B-Instruct/gdpo/config.yaml" in names and "Qwen2.5-0.5B-Instruct/lora_smoke/config.yaml" in names
    )
    assert len(RECIPES) >= 8


def _with_qwen_tool_template(tmp_path) -> str:
    """builtin:qwen2.5-tiny with Qwen2.5-Instruct's real chat template (TRL ships it), which renders tools: the tiny
    build's plain ChatML template does not, and TRL refuses tools without one."""
    import shutil

    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    from gdpo_trl.core.plugins import resolve_model

    path = tmp_path / "qwen-tools"
    shutil.copytree(resolve_model("builtin:qwen2.5-tiny"), path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES, ids=_ids(RECIPES))
def test_recipe_trains_one_step_on_qwen_tokenizer(recipe, tmp_path, model_cache, monkeypatch):
    import yaml

    from gdpo_trl.cli.train import main
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.data.sources import environment_factory, is_tool_source

    config = yaml.safe_load(recipe.read_text())
    resolve_model("builtin:qwen2.5-tiny")  # built once (first test), outside the timing
    data = ["--dataset_path", str(TOOLRL_SAMPLE)] if is_tool_source(config["dataset_name"]) else []
    if config["dataset_name"] == "openai/gsm8k":
        data = ["--dataset_name", "sample"]
    if environment_factory(config["dataset_name"]) is not None:  # an agent recipe: Qwen2.5-Instruct's own template
        data = ["--model_name_or_path", _with_qwen_tool_template(tmp_path), "--synthetic_size", "16"]
    output = tmp_path / "run"
    monkeypatch.chdir(ROOT)
    start = time.perf_counter()
    main(["--config", str(recipe), *OVERRIDES, *data, "--output_dir", str(output)])
    wall = time.perf_counter() - start

    state = json.loads((output / "trainer_state.json").read_text())
    assert state["global_step"] == 1
    logged = {key for entry in state["log_history"] for key in entry}
    for name in config["reward_funcs"]:
        assert any(key.startswith("rewards/") and name in key for key in logged), (name, sorted(logged))
    assert (output / ("adapter_config.json" if config.get("use_peft") else "model.safetensors")).exists()
    # The run saved Qwen2.5's tokenizer (loading 18 MB of it again here would cost seconds per recipe; the
    # acceptance test in test_qwen_tokenizer.py compares a saved run's tokenizer in full).
    saved = json.loads((output / "tokenizer_config.json").read_text())
    assert (saved["tokenizer_class"], saved["eos_token"], saved["pad_token"]) == (
        "Qwen2Tokenizer",
        "<|im_end|>",
        "<|endoftext|>",
    )
    assert (output / "tokenizer.json").stat().st_size > 10_000_000
    step = state["log_history"][-1]["train_runtime"]
    print(f"\n{recipe.relative_to(ROOT)}: one step {step:.1f} s (train_runtime), {wall:.1f} s with loading and saving")
