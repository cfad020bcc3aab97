"""Every bad input a new user tried, one row each: a one-line error or a warning, never silent training.

CLI rows run ``gdpo train`` / ``gdpo eval``'s ``main`` in this process and assert exit status 2, a single
``<prog>: error:`` line naming the culprit, and that ``output_dir`` was not created (or, when it held an earlier run,
is byte for byte unchanged). The Python API's rows: tests/trainer/test_bad_inputs_api.py. Most rows fail before any
model is built; the data and prompt-length rows resolve ``builtin:tiny`` (built once per test session).
"""

import pytest
import yaml

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.cli.train import main as train_main
from gdpo_trl.core.errors import InputError
from tests.helpers.bad_inputs import (
    BASE_RECIPE,
    assert_one_line_error,
    check_train_rejects,
    data_file,
    run_cli,
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
    ("data_unsupported_type", {}, [], "data:tsv", ["'.tsv'"]),
    ("data_no_answer_column", {}, [], "data:no_answer", ["'answer'"]),
    ("answer_null", {}, [], "data:null", ["row 1", "None"]),
    ("answer_number", {}, [], "data:number", ["row 1", "72", "int"]),
    ("gold_words", {}, [], "data:words", ["row 1", "'seventy-two'", "not a plain number"]),
    ("gold_units", {}, [], "data:units", ["row 1", "'5 dollars'"]),
    ("gold_exponent", {}, [], "data:exp", ["row 1", "'1e3'"]),
    ("prompt_too_long", {}, [], "data:long_prompt", ["1 of 3 prompts", "(row 1)", "2048"]),
    (
        "out_holds_checkpoints",
        {},
        [],
        "run:checkpoints",
        ["already holds a run", "checkpoint-4", "--resume_from_checkpoint true", "--overwrite"],
    ),
    (
        "out_holds_model",
        {},
        [],
        "run:model",
        ["already holds a run", "model.safetensors", "another --output_dir", "--overwrite_output_dir true"],
    ),
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
    import gdpo_trl.run.inputs as inputs

    def broken(*args, **kwargs):
        raise KeyError("internal")

    monkeypatch.setattr(inputs, "check_recipe", broken)
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(BASE_RECIPE))
    with pytest.raises(KeyError, match="internal"):
        train_main(["--config", str(config), "--output_dir", str(tmp_path / "out")])


def test_the_table_has_at_least_forty_rows():
    from tests.trainer.test_bad_inputs_api import API_ROWS

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
