"""Tests for gdpo_trl.eval and gdpo eval, on the tiny local model and the shipped GSM8K sample (offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdpo_trl.cli.evaluate import main
from gdpo_trl.eval import (
    EvaluationInputError,
    GenerationSettings,
    completion_length,
    default_output_dir,
    evaluate,
    resolve_model_spec,
    summarize,
    vllm_available,
)

FAST = dict(dataset="sample", limit=6, max_new_tokens=16, batch_size=4, progress=False)


def _read_rows(output_dir) -> list[dict]:
    with open(Path(output_dir) / "completions.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _row(correctness, fmt=None, integer=None, num_tokens=None, truncated=None) -> dict:
    """A completions.jsonl row with chosen per-sample rewards (format and integer default to correctness)."""
    k = len(correctness)
    fmt, integer = fmt or correctness, integer or correctness
    return {
        "completions": ["x"] * k,
        "rewards": [
            {"format": f, "correctness": c, "integer": i} for f, c, i in zip(fmt, correctness, integer, strict=True)
        ],
        "num_tokens": num_tokens or [10] * k,
        "truncated": truncated or [False] * k,
    }


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


# --- the pure parts --------------------------------------------------------------------------------------------


def test_summarize_known_values():
    rows = [
        _row([1.0, 0.0], fmt=[1.0, 1.0], integer=[1.0, 0.0], num_tokens=[4, 8], truncated=[False, True]),
        _row([0.0, 1.0], fmt=[0.0, 1.0], integer=[1.0, 1.0], num_tokens=[10, 10], truncated=[False, False]),
    ]
    metrics = summarize(rows)
    assert metrics == {
        "pass@1": 0.5,
        "format_rate": 0.75,
        "integer_rate": 0.75,
        "mean_completion_tokens": 8.0,
        "truncated_fraction": 0.25,
        "num_problems": 2,
        "num_samples": 4,
    }


def test_summarize_weighs_problems_equally():
    # 1/1 correct on one problem, 0/3 on the other: pass@1 is (1 + 0) / 2, not 1 / 4.
    metrics = summarize([_row([1.0]), _row([0.0, 0.0, 0.0])])
    assert metrics["pass@1"] == 0.5
    assert metrics["num_samples"] == 4


def test_summarize_rejects_empty():
    with pytest.raises(ValueError, match="no problems"):
        summarize([])
    with pytest.raises(ValueError, match="at least one completion"):
        summarize([_row([])])


def test_completion_length_counts_up_to_first_eos():
    assert completion_length([5, 6, 2, 0, 0], {2}) == (3, False)
    assert completion_length([5, 6, 7], {2}) == (3, True)
    assert completion_length([9, 5, 9], {2, 9}) == (1, False)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n=2), "greedy"),
        (dict(n=0), "n must be"),
        (dict(temperature=1.0, top_p=0.0), "top_p"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(temperature=-1.0), "temperature"),
    ],
)
def test_generation_settings_validation(kwargs, message):
    with pytest.raises(EvaluationInputError, match=message):
        GenerationSettings(**kwargs)


def test_default_output_dir(tmp_path):
    from tests.helpers.checkpoints import make_checkpoint

    checkpoint = make_checkpoint(tmp_path / "run", 5)  # a config.json and weights that add up
    greedy = GenerationSettings()
    spec = resolve_model_spec(str(checkpoint))
    assert default_output_dir(spec, "sample", "test", greedy) == checkpoint / "eval-sample-test"
    sampled = GenerationSettings(n=4, temperature=0.6, top_p=0.95)
    assert default_output_dir(spec, "data/my.jsonl", "test", sampled, 50).name == "eval-my-t0.6-p0.95-n4-first50"
    # A single file has no splits: its name is not followed by one (eval-test-test-... for test.jsonl).
    assert default_output_dir(spec, "DATA/test.jsonl", "test", GenerationSettings()).name == "eval-test"
    hub = resolve_model_spec("Qwen/Qwen2.5-1.5B-Instruct")
    assert default_output_dir(hub, "openai/gsm8k", "test", greedy) == Path(
        "outputs/eval/Qwen--Qwen2.5-1.5B-Instruct-gsm8k-test"
    )


def test_resolve_rejects_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "checkpoint-10").mkdir()
    (tmp_path / "checkpoint-9").mkdir()
    with pytest.raises(EvaluationInputError, match="latest checkpoint is .*checkpoint-10"):
        resolve_model_spec(str(tmp_path))


# --- end to end on the tiny model ------------------------------------------------------------------------------


def test_summary_matches_completions(tiny_model_path, tmp_path):
    summary = evaluate(tiny_model_path, output_dir=tmp_path, **FAST)
    rows = _read_rows(tmp_path)
    samples = [(row, i) for row in rows for i in range(len(row["completions"]))]
    metrics = summary["metrics"]
    assert metrics["num_problems"] == len(rows) == 6
    assert metrics["num_samples"] == len(samples) == 6
    assert metrics["pass@1"] == pytest.approx(_mean(r["rewards"][i]["correctness"] for r, i in samples))
    assert metrics["format_rate"] == pytest.approx(_mean(r["rewards"][i]["format"] for r, i in samples))
    assert metrics["integer_rate"] == pytest.approx(_mean(r["rewards"][i]["integer"] for r, i in samples))
    assert metrics["mean_completion_tokens"] == pytest.approx(_mean(r["num_tokens"][i] for r, i in samples))
    assert metrics["truncated_fraction"] == pytest.approx(_mean(r["truncated"][i] for r, i in samples))
    # A truncated completion used every allowed token; one that stopped at EOS is shorter.
    for row, i in samples:
        assert (row["num_tokens"][i] == 16) if row["truncated"][i] else (row["num_tokens"][i] <= 16)
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["generation"]["backend"] == "transformers"
    assert summary["generation"]["temperature"] == 0.0


def test_a_used_folder_is_refused_before_generating(tiny_model_path, tmp_path, monkeypatch):
    """The Python API keeps earlier results too: a second evaluation into the same folder (given, or the default for
    the same settings) is refused before any completion is generated; another reward set gets its own folder."""
    import shutil

    from gdpo_trl.core.errors import InputError
    from gdpo_trl.eval import run

    model = shutil.copytree(tiny_model_path, tmp_path / "model")  # the default folder lies inside the model's
    evaluate(str(model), **FAST)
    written = [p.parent for p in model.glob("eval-*/summary.json")]
    assert len(written) == 1

    def no_generation(*args, **kwargs):
        raise AssertionError("generated before refusing the folder")

    monkeypatch.setattr(run, "generate_and_score", no_generation)
    with pytest.raises(InputError, match="already holds"):
        evaluate(str(model), **FAST)
    assert (written[0] / "summary.json").is_file()
    with pytest.raises(AssertionError, match="generated before"):  # other rewards: a folder of its own
        evaluate(str(model), rewards=["format"], **FAST)


def test_sampling_n2_is_reproducible(tiny_model_path, tmp_path):
    kwargs = dict(FAST, limit=3, n=2, temperature=1.0, top_p=0.95, seed=7)
    evaluate(tiny_model_path, output_dir=tmp_path / "a", **kwargs)
    evaluate(tiny_model_path, output_dir=tmp_path / "b", **kwargs)
    first, second = _read_rows(tmp_path / "a"), _read_rows(tmp_path / "b")
    assert all(len(row["completions"]) == 2 and len(row["rewards"]) == 2 for row in first)
    assert first == second


@pytest.fixture(scope="module")
def lora_adapter(tiny_model_path, tmp_path_factory):
    """A LoRA adapter on the tiny model whose B matrices are non-zero, so it changes the model's outputs."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                # PEFT initialises B to zero (a no-op adapter); large values make it change the greedy tokens.
                param.normal_(0.0, 2.0)
    path = tmp_path_factory.mktemp("lora")
    model.save_pretrained(path)
    AutoTokenizer.from_pretrained(tiny_model_path).save_pretrained(path)
    return path


def test_lora_adapter_changes_completions(tiny_model_path, lora_adapter, tmp_path):
    kwargs = dict(FAST, limit=3)
    base = evaluate(tiny_model_path, output_dir=tmp_path / "base", **kwargs)
    via_flag = evaluate(tiny_model_path, adapter=str(lora_adapter), output_dir=tmp_path / "flag", **kwargs)
    as_model = evaluate(str(lora_adapter), output_dir=tmp_path / "model", **kwargs)

    assert base["model"]["adapter"] is None
    assert via_flag["model"]["adapter"] == as_model["model"]["adapter"] == str(lora_adapter)
    assert as_model["model"]["base_model"] == tiny_model_path  # read from adapter_config.json
    assert as_model["model"]["tokenizer"] == str(lora_adapter)  # the adapter folder holds a tokenizer
    completions = {
        name: [row["completions"] for row in _read_rows(tmp_path / name)] for name in ("base", "flag", "model")
    }
    assert completions["flag"] == completions["model"]  # greedy: the two ways of loading give the same model
    assert completions["flag"] != completions["base"]


def test_adapter_twice_is_an_error(lora_adapter):
    with pytest.raises(EvaluationInputError, match="itself a LoRA adapter"):
        resolve_model_spec(str(lora_adapter), adapter=str(lora_adapter))


# --- the command line ------------------------------------------------------------------------------------------


def _cli_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("gdpo eval: error: ")
    assert "Traceback" not in message
    return message


def test_cli_bad_model_path(capsys, tmp_path):
    message = _cli_error(capsys, ["--model", str(tmp_path / "missing"), "--dataset", "sample"])
    assert "is not a folder" in message and "'missing'" in message and "it holds no folder" in message


def test_cli_dataset_missing_column(capsys, tiny_model_path, tmp_path):
    data = tmp_path / "questions.jsonl"
    data.write_text(json.dumps({"question": "What is 1 + 1?"}) + "\n")
    message = _cli_error(capsys, ["--model", tiny_model_path, "--dataset", str(data)])
    assert "'answer'" in message


def test_cli_missing_dataset_file(capsys, tiny_model_path, tmp_path):
    message = _cli_error(capsys, ["--model", tiny_model_path, "--dataset", str(tmp_path / "nope.jsonl")])
    assert "not found" in message


def test_cli_greedy_with_n2(capsys, tiny_model_path):
    message = _cli_error(capsys, ["--model", tiny_model_path, "--dataset", "sample", "--n", "2"])
    assert "greedy" in message


def test_cli_runs_and_prints_summary(capsys, tmp_path):
    argv = ["--model", "builtin:tiny", "--dataset", "synthetic", "--limit", "2", "--max_new_tokens", "4"]
    assert main([*argv, "--output_dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "pass@1:" in out and str(tmp_path) in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["model"]["model"] == "builtin:tiny"
    assert summary["data"]["dataset"] == "synthetic"
    assert summary["metrics"]["num_problems"] == 2


@pytest.mark.skipif(vllm_available(), reason="vLLM is installed here")
def test_cli_vllm_backend_without_vllm(capsys, tiny_model_path):
    message = _cli_error(capsys, ["--model", tiny_model_path, "--dataset", "sample", "--backend", "vllm"])
    assert "needs vLLM" in message


def test_mistyped_local_path_is_not_sent_to_the_hub(tmp_path, monkeypatch):
    (tmp_path / "outputs").mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "gdpo-type").mkdir()
    with pytest.raises(EvaluationInputError, match="did you mean 'outputs/gdpo-type'"):
        resolve_model_spec("outputs/gdpo-typo")
