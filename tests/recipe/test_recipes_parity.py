"""The paper-parity GSM8K recipes turn off TRL 1.16's vLLM importance-sampling correction (TRL 0.18 had none)."""

from pathlib import Path

import pytest
import yaml

QWEN_15B = Path(__file__).resolve().parents[2] / "recipes" / "Qwen2.5-1.5B-Instruct"
PARITY = ["gdpo", "grpo", "gdpo_no_bn", "grpo_no_std", "gdpo_length"]


@pytest.mark.parametrize("name", PARITY)
def test_parity_recipe_turns_off_vllm_importance_sampling(name):
    from gdpo_trl.recipe.arguments import parse_args

    recipe = QWEN_15B / name / "config.yaml"
    config = yaml.safe_load(recipe.read_text())
    assert config["use_vllm"] is True and config["vllm_importance_sampling_correction"] is False
    _, training_args, _ = parse_args(["--config", str(recipe), "--use_cpu", "true"])
    assert training_args.vllm_importance_sampling_correction is False
    # A user turns it back on from the command line.
    _, training_args, _ = parse_args(
        ["--config", str(recipe), "--use_cpu", "true", "--vllm_importance_sampling_correction", "true"]
    )
    assert training_args.vllm_importance_sampling_correction is True


def test_trl_default_is_on():
    """What the recipes turn off: TRL 1.16's default (if TRL changes it, the recipes' comment must change too)."""
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in GRPOConfig.__dataclass_fields__.values()}
    assert defaults["vllm_importance_sampling_correction"] is True
    assert defaults["vllm_importance_sampling_mode"] == "sequence_mask"
    assert defaults["vllm_importance_sampling_clip_max"] == 3.0
