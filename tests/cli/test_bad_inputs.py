"""Every bad input a new user tried (issue 10), one row each: a one-line error or a warning, never silent training.

CLI rows run ``gdpo train`` / ``gdpo eval``'s ``main`` in this process and assert exit status 2, a single
``<prog>: error:`` line naming the culprit, and that ``output_dir`` was not created (or, when it held an earlier run,
is byte for byte unchanged). Python API rows assert the exception type and the words. Most rows fail before any
model is built; the data and prompt-length rows resolve ``builtin:tiny`` (built once per test session).
"""

import asyncio
import threading
import warnings

import pytest
import yaml

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.cli.train import main as train_main
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
from tests.helpers.bad_inputs import (
    BASE_RECIPE,
    CALL,
    assert_one_line_error,
    check_train_rejects,
    data_file,
    earlier_run,
    run_cli,
    snapshot,
)

# --- files a row needs ------------------------------------------------------------------------------------------


# --- gdpo train and gdpo eval rows -------------------------------------------------------------------------------

# (id, recipe overrides, extra flags, setup, words the one-line error must contain). In flags and overrides,
# "{tmp}" is the test's folder and "{out}" its output_dir; setup is "data:<kind>" (dataset_name becomes that file),
# "run:<kind>" (output_dir holds an earlier run) or "raw:<yaml text>".
TRAIN_ROWS = [
    ("yaml_syntax", None, [], "raw:a: [1\nb: 2\n", ["recipe.yaml:2", "YAML syntax error"]),
    ("yaml_not_mapping", None, [], "raw:- a\n- b\n", ["recipe.yaml", "must be a mapping"]),
    ("recipe_missing", None, ["--config", "{tmp}/nope.yaml"], None, ["nope.yaml", "not found"]),
    ("unknown_yaml_key", {"max_stepz": 3}, [], None, ["max_stepz", "max_steps"]),
    ("unknown_flag", {}, ["--num_generationz", "2"], None, ["num_generationz", "num_generations"]),
    ("weights_zero", {"reward_weights": [0, 0, 0]}, [], None, ["reward_weights", "all zero"]),
    ("weights_inf", {}, ["--reward_weights", "inf", "1", "1"], None, ["reward_weights[0]", "inf"]),
    ("weights_nan", {}, ["--reward_weights", "1", "nan", "1"], None, ["reward_weights[1]", "nan"]),
    ("weights_count", {"reward_weights": [1, 1]}, [], None, ["reward_weights has 2 weights for 3"]),
    ("weights_final_count", {"reward_weights_final": [1]}, [], None, ["reward_weights_final has 1 weights"]),
    ("schedule_sign_flip", {"reward_weights_final": [-1, 1, 1]}, [], None, ["change sign"]),
    ("num_generations_0", {"num_generations": 0}, [], None, ["num_generations=0", "at least 2"]),
    ("num_generations_1", {"num_generations": 1}, [], None, ["num_generations=1"]),
    ("batch_not_divisible", {"per_device_train_batch_size": 3}, [], None, ["divisible by num_generations"]),
    ("cpu_threads_0", {"cpu_threads": 0}, [], None, ["cpu_threads=0"]),
    ("max_train_samples_0", {"max_train_samples": 0}, [], None, ["max_train_samples=0"]),
    ("max_train_samples_negative", {"max_train_samples": -5}, [], None, ["max_train_samples=-5"]),
    ("synthetic_size_0", {"dataset_name": "synthetic", "synthetic_size": 0}, [], None, ["synthetic_size=0"]),
    ("model_missing", {"model_name_or_path": None}, [], None, ["model_name_or_path is not set"]),
    ("model_path_missing", {"model_name_or_path": "{tmp}/no-model"}, [], None, ["no-model", "not a folder"]),
    ("model_builtin_unknown", {"model_name_or_path": "builtin:nosuch"}, [], None, ["builtin:nosuch"]),
    ("dataset_hub_offline", {"dataset_name": "nosuch-org/nosuch-data"}, [], None, ["nosuch-org/nosuch-data"]),
    ("reward_kwargs_bad_json", {}, ["--reward_kwargs", "{bad"], None, ["reward_kwargs", "not valid JSON"]),
    ("reward_kwargs_not_nested", {"reward_kwargs": {"format": 3}}, [], None, ["reward_kwargs must map"]),
    ("reward_kwargs_unknown_arg", {"reward_kwargs": {"format": {"nonsense": 10}}}, [], None, ["format", "nonsense"]),
    ("reward_kwargs_unknown_reward", {"reward_kwargs": {"length": {"max_tokens": 3}}}, [], None, ["'length'"]),
    ("conditions_bad_json", {}, ["--reward_conditions", '{"length": correctness}'], None, ["reward_conditions"]),
    ("conditions_not_json", {}, ["--reward_conditions", "length:correctness"], None, ["reward_conditions", "JSON"]),
    ("conditions_self", {"reward_conditions": {"correctness": "correctness"}}, [], None, ["on itself"]),
    (
        "conditions_cycle",
        {"reward_conditions": {"format": "correctness", "correctness_reward": "format"}},
        [],
        None,
        ["cycle", "format_reward", "correctness_reward"],
    ),
    ("conditions_unknown_target", {"reward_conditions": {"length": "correctness"}}, [], None, ["'length'"]),
    ("conditions_bad_spec", {"reward_conditions": {"format": {"on": "x", "bogus": 1}}}, [], None, ["condition"]),
    (
        "batch_norm_with_grpo",
        {"multi_objective_aggregation": "sum_then_normalize", "gdpo_batch_norm": False},
        [],
        None,
        ["gdpo_batch_norm", "sum_then_normalize"],
    ),
    ("aggregation_unknown", {}, ["--multi_objective_aggregation", "mean"], None, ["multi_objective_aggregation"]),
    ("scale_rewards_unknown", {"scale_rewards": "batchwise"}, [], None, ["scale_rewards"]),
    ("reward_unknown", {"reward_funcs": ["format", "nosuch"]}, [], None, ["'nosuch'", "known rewards"]),
    ("reward_bad_path", {"reward_funcs": ["nosuchpkg.fn"]}, [], None, ["nosuchpkg"]),
    ("reward_duplicate", {"reward_funcs": ["format", "format"]}, [], None, ["duplicate", "format"]),
    ("reward_timeout_negative", {"reward_timeout": -1}, [], None, ["reward_timeout=-1"]),
    ("data_file_missing", {"dataset_name": "{tmp}/missing.jsonl"}, [], None, ["missing.jsonl", "not found"]),
    ("data_empty_jsonl", {}, [], "data:empty", ["empty.jsonl", "empty"]),
    ("data_malformed_line", {}, [], "data:malformed", ["bad.jsonl:2", "not valid JSON"]),
    ("data_unsupported_type", {}, [], "data:csv", ["'.csv'"]),
    ("data_no_answer_column", {}, [], "data:no_answer", ["'answer'"]),
    ("answer_null", {}, [], "data:null", ["row 1", "None"]),
    ("answer_number", {}, [], "data:number", ["row 1", "72", "int"]),
    ("gold_words", {}, [], "data:words", ["row 1", "'seventy-two'", "not a plain number"]),
    ("gold_units", {}, [], "data:units", ["row 1", "'5 dollars'"]),
    ("gold_exponent", {}, [], "data:exp", ["row 1", "'1e3'"]),
    ("prompt_too_long", {}, [], "data:long_prompt", ["1 of 3 prompts", "(row 1)", "2048"]),
    ("out_holds_checkpoints", {}, [], "run:checkpoints", ["already holds a run", "checkpoint-4", "--resume_from_checkpoint true", "--overwrite"]),
    ("out_holds_model", {}, [], "run:model", ["already holds a run", "model.safetensors", "another --output_dir", "--overwrite_output_dir true"]),
    (
        "resume_all_broken",
        {},
        ["--resume_from_checkpoint", "true"],
        "run:broken",
        ["no complete checkpoint", "checkpoint-4 (no trainer_state.json", "checkpoint-2 (empty folder)"],
    ),
    (
        "resume_path_incomplete",
        {},
        ["--resume_from_checkpoint", "{out}/checkpoint-4"],
        "run:no_optimizer",
        ["checkpoint-4", "incomplete", "no optimizer.pt"],
    ),
    ("resume_path_missing", {}, ["--resume_from_checkpoint", "{tmp}/elsewhere"], None, ["not a checkpoint folder"]),
    ("resume_finished_run", {}, ["--resume_from_checkpoint", "true"], "run:model", ["no checkpoint", "is whole"]),
]


@pytest.mark.parametrize(
    ("overrides", "flags", "setup", "words"), [r[1:] for r in TRAIN_ROWS], ids=[r[0] for r in TRAIN_ROWS]
)
def test_gdpo_train_rejects(tmp_path, capsys, monkeypatch, overrides, flags, setup, words):
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, flags, setup, words)


EVAL_ROWS = [
    ("eval_n_0", ["--model", "builtin:tiny", "--dataset", "sample", "--n", "0"], None, ["n must be >= 1"]),
    ("eval_malformed_data", ["--model", "builtin:tiny"], "malformed", ["bad.jsonl:2"]),
    ("eval_gold_words", ["--model", "builtin:tiny"], "words", ["row 1", "'seventy-two'"]),
    ("eval_limit_0", ["--model", "builtin:tiny", "--dataset", "sample", "--limit", "0"], None, ["limit must be >= 1"]),
]


@pytest.mark.parametrize(("argv", "data", "words"), [r[1:] for r in EVAL_ROWS], ids=[r[0] for r in EVAL_ROWS])
def test_gdpo_eval_rejects(tmp_path, capsys, argv, data, words):
    out = tmp_path / "out"
    argv = [*argv, "--output_dir", str(out)] + (["--dataset", data_file(data, tmp_path)] if data else [])
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", words)
    assert not out.exists()


def test_debug_flag_and_environment_show_the_traceback(tmp_path, capsys, monkeypatch):
    argv = ["--config", str(tmp_path / "nope.yaml"), "--output_dir", str(tmp_path / "out")]
    with pytest.raises(InputError, match="nope.yaml"):
        train_main([*argv, "--debug"])
    monkeypatch.setenv("GDPO_TRL_DEBUG", "1")
    with pytest.raises(InputError, match="nope.yaml"):
        train_main(argv)


def test_internal_errors_keep_their_traceback(tmp_path, monkeypatch):
    """A bug is not an input error: it propagates as itself (Python prints its traceback)."""
    import gdpo_trl.run.build as build

    def broken(*args, **kwargs):
        raise KeyError("internal")

    monkeypatch.setattr(build, "check_recipe", broken)
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(BASE_RECIPE))
    with pytest.raises(KeyError, match="internal"):
        train_main(["--config", str(config), "--output_dir", str(tmp_path / "out")])


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
                ["tests.cli.test_bad_inputs.flexible_reward"], {"tests.cli.test_bad_inputs.flexible_reward": {"scael": 2}}
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


def test_the_table_has_at_least_forty_rows():
    assert len(TRAIN_ROWS) + len(EVAL_ROWS) + len(API_ROWS) >= 40


def test_use_vllm_without_vllm_is_one_line(tmp_path, capsys, monkeypatch):
    import importlib

    # trl is a lazy module: reach its import_utils through importlib, not attribute access.
    monkeypatch.setattr(importlib.import_module("trl.import_utils"), "is_vllm_available", lambda: False)
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**BASE_RECIPE, "use_vllm": True}))
    code, err = run_cli(train_main, ["--config", str(config), "--output_dir", str(tmp_path / "out")], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo train", ["use_vllm", "vLLM is not installed"])
    assert not (tmp_path / "out").exists()


def test_a_folder_without_a_model_is_named(tmp_path, capsys):
    """Before: transformers failed building a tokenizer, with a message about sentencepiece."""
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({**BASE_RECIPE, "model_name_or_path": str(empty)}))
    code, err = run_cli(train_main, ["--config", str(recipe), "--output_dir", str(tmp_path / "out")], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo train", [str(empty), "without a model", "no config.json"])
    assert not (tmp_path / "out").exists()
