"""Every bad input a new user tried through the Python API: the exception type and the words, one row
each (the command line's rows: tests/cli/test_bad_inputs.py); and the warnings that are allowed, but said out loud."""

import asyncio
import threading
import warnings

import pytest

from gdpo_trl.core.config import GDPOConfig
from gdpo_trl.core.errors import InputError
from gdpo_trl.data import load_gsm8k, parse_gold_answer
from gdpo_trl.rewards import get_reward_funcs
from gdpo_trl.rewards.conditioned import apply_reward_conditions
from gdpo_trl.run.checkpoints import prepare_output_dir, resolve_resume_checkpoint
from gdpo_trl.trainer.reward_checks import (
    CheckedAsyncReward,
    CheckedReward,
    RewardFunctionError,
    RewardOutputError,
    RewardTimeoutError,
    check_reward_funcs,
    check_reward_output,
)
from tests.helpers.bad_inputs import CALL, data_file, earlier_run, snapshot

# --- Python API rows ---------------------------------------------------------------------------------------------


def config(tmp, **kwargs):
    return lambda: GDPOConfig(str(tmp / "out"), use_cpu=True, bf16=False, report_to="none", **kwargs)


def slow_reward(completions, **kwargs):
    threading.Event().wait(3)  # ends by itself, so the abandoned thread does not outlive the test session
    return [1.0] * len(completions)


async def hanging_reward(completions, **kwargs):
    await asyncio.sleep(3600)


def failing_reward(completions, **kwargs):
    raise KeyError("gold")


def flexible_reward(completions, scale: float = 1.0, **kwargs):
    return [scale] * len(completions)


API_ROWS = [
    ("config_weights_zero", lambda t: config(t, reward_weights=[0.0, 0.0]), InputError, ["all zero"]),
    ("config_weights_inf", lambda t: config(t, reward_weights=[float("inf"), 1.0]), InputError, ["inf"]),
    ("config_weights_nan", lambda t: config(t, reward_weights=[1.0, float("nan")]), InputError, ["[1] is nan"]),
    ("config_num_generations_0", lambda t: config(t, num_generations=0), InputError, ["num_generations=0"]),
    ("config_conditions_cycle", lambda t: config(t, reward_conditions={"a": "b", "b": "a"}), InputError, ["cycle"]),
    ("config_conditions_json", lambda t: config(t, reward_conditions="{oops"), InputError, ["reward_conditions"]),
    (
        "config_batch_norm_grpo",
        lambda t: config(t, multi_objective_aggregation="sum_then_normalize", gdpo_batch_norm=False),
        InputError,
        ["gdpo_batch_norm"],
    ),
    ("config_timeout_nan", lambda t: config(t, reward_timeout=float("nan")), InputError, ["reward_timeout"]),
    (
        "kwargs_swallowed_by_var_kwargs",
        lambda t: (
            lambda: get_reward_funcs(
                ["tests.trainer.test_bad_inputs_api.flexible_reward"],
                {"tests.trainer.test_bad_inputs_api.flexible_reward": {"scael": 2}},
            )
        ),
        InputError,
        ["flexible_reward", "'scael'", "scale"],
    ),
    (
        "output_dict",
        lambda t: lambda: check_reward_output({"a": 1, "b": 2}, 2, "r"),
        RewardOutputError,
        ["'r'", "dict"],
    ),
    ("output_string", lambda t: lambda: check_reward_output("11", 2, "r"), RewardOutputError, ["str"]),
    ("output_length", lambda t: lambda: check_reward_output([1.0], 2, "r"), RewardOutputError, ["1 values for 2"]),
    ("output_overflow", lambda t: lambda: check_reward_output([1e300, 0.0], 2, "r"), RewardOutputError, ["1e+300"]),
    ("output_inf", lambda t: lambda: check_reward_output([0.0, float("-inf")], 2, "r"), RewardOutputError, ["-inf"]),
    ("output_not_number", lambda t: lambda: check_reward_output(["x", 1.0], 2, "r"), RewardOutputError, ["'x'"]),
    (
        "reward_raises",
        lambda t: lambda: CheckedReward(failing_reward)(**CALL),
        RewardFunctionError,
        ["failing_reward", "KeyError"],
    ),
    (
        "reward_hangs_sync",
        lambda t: lambda: CheckedReward(slow_reward, timeout=0.2)(**CALL),
        RewardTimeoutError,
        ["slow_reward", "reward_timeout=0.2"],
    ),
    (
        "reward_hangs_async",
        lambda t: lambda: asyncio.run(CheckedAsyncReward(hanging_reward, timeout=0.2)(**CALL)),
        RewardTimeoutError,
        ["hanging_reward", "reward_timeout=0.2"],
    ),
    (
        "conditions_self_python",
        lambda t: lambda: apply_reward_conditions([flexible_reward], {"flexible_reward": "flexible_reward"}),
        InputError,
        ["on itself"],
    ),
    ("gold_none_python", lambda t: lambda: parse_gold_answer(None, 3), InputError, ["row 3", "None"]),
    ("gold_words_python", lambda t: lambda: parse_gold_answer("#### seventy-two", 5), InputError, ["row 5"]),
    (
        "load_gsm8k_gold",
        lambda t: lambda: load_gsm8k(data_file("units", t)),
        InputError,
        ["row 1", "'5 dollars'"],
    ),
    (
        "resume_none_complete",
        lambda t: (earlier_run(t / "out", "broken"), lambda: resolve_resume_checkpoint(str(t / "out"), True))[1],
        InputError,
        ["no complete checkpoint"],
    ),
    (
        "output_dir_refused",
        lambda t: (earlier_run(t / "out", "checkpoints"), lambda: prepare_output_dir(str(t / "out"), None, False))[1],
        InputError,
        ["already holds a run"],
    ),
]


@pytest.mark.parametrize(("build", "error", "words"), [r[1:] for r in API_ROWS], ids=[r[0] for r in API_ROWS])
def test_python_api_rejects(tmp_path, build, error, words):
    call = build(tmp_path)
    before = snapshot(tmp_path / "out") if (tmp_path / "out").exists() else None
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"
    assert (snapshot(tmp_path / "out") if (tmp_path / "out").exists() else None) == before


# --- warnings: allowed, but said out loud -------------------------------------------------------------------------


def test_all_negative_weights_warn(tmp_path):
    with pytest.warns(UserWarning, match="all negative"):
        config(tmp_path, reward_weights=[-1.0, -1.0, -1.0])()


@pytest.mark.parametrize("empty", [[None, None], [float("nan"), float("nan")], [None, float("nan")]])
def test_reward_empty_for_a_whole_batch_warns_once_naming_it(empty):
    checked = CheckedReward(lambda completions, **kwargs: list(empty))
    checked.__name__ = "empty_reward"
    with pytest.warns(UserWarning, match="'empty_reward' returned None/NaN for all 2 completions"):
        assert checked(**CALL) == empty
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checked(**CALL)  # warned once


def test_partly_empty_output_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert CheckedReward(lambda completions, **kwargs: [None, 1.0])(**CALL) == [None, 1.0]


def test_process_rewards_are_left_unwrapped():
    class Process:
        is_process_reward = True

        def __call__(self, completions, **kwargs):
            return [[(1, 0.5)] for _ in completions]

    process = Process()
    wrapped = check_reward_funcs([process, flexible_reward], timeout=5)
    assert wrapped[0] is process and isinstance(wrapped[1], CheckedReward) and wrapped[1].timeout == 5


def test_reward_timeout_does_not_fire_on_a_fast_reward():
    assert CheckedReward(flexible_reward, timeout=30)(**CALL) == [1.0, 1.0]
    assert asyncio.run(CheckedAsyncReward(_fast_async, timeout=30)(**CALL)) == [2.0, 2.0]


async def _fast_async(completions, **kwargs):
    return [2.0] * len(completions)
