"""An evaluation never replaces an earlier result, and its default folder names every setting that changes it.

Before: the default folder named only the data, split, sampling and limit, so evaluating the same model with other
rewards, another ``max_new_tokens`` or another system prompt silently replaced the earlier ``summary.json``; and an
explicit ``--output_dir`` holding a result was overwritten without a word.
"""

import json

import pytest

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.eval import evaluate, resolve_model_spec
from gdpo_trl.eval.report import default_output_dir, replacing_results
from gdpo_trl.eval.settings import EvaluationInputError, GenerationSettings
from tests.helpers.bad_inputs import assert_one_line_error, run_cli, snapshot

FAST = ["--model", "builtin:tiny", "--dataset", "sample", "--limit", "2", "--max_new_tokens", "4"]


def earlier_result(folder):
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text('{"metrics": {"pass@1": 0.5}}\n')
    (folder / "completions.jsonl").write_text('{"index": 0}\n')


@pytest.mark.parametrize("task", [[], ["--task", "bfcl"]])
def test_eval_into_a_folder_holding_a_result_is_refused(tmp_path, capsys, task):
    out = tmp_path / "out"
    earlier_result(out)
    if task:
        (out / "bfcl_summary.json").write_text("{}\n")
    before = snapshot(out)
    code, err = run_cli(eval_main, [*FAST[:2], *task, "--output_dir", str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", [str(out), "already holds an evaluation", "--overwrite"])
    assert snapshot(out) == before


def test_default_folder_keeps_results_apart_and_overwrite_replaces(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert eval_main(FAST) == 0
    first = tmp_path / "outputs" / "eval" / "builtin-tiny-sample-test-tok4-first2"
    before = snapshot(first)
    assert set(before) == {"summary.json", "completions.jsonl"}

    code, err = run_cli(eval_main, FAST, capsys)  # the same evaluation again: refused, before any model loads
    assert code == 2 and "already holds an evaluation" in err
    assert snapshot(first) == before

    assert eval_main([*FAST, "--rewards", "format"]) == 0  # other rewards: another folder
    other = json.loads((first.with_name(first.name + "-r-format") / "summary.json").read_text())
    assert other["rewards"] == ["format"] and snapshot(first) == before

    assert eval_main([*FAST, "--overwrite"]) == 0
    assert json.loads((first / "summary.json").read_text())["rewards"] == ["format", "correctness", "integer"]
    assert not list(first.glob(".*partial"))


def test_python_api_never_replaces_a_result_unless_asked(tmp_path):
    out = tmp_path / "out"
    earlier_result(out)
    before = snapshot(out)
    kwargs = dict(dataset="sample", limit=1, max_new_tokens=2, output_dir=out, progress=False)
    with pytest.raises(EvaluationInputError, match="already holds an evaluation"):
        evaluate("builtin:tiny", **kwargs)
    assert snapshot(out) == before
    with replacing_results():
        summary = evaluate("builtin:tiny", **kwargs)
    assert json.loads((out / "summary.json").read_text()) == summary


def test_default_folder_names_every_setting_that_changes_the_result(tmp_path):
    spec = resolve_model_spec("Qwen/Qwen2.5-1.5B-Instruct")
    greedy, sampled = GenerationSettings(), GenerationSettings(n=4, temperature=0.6, top_p=0.95)
    variants = {
        "defaults": default_output_dir(spec, "gsm8k", "test", greedy),
        "default_rewards_named": default_output_dir(
            spec, "gsm8k", "test", greedy, rewards=["format", "correctness", "integer"]
        ),
        "rewards": default_output_dir(spec, "gsm8k", "test", greedy, rewards=["correctness"]),
        "reward_path": default_output_dir(spec, "gsm8k", "test", greedy, rewards=["my_pkg.rewards.strict"]),
        "tokens": default_output_dir(spec, "gsm8k", "test", GenerationSettings(max_new_tokens=256)),
        "system_prompt": default_output_dir(spec, "gsm8k", "test", greedy, system_prompt="Think."),
        "other_prompt": default_output_dir(spec, "gsm8k", "test", greedy, system_prompt="Think hard."),
        "sampled": default_output_dir(spec, "gsm8k", "test", sampled),
        "sampled_seed": default_output_dir(spec, "gsm8k", "test", GenerationSettings(4, 0.6, 0.95, seed=3)),
        "data_seed": default_output_dir(spec, "synthetic", "test", greedy, dataset_seed=7),
        "rows": default_output_dir(spec, "toolrl", "test", greedy, dataset_path="data/rows.parquet"),
        "backend": default_output_dir(spec, "gsm8k", "test", greedy, backend="vllm", dtype="bfloat16"),
    }
    assert variants["defaults"] == variants["default_rewards_named"]
    assert variants["defaults"].name == "Qwen--Qwen2.5-1.5B-Instruct-gsm8k-test"  # unchanged for the defaults
    names = [path.name for key, path in variants.items() if key != "default_rewards_named"]
    assert len(set(names)) == len(names), names
    assert variants["rewards"].name.endswith("-r-correctness") and variants["tokens"].name.endswith("-tok256")
    assert variants["backend"].name.endswith("-vllm-bfloat16")


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--temperature", "nan"], ["temperature must be a finite number >= 0", "nan"]),
        (["--temperature", "inf"], ["temperature must be a finite number >= 0", "inf"]),
        (["--output_dir", "{tmp}/notes.txt"], ["notes.txt' is a file, not a folder", "choose another --output_dir"]),
        (["--output_dir", "{tmp}/notes.txt/eval"], ["cannot be created", "notes.txt' is a file"]),
    ],
)
def test_bad_sampling_or_output_file_fails_before_the_model_loads(tmp_path, capsys, monkeypatch, flags, words):
    """One line, exit 2, the file untouched; and before any model or data is loaded (loading is made to fail)."""
    import gdpo_trl.cli.evaluate as eval_cli

    monkeypatch.setattr(eval_cli, "evaluate", lambda **kw: pytest.fail("evaluate ran"))
    (tmp_path / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    code, err = run_cli(eval_main, [*FAST, "--output_dir", str(tmp_path / "eval"), *flags], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", words)
    assert snapshot(tmp_path) == before
