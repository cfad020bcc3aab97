"""Every shipped recipe and accelerate config loads, so a stale or misspelled key can never ship."""

import json
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from tests.helpers.requirements import require_module

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("**/config.yaml"))
ACCELERATE_CONFIGS = sorted((ROOT / "accelerate_configs").glob("*.yaml"))
QWEN_15B = ROOT / "recipes" / "Qwen2.5-1.5B-Instruct"
GSM8K_TRAIN_SIZE = 7473


def _ids(paths):
    return [str(path.relative_to(ROOT)) for path in paths]


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_recipes_and_configs_are_found():
    assert (ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml") in RECIPES
    assert len(RECIPES) >= 4
    assert {path.name for path in ACCELERATE_CONFIGS} >= {
        "ddp.yaml",
        "zero2.yaml",
        "zero3.yaml",
        "fsdp2.yaml",
        "single_gpu.yaml",
    }


# Recipes that read files of the user's own, relative to the current folder: parsed where their example files are.
RECIPE_FOLDERS = {"your_task": ROOT / "examples" / "your_task"}


@pytest.mark.parametrize("recipe", RECIPES, ids=_ids(RECIPES))
def test_recipe_parses(recipe, monkeypatch):
    """Two checks, because a GPU recipe cannot be fully built on a CPU-only machine.

    1. Every key is a field of one of the three dataclasses (the check that catches stale keys, like TRL 1.16's
       missing `max_prompt_length`), asserted directly so the failure names the key.
    2. The recipe goes through the real parser, with only `--use_cpu true` added: argparse converts every value
       (types, `choices` such as `dtype`), then each dataclass's `__post_init__` checks it (batch divisibility,
       aggregation names, ...). Without that flag, `bf16: true` is refused here for want of a GPU. `use_vllm: true`
       only needs vLLM once the trainer starts, so parsing works without it.
    """
    from gdpo_trl.recipe.arguments import DATACLASSES, build_reward_funcs, parse_args
    from gdpo_trl.rewards.conditioned import apply_reward_conditions

    if recipe.parent.name in RECIPE_FOLDERS:
        monkeypatch.chdir(RECIPE_FOLDERS[recipe.parent.name])
    config = _load(recipe)
    known = {f.name for dataclass_type in DATACLASSES for f in fields(dataclass_type)}
    unknown = sorted(set(config) - known - {"env"})
    assert not unknown, f"{recipe.relative_to(ROOT)}: keys {unknown} are not fields of {DATACLASSES}"

    script_args, training_args, model_args = parse_args(["--config", str(recipe), "--use_cpu", "true"])
    assert model_args.model_name_or_path
    # outputs/ is git-ignored: a run never writes into the source tree.
    assert training_args.output_dir.startswith("outputs/"), training_args.output_dir
    # Every reward name, reward keyword argument and reward condition resolves.
    apply_reward_conditions(build_reward_funcs(script_args), training_args.reward_conditions)
    # A YAML float like `1e-3` (no dot) is a string to YAML; argparse converts it, but check it ended up a number.
    assert isinstance(training_args.learning_rate, float)


def test_cpu_recipe_builds_as_is():
    """The CPU recipe is parsed without any override: it must be fully valid on this machine."""
    from gdpo_trl.recipe.arguments import parse_args

    script_args, training_args, model_args = parse_args(["--config", str(ROOT / "recipes/cpu/gdpo/config.yaml")])
    assert model_args.model_name_or_path == "builtin:warmstart"
    assert script_args.dataset_name == "warmstart"
    assert training_args.use_cpu and not training_args.bf16 and not training_args.use_vllm
    assert training_args.multi_objective_aggregation == "normalize_then_sum"
    assert training_args.beta == 0.0
    assert training_args.cpu_threads == 1
    assert training_args.report_to in ([], "none", ["none"])


def test_gdpo_and_grpo_recipes_differ_only_in_aggregation():
    gdpo = _load(QWEN_15B / "gdpo" / "config.yaml")
    grpo = _load(QWEN_15B / "grpo" / "config.yaml")
    differing = {key for key in gdpo.keys() | grpo.keys() if gdpo.get(key) != grpo.get(key)}
    assert differing == {"multi_objective_aggregation", "output_dir", "run_name"}
    assert gdpo["multi_objective_aggregation"] == "normalize_then_sum"
    assert grpo["multi_objective_aggregation"] == "sum_then_normalize"
    assert gdpo["output_dir"] != grpo["output_dir"]


def test_paper_recipe_batch_arithmetic():
    """16 completions x 4 accumulation steps x 8 GPUs = 512 completions = 32 prompts of 16 per optimizer step."""
    from accelerate.commands.config.config_args import load_config_from_file

    recipe = _load(QWEN_15B / "gdpo" / "config.yaml")
    num_gpus = load_config_from_file(str(ROOT / "accelerate_configs" / "zero3.yaml")).num_processes
    completions = recipe["per_device_train_batch_size"] * recipe["gradient_accumulation_steps"] * num_gpus
    assert num_gpus == 8
    assert completions == 512
    assert completions % recipe["num_generations"] == 0
    prompts_per_step = completions // recipe["num_generations"]
    assert prompts_per_step == 32
    assert GSM8K_TRAIN_SIZE // prompts_per_step == 233
    assert recipe["reward_funcs"] == ["correctness", "integer", "format"]
    assert "max_prompt_length" not in recipe  # not a field in TRL 1.16


@pytest.mark.parametrize("config_file", ACCELERATE_CONFIGS, ids=_ids(ACCELERATE_CONFIGS))
def test_accelerate_config_loads(config_file):
    """accelerate's own loader accepts the file; nested DeepSpeed/FSDP keys must be `accelerate launch` options.

    The loader only checks top-level keys; `accelerate launch` copies nested ones onto its arguments by name (FSDP
    ones with an `fsdp_` prefix), so a misspelled nested key would be ignored silently without the second check.
    """
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import launch_command_parser

    config = load_config_from_file(str(config_file))
    assert config.compute_environment.value == "LOCAL_MACHINE"
    launch_options = {action.dest for action in launch_command_parser()._actions}
    nested = list(config.deepspeed_config) + [
        key if key.startswith("fsdp") else f"fsdp_{key}" for key in config.fsdp_config
    ]
    assert not set(nested) - launch_options, f"unknown nested keys in {config_file.name}"
    if config.distributed_type.value == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] in (2, 3)
    if config_file.name == "zero3.yaml":
        assert config.deepspeed_config["zero3_init_flag"] and config.deepspeed_config["zero3_save_16bit_model"]
    if config_file.name == "fsdp2.yaml":
        assert config.fsdp_config["fsdp_version"] == 2


# --- GPU recipes against the installed TRL / transformers / DeepSpeed ------------------------------------------------

GPU_RECIPES = sorted(ROOT.glob("recipes/Qwen2.5-*/**/config.yaml"))
# Deprecated keys the recipes keep on purpose, with the reason. transformers 5.18+ renamed `gradient_checkpointing` to
# `activation_checkpointing`, but vLLM 0.31 (the newest inside TRL 1.16's vLLM range, what the flagship runs with)
# pins transformers<5.18, which only knows the old name; the old name works in both.
KEPT_ON_PURPOSE = {"gradient_checkpointing"}


DEEPSPEED_CONFIGS = [ROOT / "accelerate_configs" / name for name in ("zero2.yaml", "zero3.yaml")]


def _deprecated_fields() -> dict[str, str]:
    """Fields whose own help says they are deprecated (e.g. TRL's `vllm_importance_sampling_cap`)."""
    import re

    from gdpo_trl.recipe.arguments import DATACLASSES

    return {
        f.name: f.metadata["help"]
        for dataclass_type in DATACLASSES
        for f in fields(dataclass_type)
        if re.match(r"\s*deprecated\b", str(f.metadata.get("help", "")), re.IGNORECASE)
    }


def test_gpu_recipes_are_found():
    assert len(GPU_RECIPES) >= 6
    assert "vllm_importance_sampling_cap" in _deprecated_fields()  # the check would see a deprecated TRL key


@pytest.mark.parametrize("recipe", GPU_RECIPES, ids=[str(r.relative_to(ROOT)) for r in GPU_RECIPES])
def test_gpu_recipe_keys_are_current(recipe):
    """No key of a GPU recipe is unknown (test_recipe_parses) or deprecated in the installed TRL/transformers: not
    by its field's help, and parsing it raises no deprecation warning."""
    import logging
    import warnings

    from gdpo_trl.recipe.arguments import parse_args

    config = _load(recipe)
    deprecated = sorted(set(config) & set(_deprecated_fields()))
    assert not deprecated, f"{recipe.relative_to(ROOT)}: deprecated keys {deprecated}"

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    loggers = [logging.getLogger(name) for name in ("trl", "transformers")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parse_args(["--config", str(recipe), "--use_cpu", "true"])
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    messages = [str(w.message) for w in caught] + records
    for key in set(config) - KEPT_ON_PURPOSE:
        mentions = [m for m in messages if "deprecat" in m.lower() and (f"`{key}`" in m or f"'{key}'" in m)]
        assert not mentions, f"{recipe.relative_to(ROOT)}: {key!r} is deprecated: {mentions}"


@pytest.mark.parametrize("config_file", DEEPSPEED_CONFIGS, ids=_ids(DEEPSPEED_CONFIGS))
def test_deepspeed_config_is_valid_for_installed_deepspeed(config_file):
    """The ZeRO section accelerate builds from the config passes DeepSpeed's own schema (unknown keys are errors
    there) and uses no field DeepSpeed marks deprecated."""
    deepspeed = require_module("deepspeed", "DeepSpeed is part of the dev extra: pip install -e '.[dev]'")
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DeepSpeedPlugin
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

    options = dict(load_config_from_file(str(config_file)).deepspeed_config)
    options.pop("deepspeed_multinode_launcher")  # a launcher option, not part of the DeepSpeed config
    zero = DeepSpeedPlugin(**options).deepspeed_config["zero_optimization"]
    parsed = DeepSpeedZeroConfig(**zero)
    assert parsed.stage == options["zero_stage"]
    by_key = {info.alias or name: info for name, info in DeepSpeedZeroConfig.model_fields.items()}
    for key in zero:
        extra = by_key[key].json_schema_extra or {}
        assert not extra.get("deprecated"), (
            f"{config_file.name}: {key} is deprecated in DeepSpeed {deepspeed.__version__}"
        )


def test_the_qwen_study_recipes_differ_only_in_aggregation():
    """Study H9's two arms (recipes/cpu/qwen_gdpo, qwen_grpo): the same run but for the rule."""
    gdpo = _load(ROOT / "recipes" / "cpu" / "qwen_gdpo" / "config.yaml")
    grpo = _load(ROOT / "recipes" / "cpu" / "qwen_grpo" / "config.yaml")
    differing = {key for key in gdpo.keys() | grpo.keys() if gdpo.get(key) != grpo.get(key)}
    assert differing == {"multi_objective_aggregation", "output_dir", "run_name"}
    assert (gdpo["multi_objective_aggregation"], grpo["multi_objective_aggregation"]) == (
        "normalize_then_sum",
        "sum_then_normalize",
    )
    assert gdpo["model_name_or_path"] == "builtin:qwen2.5-coder-0.5b-instruct"


@pytest.mark.slow
def test_the_qwen_study_recipe_trains_a_step_on_a_tiny_model(tmp_path):
    """Its settings (LoRA, gradient checkpointing, merged sampling, its system prompt) at a test's size, on a tiny
    model with Qwen2.5's real tokenizer: the real 0.5B model is not downloaded in tests (docs/qwen.md)."""
    from gdpo_trl.cli.train import main as train_main

    overrides = {"model_name_or_path": "builtin:qwen2.5-tiny", "dataset_name": "sample", "num_generations": "2",
                 "per_device_train_batch_size": "2", "gradient_accumulation_steps": "1", "max_completion_length": "8",
                 "max_steps": "1", "output_dir": str(tmp_path / "run")}  # fmt: skip
    argv = ["--config", str(ROOT / "recipes" / "cpu" / "qwen_gdpo" / "config.yaml")]
    argv += [token for name, value in overrides.items() for token in (f"--{name}", value)]
    assert train_main(argv) in (0, None)
    state = json.loads((tmp_path / "run" / "trainer_state.json").read_text())
    assert state["global_step"] == 1 and "rewards/format_reward/mean" in state["log_history"][0]
    assert json.loads((tmp_path / "run" / "adapter_config.json").read_text())["r"] == 16
