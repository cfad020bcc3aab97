"""Out-of-range and ill-typed recipe settings (issue: nothing silent, nothing poor), one row each.

Every row is a ``gdpo train`` run (see :func:`tests.helpers.bad_inputs.check_train_rejects`): exit status 2, one
``gdpo train: error:`` line naming the field, no traceback, and an ``output_dir`` that was not created. Before these
checks, each value was accepted and either trained something else than asked (``max_steps: 0`` trained by epochs),
failed after the model was loaded with a library message naming no field (a list as ``learning_rate``), or failed at
the first generation (``top_k: -1``, ``temperature: 0``).
"""

import math

import pytest

from gdpo_trl.core.config import GDPOConfig
from gdpo_trl.core.errors import InputError
from gdpo_trl.trainer.reward_checks import CheckedAsyncReward, CheckedReward, RewardFunctionError
from tests.helpers.bad_inputs import CALL, check_train_rejects

# (id, recipe overrides, extra flags, words the one-line error must contain)
CONFIG_ROWS = [
    ("batch_size_0", {"per_device_train_batch_size": 0}, [], ["per_device_train_batch_size=0", "at least 1"]),
    ("batch_size_negative", {"per_device_train_batch_size": -4}, [], ["per_device_train_batch_size=-4"]),
    ("batch_size_float", {"per_device_train_batch_size": 2.5}, [], ["per_device_train_batch_size: '2.5' is not an integer"]),
    ("grad_accum_0", {"gradient_accumulation_steps": 0}, [], ["gradient_accumulation_steps=0"]),
    ("num_generations_negative", {"num_generations": -8}, [], ["num_generations=-8", "at least 2"]),
    ("completion_length_0", {"max_completion_length": 0}, [], ["max_completion_length=0"]),
    ("completion_length_negative", {}, ["--max_completion_length", "-16"], ["max_completion_length=-16"]),
    ("steps_per_generation_0", {"steps_per_generation": 0}, [], ["steps_per_generation=0"]),
    ("num_iterations_0", {"num_iterations": 0}, [], ["num_iterations=0"]),
    ("learning_rate_negative", {"learning_rate": -1e-5}, [], ["learning_rate=-1e-05", ">= 0"]),
    ("learning_rate_nan", {}, ["--learning_rate", "nan"], ["learning_rate=nan"]),
    ("learning_rate_inf", {}, ["--learning_rate", "inf"], ["learning_rate=inf"]),
    ("learning_rate_list", {"learning_rate": [1, 2]}, [], ["learning_rate=[1, 2]", "single number"]),
    ("max_steps_list", {"max_steps": [1]}, [], ["max_steps=[1]", "single number"]),
    ("beta_mapping", {"beta": {"a": 1}}, [], ["beta=", "single number"]),
    ("beta_negative", {"beta": -0.04}, [], ["beta=-0.04", ">= 0", "KL penalty"]),
    ("beta_nan", {}, ["--beta", "nan"], ["beta=nan"]),
    ("epsilon_negative", {"epsilon": -0.2}, [], ["epsilon=-0.2", "(0, 1)"]),
    ("epsilon_nan", {}, ["--epsilon", "nan"], ["epsilon=nan", "(0, 1)"]),
    ("epsilon_1", {"epsilon": 1.0}, [], ["epsilon=1.0", "(0, 1)"]),
    ("epsilon_high_negative", {"epsilon_high": -0.28}, [], ["epsilon_high=-0.28", "> 0"]),
    ("epsilon_high_nan", {}, ["--epsilon_high", "nan"], ["epsilon_high=nan"]),
    ("temperature_0", {"temperature": 0.0}, [], ["temperature=0.0", "> 0"]),
    ("temperature_negative", {"temperature": -1.0}, [], ["temperature=-1.0"]),
    ("temperature_nan", {}, ["--temperature", "nan"], ["temperature=nan"]),
    ("top_p_0", {"top_p": 0.0}, [], ["top_p=0.0", "(0, 1]"]),
    ("top_p_above_1", {"top_p": 1.5}, [], ["top_p=1.5", "(0, 1]"]),
    ("top_p_nan", {}, ["--top_p", "nan"], ["top_p=nan"]),
    ("top_k_negative", {"top_k": -1}, [], ["top_k=-1", "0 turns top-k filtering off"]),
    ("max_steps_0", {"max_steps": 0}, [], ["max_steps=0", "-1"]),
    ("max_steps_below_minus_1", {"max_steps": -5}, [], ["max_steps=-5"]),
    ("epochs_0", {"max_steps": -1, "num_train_epochs": 0}, [], ["num_train_epochs=0", "0 steps"]),
    ("epochs_negative", {"max_steps": -1}, ["--num_train_epochs", "-1"], ["num_train_epochs=-1.0"]),
    (
        "condition_threshold_nan",
        {"reward_conditions": {"format": {"on": "correctness", "threshold": math.nan}}},
        [],
        ["reward_conditions", "'correctness'", "nan", "finite"],
    ),
    (
        "condition_threshold_word",
        {"reward_conditions": {"format": {"on": "correctness", "threshold": "high"}}},
        [],
        ["reward_conditions", "'high'"],
    ),
    ("weights_word", {"reward_weights": [1, "heavy", 1]}, [], ["reward_weights[1]", "'heavy'"]),
    # A single value where a list belongs is read as a one-element list, as the flag reads it (recipe_values.py).
    ("weights_scalar", {"reward_weights": 2}, [], ["reward_weights has 1 weights for 3 reward functions"]),
    ("weights_final_nan", {"reward_weights_final": [1, math.nan, 1]}, [], ["reward_weights_final[1]", "nan"]),
    ("config_without_value", {}, ["--config"], ["--config needs a recipe file"]),
    ("config_followed_by_a_flag", {}, ["--config", "--max_steps", "2"], ["--config needs a recipe file"]),
]


@pytest.mark.parametrize(
    ("overrides", "flags", "words"), [r[1:] for r in CONFIG_ROWS], ids=[r[0] for r in CONFIG_ROWS]
)
def test_gdpo_train_rejects_setting(tmp_path, capsys, monkeypatch, overrides, flags, words):
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, flags, None, words)


def config(tmp_path, **kwargs) -> GDPOConfig:
    return GDPOConfig(str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(per_device_train_batch_size=0), "per_device_train_batch_size=0"),
        (dict(learning_rate=float("nan")), "learning_rate=nan"),
        (dict(learning_rate="1e-5"), "learning_rate='1e-5'"),
        (dict(temperature=0.0), "temperature=0.0"),
        (dict(top_k=-1), "top_k=-1"),
        (dict(max_steps=0), "max_steps=0"),
        (dict(reward_conditions={"length": {"on": "correctness", "threshold": float("inf")}}), "inf"),
    ],
)
def test_python_api_rejects_setting_before_trl(tmp_path, kwargs, words):
    """The checks run before TRL's own ``__post_init__``: the error is ours, naming the field, never TRL's."""
    with pytest.raises(InputError) as info:
        config(tmp_path, **kwargs)
    assert words in str(info.value)
    assert not (tmp_path / "out").exists()


def test_valid_edges_are_accepted(tmp_path):
    """The edges of each range stay valid: nothing that trains today is refused."""
    args = config(
        tmp_path,
        top_p=1.0,
        top_k=0,
        learning_rate=0.0,
        max_steps=-1,
        num_train_epochs=0.5,
        max_completion_length=1,
        reward_weights=["1e-1", 2],  # YAML reads 1e-1 (no dot) as a string
        reward_conditions={"format": {"on": "correctness", "threshold": 0.5}},
    )
    assert args.reward_weights == [0.1, 2.0]
    assert config(tmp_path, max_steps=3, num_train_epochs=0).max_steps == 3  # epochs are unused with max_steps


@pytest.mark.parametrize("code", [0, None, 3, "bye"])
def test_reward_calling_sys_exit_is_an_error_naming_it(code):
    """``sys.exit()`` inside a reward used to end training with exit status 0: a clean-looking, unfinished run."""

    def quitter(completions, **kwargs):
        raise SystemExit(code)

    for timeout in (None, 5):
        with pytest.raises(RewardFunctionError, match=r"'quitter' called sys\.exit"):
            CheckedReward(quitter, timeout=timeout)(**CALL)


def test_async_reward_calling_sys_exit_is_an_error_naming_it():
    import asyncio

    async def quitter(completions, **kwargs):
        raise SystemExit(0)

    with pytest.raises(RewardFunctionError, match="'quitter' called sys.exit"):
        asyncio.run(CheckedAsyncReward(quitter, timeout=5)(**CALL))
