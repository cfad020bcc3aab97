"""The tool-calling task and the recipe's system prompt, wired into gdpo train, gdpo eval and builtin: models."""

import json
from pathlib import Path

import pytest
import yaml

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.cli.train import main as train_main
from gdpo_trl.data.sources import load_source
from gdpo_trl.recipe.arguments import parse_args
from gdpo_trl.data.sources import source_options

ROOT = Path(__file__).resolve().parents[2]
TOOL_RECIPE = {
    "model_name_or_path": "builtin:tiny",
    "dataset_name": "toolrl_sample",
    "reward_funcs": ["tool_format", "tool_correctness"],
    "num_generations": 2,
    "per_device_train_batch_size": 2,
    "max_completion_length": 4,
    "max_steps": 1,
    "max_train_samples": 2,
    "use_cpu": True,
    "bf16": False,
    "report_to": "none",
    "save_strategy": "no",
}


def _run(main, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code, capsys.readouterr().err.strip().splitlines()[-1]


def test_paper_recipe_system_prompt_reaches_the_data():
    recipe = ROOT / "recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml"
    script_args, _, _ = parse_args(["--config", str(recipe), "--use_cpu", "true"])
    text = yaml.safe_load(recipe.read_text())["system_prompt"]
    options = source_options(script_args)
    assert options["system_prompt"] == text and "<answer>" in text and options["path"] is None
    # The same options on the shipped sample (the Hub is out of reach here): the recipe's text is every system turn.
    rows = load_source("sample", **{**options, "size": 2})
    assert [prompt[0] for prompt in rows["prompt"]] == [{"role": "system", "content": text}] * 2


def test_cpu_toolcall_recipe_options():
    script_args, _, model_args = parse_args(["--config", str(ROOT / "recipes/cpu/toolcall_gdpo/config.yaml")])
    assert model_args.model_name_or_path == "builtin:toolcall_warmstart"
    assert source_options(script_args) == {
        "split": "train",
        "size": 1000,
        "seed": 0,
        "system_prompt": None,
        "path": None,
    }
    paper = ROOT / "recipes/Qwen2.5-1.5B-Instruct/toolcall_gdpo/config.yaml"
    script_args, _, _ = parse_args(["--config", str(paper), "--use_cpu", "true"])
    assert (script_args.dataset_name, script_args.dataset_path) == ("toolrl", "data/rlla_4k/train.parquet")


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"system_prompt": "S"}, ["system_prompt does not apply to the tool-calling source 'toolrl_sample'"]),
        ({"dataset_name": "toolrl"}, ["'toolrl' needs a path", "dataset_path"]),
        ({"dataset_name": "toolrl", "dataset_path": "missing/rows.parquet"}, ["missing/rows.parquet", "not found"]),
        ({"dataset_name": "sample", "dataset_path": "rows.parquet"}, ["a path only applies to the sources"]),
    ],
)
def test_gdpo_train_refuses_misplaced_data_options(tmp_path, capsys, tiny_model_path, overrides, words):
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**TOOL_RECIPE, **overrides}))
    code, line = _run(train_main, ["--config", str(config), "--output_dir", str(tmp_path / "out")], capsys)
    assert code == 2 and line.startswith("gdpo train: error: ")
    assert all(word in line for word in words), line


def test_gdpo_train_one_step_on_toolrl_rows(tmp_path, capsys, tiny_model_path):
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(TOOL_RECIPE))
    train_main(["--config", str(config), "--output_dir", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert "Training finished after 1 steps" in out
    assert "rewards/tool_format/mean" in out and "rewards/tool_correctness/mean" in out
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    # Four characters of a random model cannot open a <tool_call>: every tool-call gold scores -3, none 3.
    assert -3.0 <= state["log_history"][0]["rewards/tool_correctness/mean"] < 0


def test_gdpo_eval_system_prompt_and_tool_sources(tmp_path, capsys, tiny_model_path):
    fast = ["--model", tiny_model_path, "--limit", "2", "--max_new_tokens", "2"]
    eval_main([*fast, "--dataset", "sample", "--system_prompt", "Answer.", "--output_dir", str(tmp_path / "a")])
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["data"]["system_prompt"] == "Answer."
    eval_main([*fast, "--dataset", "toolcall", "--limit", "8", "--output_dir", str(tmp_path / "b")])
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["rewards"] == ["tool_format", "tool_correctness"]  # the tool rewards by default
    assert set(summary["metrics"]) >= {"tool_format_mean", "tool_correctness_mean"}
    # Two characters of a random model are no tool call: -3 where the gold calls a tool, 0 for a chat request.
    rows = [json.loads(line) for line in (tmp_path / "b" / "completions.jsonl").read_text().splitlines()]
    assert [row["rewards"][0]["tool_correctness"] for row in rows] == [
        -3.0 if "<tool_call>" in row["answer"] else 0.0 for row in rows
    ]
    code, line = _run(eval_main, [*fast, "--dataset", "toolcall", "--system_prompt", "S"], capsys)
    assert code == 2 and "system_prompt does not apply to the tool-calling source 'toolcall'" in line
    code, line = _run(eval_main, [*fast, "--dataset", "toolrl"], capsys)
    assert code == 2 and "'toolrl' needs a path" in line


def test_builtin_toolcall_warmstart_is_built_once_by_its_module(tmp_path, monkeypatch):
    """resolve_model runs `python -m gdpo_trl.tasks.toolcall_task PATH --seed N --threads N` in a child process into
    a cache folder keyed by name, recipe and seed, then reuses it (the child is replaced by a fake build here)."""
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.models import builtins as tiny

    calls = []

    def fake_child(args, what, show_output=False):
        calls.append(args)
        tiny.save_tiny_model(args[2])

    monkeypatch.setenv("GDPO_TRL_CACHE", str(tmp_path))
    monkeypatch.setattr(tiny, "run_isolated", fake_child)  # the warm starts call it through this module
    path = Path(resolve_model("builtin:toolcall_warmstart@3"))
    assert resolve_model("builtin:toolcall_warmstart@3") == str(path)  # cached: no second build
    assert len(calls) == 1 and calls[0][:2] == ["-m", "gdpo_trl.tasks.toolcall_task"]
    assert calls[0][3:5] == ["--seed", "3"] and calls[0][5] == "--threads"
    assert path.parent == tmp_path and path.name.startswith("toolcall_warmstart-seed3-")
    assert (path / "config.json").exists()
    warm = Path(resolve_model("builtin:warmstart@3"))  # the GSM8K warm start: its own module and key
    assert calls[1][:2] == ["-m", "gdpo_trl.tasks.warmstart"] and warm.name.startswith("warmstart-seed3-")
