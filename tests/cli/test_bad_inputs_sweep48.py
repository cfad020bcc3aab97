"""The silent and poor cases of issue 48's sweep, one row each through ``gdpo train`` and ``gdpo eval``: one line,
exit 2, the output folder untouched (:func:`tests.helpers.bad_inputs.check_train_rejects`)."""

import json
import os
import resource

import datasets
import pytest

from gdpo_trl.cli.evaluate import main as eval_main
from tests.helpers.bad_inputs import GOOD_ROW, assert_one_line_error, check_train_rejects, run_cli, write_jsonl


def mixed_folder(tmp):
    """Before: trained on the .jsonl half only (10 of 20 rows), with or without --dataset_config."""
    (tmp / "mixed").mkdir()
    write_jsonl(tmp / "mixed" / "part1.jsonl", [GOOD_ROW] * 2)
    datasets.Dataset.from_list([GOOD_ROW] * 2).to_parquet(str(tmp / "mixed" / "part2.parquet"))
    return str(tmp / "mixed")


def sparse_5gb(tmp):
    """Before: grew gdpo train to 8.8 GB and was OOM-killed (exit 137). Sparse: os.truncate writes nothing."""
    path = tmp / "junk.jsonl"
    write_jsonl(path, [GOOD_ROW])
    os.truncate(path, 5 * 10**9)
    return str(path)


def no_newlines(tmp):
    """Before: MemoryError after 37-42 lines, or the OOM killer. 5 MB on one line."""
    path = tmp / "one_line.jsonl"
    path.write_text(json.dumps(GOOD_ROW) * 80_000)
    return str(path)


def long_prompt(tmp):
    """Before, in gdpo eval: killed at 7.6 GB with nothing printed (gdpo train already refused it)."""
    return write_jsonl(tmp / "long.jsonl", [GOOD_ROW, {**GOOD_ROW, "question": "x" * 100_000}])


# (id, what writes the data, words of the one line)
DATA_ROWS = [
    ("data_mixed_formats", mixed_folder, ["mixes formats", "1 json file (part1.jsonl)", "1 parquet file (part2.parquet)"]),
    ("data_5gb_sparse", sparse_5gb, ["junk.jsonl is 5,000 MB", "1000 MB", "GDPO_TRL_MAX_DATA_MB"]),
    ("data_no_newlines", no_newlines, ["one_line.jsonl:1: a line longer than 4 MB", "GDPO_TRL_MAX_LINE_MB"]),
]  # fmt: skip


@pytest.mark.parametrize(("make", "words"), [r[1:] for r in DATA_ROWS], ids=[r[0] for r in DATA_ROWS])
def test_gdpo_train_refuses_the_data_in_one_line(tmp_path, capsys, monkeypatch, make, words):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    check_train_rejects(tmp_path, capsys, monkeypatch, {"dataset_name": make(tmp_path)}, [], None, words)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KB; imports take a few hundred MB
    assert make is not sparse_5gb or grown < 1_000_000  # the 5 GB were not read


@pytest.mark.parametrize(
    ("make", "words"),
    [r[1:] for r in DATA_ROWS]
    + [(long_prompt, ["1 of 2 prompts", "(row 1)", "100,156 characters", "--max_new_tokens=1024"])],
    ids=[r[0] for r in DATA_ROWS] + ["eval_prompt_100k_characters"],
)
def test_gdpo_eval_refuses_the_data_in_one_line(tmp_path, capsys, make, words):
    out = tmp_path / "out"
    argv = ["--model", "builtin:tiny", "--dataset", make(tmp_path), "--output_dir", str(out)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", words)
    assert not out.exists()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert make is not sparse_5gb or grown < 1_000_000


# (id, reward_funcs, dataset_name, whether one warning line names them)
AGENT_ROWS = [
    ("text_rewards_on_agent", ["format", "correctness"], "agent", True),  # before: 0.0 everywhere, nothing said
    ("tool_reward_beside_agent_ones", ["agent_success", "tool_format"], "agent", True),
    ("agent_rewards", ["agent_success", "agent_format", "agent_cost"], "agent", False),
    ("text_rewards_on_text", ["format", "correctness"], "sample", False),
]


@pytest.mark.parametrize(("funcs", "dataset", "warned"), [r[1:] for r in AGENT_ROWS], ids=[r[0] for r in AGENT_ROWS])
def test_text_rewards_on_an_agent_source_are_warned_about_in_one_line(caplog, funcs, dataset, warned):
    from types import SimpleNamespace

    from gdpo_trl.data.sources import environment_factory
    from gdpo_trl.run.agent_checks import check_agent_recipe

    script_args = SimpleNamespace(reward_funcs=funcs, dataset_name=dataset)
    with caplog.at_level("WARNING", logger="gdpo_trl"):
        check_agent_recipe(script_args, SimpleNamespace(reward_conditions=None), environment_factory(dataset))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == warned and all("\n" not in line for line in lines)
    if warned:
        text = [name for name in funcs if not name.startswith("agent_")]
        assert lines[0].startswith(f"reward_funcs {text} score a completion's text, but dataset_name 'agent' makes")
        assert "0.0 throughout" in lines[0] and "agent_success, agent_format, agent_cost" in lines[0]
