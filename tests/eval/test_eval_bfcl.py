"""BFCL evaluation: our prompt rendering and parsing around bfcl-eval's own AST checker, on completions whose
verdicts are known by hand, on completions built from BFCL's possible answers, and end to end on builtin:tiny."""

import json

import pytest

# bfcl-eval is installed with --no-deps into a folder of its own (see gdpo_trl/eval/bfcl.py); without it these
# tests cannot run at all: they skip, or fail in CI (tests/helpers/requirements.py).
from tests.helpers.requirements import require_bfcl

require_bfcl()

from gdpo_trl.eval.bfcl import (  # noqa: E402
    CATEGORIES,
    evaluate_bfcl,
    format_report,
    load_category,
    render_prompt,
    score_completion,
)
from gdpo_trl.eval.bfcl_render import answer_completion  # noqa: E402


def completion(*calls, think=True):
    lines = "\n".join(json.dumps({"name": name, "parameters": params}) for name, params in calls)
    return ("<think>ok</think>\n" if think else "") + f"<tool_call>\n{lines}\n</tool_call>"


@pytest.fixture(scope="module")
def entries():
    return {category: load_category(category, limit=3) for category in CATEGORIES}


def test_entries_and_prompt_rendering(entries):
    simple = entries["simple"][0]
    assert simple["id"] == "simple_python_0" and len(entries["parallel"]) == 3
    prompt = render_prompt(simple)
    assert [m["role"] for m in prompt] == ["system", "user"]
    assert '"name": "calculate_triangle_area"' in prompt[0]["content"] and "<tool_call>" in prompt[0]["content"]
    assert prompt[1]["content"] == simple["question"][0][0]["content"]


@pytest.mark.parametrize(
    ("text", "valid", "formatted"),
    [
        (completion(("calculate_triangle_area", {"base": 10, "height": 5})), True, True),
        (completion(("calculate_triangle_area", {"base": 10, "height": 5, "unit": "units"})), True, True),
        (completion(("calculate_triangle_area", {"base": 10, "height": 5}), think=False), True, False),
        (completion(("calculate_triangle_area", {"base": 11, "height": 5})), False, True),  # wrong value
        (completion(("calculate_triangle_area", {"base": "10", "height": 5})), False, True),  # wrong type
        (completion(("calculate_triangle_area", {"base": 10})), False, True),  # required parameter missing
        (completion(("triangle_area", {"base": 10, "height": 5})), False, True),  # wrong function
        (
            completion(("calculate_triangle_area", {"base": 10, "height": 5}), ("calculate_triangle_area", {})),
            False,
            True,
        ),
        ("<think>ok</think>\nThe area is 25.", False, False),  # no call at all
        ('<think>ok</think>\n<tool_call>\n{"name": "calculate_triangle_area"}\n</tool_call>', False, True),
    ],
)
def test_simple_verdicts_known_by_hand(entries, text, valid, formatted):
    row = score_completion(entries["simple"][0], "simple", text)
    assert (row["valid"], row["format"]) == (valid, formatted)
    assert (row["error"] is None) == valid


def test_parallel_any_order_but_all_calls(entries):
    entry = entries["parallel"][0]  # spotify.play twice: Taylor Swift 20, Maroon 5 15
    a = ("spotify.play", {"artist": "Taylor Swift", "duration": 20})
    b = ("spotify.play", {"artist": "Maroon 5", "duration": 15})
    assert score_completion(entry, "parallel", completion(a, b))["valid"]
    assert score_completion(entry, "parallel", completion(b, a))["valid"]
    assert not score_completion(entry, "parallel", completion(a))["valid"]
    assert not score_completion(entry, "parallel", completion(a, a))["valid"]


def _from_possible_answer(entry):
    """A right answer built from BFCL's possible answers (tests/eval/test_eval_bfcl_all.py covers every entry)."""
    return answer_completion(entry)


def test_answers_built_from_possible_answers_all_pass_and_report_is_per_category(tmp_path):
    def generate(prompts):
        by_user = {render_prompt(e)[1]["content"]: e for c in CATEGORIES for e in load_category(c, 5)}
        return [_from_possible_answer(by_user[p[1]["content"]]) for p in prompts]

    summary = evaluate_bfcl(limit=5, generate_fn=generate, output_dir=tmp_path)
    assert summary["categories"] == {c: {"n": 5, "accuracy": 1.0, "format_rate": 1.0} for c in CATEGORIES}
    assert summary["overall"] == {"n": 20, "accuracy": 1.0, "format_rate": 1.0}
    rows = [json.loads(line) for line in (tmp_path / "bfcl_completions.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and all(row["valid"] for row in rows)
    assert "parallel_multiple" in format_report(summary)


def test_mixed_verdicts_give_the_right_rates():
    wrong = "<think>x</think>\nno call"

    def generate(prompts):  # right for the first entry of each category, wrong for the second
        return [_from_possible_answer(load_category(c, 1)[0]) if i == 0 else wrong for i, c in enumerate([cat] * 2)]

    for cat in ("simple", "parallel_multiple"):
        summary = evaluate_bfcl(categories=[cat], limit=2, generate_fn=generate)
        assert summary["categories"][cat] == {"n": 2, "accuracy": 0.5, "format_rate": 0.5}


def test_errors():
    with pytest.raises(ValueError, match="unknown BFCL category"):
        load_category("java")
    with pytest.raises(ValueError, match="unknown or no BFCL categories"):
        evaluate_bfcl("builtin:tiny", categories=["live_simple"])
    with pytest.raises(ValueError, match="2 completions for 1 prompts"):
        evaluate_bfcl(categories=["simple"], limit=1, generate_fn=lambda prompts: ["a", "b"])


def test_end_to_end_on_builtin_tiny(tiny_model_path):
    # 8 new tokens of a character-level random model cannot even spell "<tool_call>": every verdict is known.
    summary = evaluate_bfcl(tiny_model_path, limit=2, max_new_tokens=8, batch_size=4)
    assert summary["categories"] == {c: {"n": 2, "accuracy": 0.0, "format_rate": 0.0} for c in CATEGORIES}


def test_cli_prints_the_table(tiny_model_path, tmp_path, capsys):
    from gdpo_trl.cli.evaluate import main

    argv = ["--task", "bfcl", "--model", tiny_model_path, "--categories", "simple", "--limit", "1"]
    assert main([*argv, "--max_new_tokens", "4", "--output_dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ["simple", "1", "0.000", "0.000"]
    summary = json.loads((tmp_path / "bfcl_summary.json").read_text())
    assert summary["overall"]["n"] == 1 and summary["model"] == tiny_model_path
    rows = [json.loads(line) for line in (tmp_path / "bfcl_completions.jsonl").read_text().splitlines()]
    assert [(row["category"], row["valid"]) for row in rows] == [("simple", False)]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--temperature", "0.6"], "--temperature only applies to --task dataset"),
        (["--dataset", "sample", "--n", "2"], "--dataset, --n only apply to --task dataset"),
        (["--limit", "0"], "limit must be >= 1"),
        (["--categories", "java"], "invalid choice: 'java'"),
        (["--batch_size", "0"], "batch_size must be >= 1"),
    ],
)
def test_cli_refuses_what_bfcl_does_not_read(extra, message, capsys):
    from gdpo_trl.cli.evaluate import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--task", "bfcl", "--model", "builtin:tiny", *extra])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_cli_categories_need_the_bfcl_task(capsys):
    from gdpo_trl.cli.evaluate import main

    with pytest.raises(SystemExit):
        main(["--model", "builtin:tiny", "--dataset", "sample", "--categories", "simple"])
    assert "--categories only applies to --task bfcl" in capsys.readouterr().err


def test_cli_without_bfcl_eval_says_how_to_install(tiny_model_path, monkeypatch, capsys):
    import sys

    from gdpo_trl.cli.evaluate import main

    monkeypatch.setitem(sys.modules, "bfcl_eval.constants.eval_config", None)  # makes its import fail
    with pytest.raises(SystemExit) as exit_info:
        main(["--task", "bfcl", "--model", tiny_model_path, "--limit", "1"])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("gdpo eval: error: BFCL evaluation needs bfcl-eval: pip install --no-deps")
