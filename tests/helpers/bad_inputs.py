"""Shared rows and runners of the bad-input tests (tests/cli/test_bad_inputs*.py, tests/eval/test_bad_inputs_eval.py):
a recipe, data files, what an earlier run leaves, a snapshot of a folder, and the one-line error checks."""

import json
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import save_file

from gdpo_trl.cli.train import main as train_main
from tests.helpers.checkpoints import make_checkpoint

BASE_RECIPE = {
    "model_name_or_path": "builtin:tiny",
    "dataset_name": "sample",
    "reward_funcs": ["format", "correctness", "integer"],
    "num_generations": 2,
    "per_device_train_batch_size": 2,
    "max_completion_length": 8,
    "max_steps": 1,
    "use_cpu": True,
    "bf16": False,
    "report_to": "none",
    "save_strategy": "no",
}


GOOD_ROW = {"question": "What is 6 times 7?", "answer": "6 * 7 = 42\n#### 42"}


def write_jsonl(path: Path, rows: list) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def data_file(kind: str, tmp: Path) -> str:
    """A GSM8K-shaped data file with one kind of fault."""
    if kind == "empty":
        (tmp / "empty.jsonl").write_text("")
        return str(tmp / "empty.jsonl")
    if kind == "malformed":
        (tmp / "bad.jsonl").write_text(json.dumps(GOOD_ROW) + '\n{"question": "q", "answer": \n')
        return str(tmp / "bad.jsonl")
    if kind == "tsv":  # .csv is read; tab-separated files are not
        (tmp / "data.tsv").write_text("question\tanswer\nq\t#### 1\n")
        return str(tmp / "data.tsv")
    answers = {"null": None, "number": 72, "words": "#### seventy-two", "units": "#### 5 dollars", "exp": "#### 1e3"}
    if kind in answers:
        return write_jsonl(tmp / f"{kind}.jsonl", [GOOD_ROW, {"question": "q?", "answer": answers[kind]}])
    if kind == "no_answer":
        return write_jsonl(tmp / "no_answer.jsonl", [{"question": "q?"}])
    if kind == "long_prompt":
        return write_jsonl(tmp / "long.jsonl", [GOOD_ROW, {**GOOD_ROW, "question": "x" * 20_000}, GOOD_ROW])
    raise AssertionError(kind)


def earlier_run(out: Path, kind: str) -> None:
    """Fill ``out`` with what an earlier (or broken) run left there."""
    if kind == "checkpoints":
        make_checkpoint(out, 2)
        make_checkpoint(out, 4)
    elif kind == "model":
        out.mkdir(parents=True)
        save_file({"w": torch.zeros(4)}, str(out / "model.safetensors"))
    elif kind == "broken":
        (out / "checkpoint-2").mkdir(parents=True)
        make_checkpoint(out, 4, skip=("trainer_state.json",))
    elif kind == "no_optimizer":
        make_checkpoint(out, 4, skip=("optimizer.pt",))
    else:
        raise AssertionError(kind)


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def fill(value, tmp: Path, out: Path):
    if isinstance(value, str):
        return value.replace("{tmp}", str(tmp)).replace("{out}", str(out))
    if isinstance(value, dict):
        return {k: fill(v, tmp, out) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, tmp, out) for v in value]
    return value


def run_cli(main, argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code, capsys.readouterr().err


def assert_one_line_error(err: str, prog: str, words: list[str]) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    line = errors[0]
    for word in words:
        assert word in line, f"{word!r} not in {line!r}"


def check_train_rejects(tmp_path, capsys, monkeypatch, overrides, flags, setup, words, code: int = 2) -> str:
    """Run gdpo train with one row's recipe and flags; assert exit ``code`` (2: an input error), one error line with
    ``words``, and an unchanged ``output_dir``. Returns the error output."""
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    out = tmp_path / "out"
    recipe = {**BASE_RECIPE, **fill(overrides or {}, tmp_path, out)}
    recipe = {k: v for k, v in recipe.items() if v is not None}
    if setup and setup.startswith("data:"):
        recipe["dataset_name"] = data_file(setup[5:], tmp_path)
    if setup and setup.startswith("run:"):
        earlier_run(out, setup[4:])
    config = tmp_path / "recipe.yaml"
    if setup and setup.startswith("bytes:"):  # a recipe file that is not UTF-8 text: the bytes, as latin-1
        config.write_bytes(setup[6:].encode("latin-1"))
    else:
        config.write_text(setup[4:] if setup and setup.startswith("raw:") else yaml.safe_dump(recipe))
    before = snapshot(out) if out.exists() else None

    flags = fill(flags, tmp_path, out)
    argv = ([] if "--config" in flags else ["--config", str(config)]) + ["--output_dir", str(out), *flags]
    status, err = run_cli(train_main, argv, capsys)

    assert status == code
    argparse_error = err.lstrip().startswith("usage:")  # a flag value argparse rejects itself (choices)
    assert_one_line_error(err, "gdpo train", words)
    if not argparse_error:
        assert "gdpo train: error: " in err
    assert (snapshot(out) if out.exists() else None) == before  # nothing written, nothing deleted
    return err


CALL = {"prompts": ["p"] * 2, "completions": ["a", "b"]}
