"""gdpo eval --no_system_prompt: the data source's system message dropped, so the chat template applies the model's
own default (study H9 scores the released Qwen model that way); contradicting --system_prompt is refused."""

import json

import pytest

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.eval.run import EvaluationInputError, evaluate


def test_prompts_go_without_a_system_message(tmp_path):
    out = tmp_path / "eval"
    eval_main(["--model", "builtin:tiny", "--dataset", "sample", "--limit", "2", "--max_new_tokens", "4",
               "--no_system_prompt", "--output_dir", str(out)])  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["data"]["no_system_prompt"] is True and summary["data"]["system_prompt"] is None
    rows = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert len(rows) == 2


def test_the_prompt_seen_by_the_model_has_no_system_turn(monkeypatch, tmp_path):
    seen = {}

    def record(spec, problems, settings, rewards, **kwargs):
        seen["prompts"] = list(problems["prompt"])
        raise SystemExit(0)

    monkeypatch.setattr("gdpo_trl.eval.run.generate_and_score", record)
    with pytest.raises(SystemExit):
        evaluate("builtin:tiny", dataset="sample", limit=3, no_system_prompt=True, output_dir=tmp_path / "o")
    assert seen["prompts"] and all(m["role"] != "system" for prompt in seen["prompts"] for m in prompt)
    assert [m["role"] for m in seen["prompts"][0]] == ["user"]


def test_both_flags_are_refused():
    with pytest.raises(EvaluationInputError, match="contradict each other"):
        evaluate("builtin:tiny", dataset="sample", limit=1, system_prompt="x", no_system_prompt=True)
