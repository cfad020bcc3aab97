"""The data-source registry: every name gives prompt/answer rows; options are parameters."""

import pytest

from gdpo_trl.data.gsm8k import SAMPLE_PATH, load_gsm8k
from gdpo_trl.data.sources import (
    EVAL_SEED,
    environment_factory,
    find_source,
    is_generated,
    is_tool_source,
    load_source,
    source_names,
)
from gdpo_trl.data.toolrl import SAMPLE_PATH as TOOLRL_SAMPLE_PATH
from gdpo_trl.data.toolrl import load_toolrl
from gdpo_trl.tasks.synthetic import load_synthetic
from gdpo_trl.tasks.toolcall_task import load_toolcall_task
from gdpo_trl.tasks.warmstart_data import load_warmstart_dataset


def test_names():
    names = {"gsm8k", "sample", "synthetic", "warmstart", "toolcall", "toolrl_sample", "toolrl", "agent", "agent_mix"}
    assert set(source_names()) == names  # the demo's five come from entry points (gdpo_trl.core.plugins)
    assert {n for n in names if is_generated(n)} == {"synthetic", "warmstart", "toolcall", "agent", "agent_mix"}
    assert {n for n in names if is_tool_source(n)} == {"toolcall", "toolrl_sample", "toolrl"}
    assert {n for n in names if find_source(n).needs_path} == {"toolrl"}
    # The agent sources bring their environments (TRL's environment_factory): a class, or one per `environment`.
    assert {n for n in names if environment_factory(n) is not None} == {"agent", "agent_mix"}
    assert sorted(environment_factory("agent_mix")) == ["arith", "shop"]


def test_sample_and_local_path_are_the_shipped_file():
    sample = load_source("sample", size=4)
    assert sample.to_list() == load_gsm8k(str(SAMPLE_PATH), limit=4).to_list()
    assert load_source(str(SAMPLE_PATH), size=4).to_list() == sample.to_list()


def test_generated_sources_take_size_and_seed():
    assert load_source("synthetic", size=5, seed=3).to_list() == load_synthetic(5, 3).to_list()
    # No seed: 0 for training, EVAL_SEED for any other split.
    assert load_source("synthetic", size=5).to_list() == load_synthetic(5, 0).to_list()
    assert load_source("synthetic", size=5, split="test").to_list() == load_synthetic(5, EVAL_SEED).to_list()
    warm = load_source("warmstart", size=6, split="test")
    assert warm.to_list() == load_warmstart_dataset(6, EVAL_SEED, split="eval").to_list()
    assert set(warm.column_names) == {"prompt", "answer"}
    # The tool task: requests its warm start's SFT never saw ("eval"), whichever split is asked for.
    assert load_source("toolcall", size=5, seed=3).to_list() == load_toolcall_task(5, 3, "eval").to_list()
    assert load_source("toolcall", size=5, split="test").to_list() == load_toolcall_task(5, EVAL_SEED).to_list()
    assert len(load_source("toolcall")) == 1000


def test_toolrl_sources_are_named_explicitly():
    sample = load_source("toolrl_sample", size=7)
    assert sample.to_list() == load_toolrl("sample", limit=7).to_list()
    assert load_source("toolrl", path=str(TOOLRL_SAMPLE_PATH), size=7).to_list() == sample.to_list()
    # Named as a file, its rows (a prompt and an answer) are a prompt dataset, used as they are; read as
    # GSM8K-style rows it fails on the column it lacks.
    assert load_source(str(TOOLRL_SAMPLE_PATH), size=7).to_list() == sample.to_list()
    with pytest.raises(ValueError, match="missing required column.*'question'"):
        load_source(str(TOOLRL_SAMPLE_PATH), dataset_format="gsm8k")


def test_system_prompt_replaces_gsm8k_style_system_messages_only():
    plain = load_source("sample", size=3)
    custom = load_source("sample", size=3, system_prompt="Think, then answer.")
    assert [p[0] for p in custom["prompt"]] == [{"role": "system", "content": "Think, then answer."}] * 3
    assert [p[1:] for p in custom["prompt"]] == [p[1:] for p in plain["prompt"]]
    assert custom["answer"] == plain["answer"]
    warm = load_source("warmstart", size=2, system_prompt="S")
    assert [p[0]["content"] for p in warm["prompt"]] == ["S", "S"]


@pytest.mark.parametrize(
    ("name", "kw", "message"),
    [
        ("sample", {"seed": 1}, "seed only applies to generated sources"),
        ("synthetic", {"size": 0}, "size must be >= 1"),
        ("missing/file.jsonl", {}, "not found"),
        ("toolrl", {}, "needs a path"),
        ("sample", {"path": "x.parquet"}, "a path only applies to the sources"),
        ("toolcall", {"system_prompt": "S"}, "system_prompt does not apply to the tool-calling source 'toolcall'"),
        ("toolrl_sample", {"system_prompt": "S"}, "lists the tools"),
        ("toolrl", {"path": "missing/rows.parquet"}, "not found"),
    ],
)
def test_bad_options(name, kw, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_source(name, **kw)


def test_the_core_does_not_import_the_plugins():
    import subprocess
    import sys

    code = (
        "import sys, gdpo_trl.core.advantages, gdpo_trl.core.diagnostics, gdpo_trl.rewards, gdpo_trl.data, gdpo_trl.data.sources,"
        " gdpo_trl.eval\nprint(sorted(m for m in sys.modules if m.startswith(('gdpo_trl.tasks', 'gdpo_trl.models'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
