"""The eight mistakes of a new user bringing their own task (a JSONL of prompts, a rewards file, the
cpu/your_task recipe), each answered by ``gdpo train`` in one line, exit status 2, before torch, TRL, transformers,
accelerate or datasets is imported. Before, two of the eight were (1.7 s); the others took 100-160 s at a load of 18,
and the model folder without a tokenizer was reported as having "no chat template".

Each row runs in a fresh interpreter in a folder holding the example task's files (examples/your_task/), a model
folder without tokenizer files and a data file without a prompt column; the probe then lists the heavy modules it
had loaded when the error came. Each row prints its wall time (``pytest -s``), quoted in docs/your_task.md with the
load it was measured at; it is not asserted (it depends on the machine's load).
"""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_fail_fast import HEAVY, PROBE  # the fresh interpreter that lists the heavy modules it loaded

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ["train", "--config", "cpu/your_task"]
# (id, arguments after the recipe, the words of the one error line)
MISTAKES = [
    ("misspelt_flag", ["--max_step", "4"], ["--max_step", "did you mean max_steps"]),
    ("value_of_wrong_type", ["--learning_rate", "fast"], ["--learning_rate", "invalid float value: 'fast'"]),
    (
        "reward_file_missing",
        ["--reward_funcs", "reward.py:says_color", "rewards.py:brevity"],
        ["reward path 'reward.py:says_color'", "there is no file reward.py"],
    ),
    (
        "reward_function_misspelt",
        ["--reward_funcs", "rewards.py:says_colour", "rewards.py:brevity"],
        ["'rewards.py:says_colour'", "says_color"],
    ),
    ("data_file_missing", ["--dataset_name", "promts.jsonl"], ["data file not found: promts.jsonl", "prompts.jsonl"]),
    (
        "no_prompt_column",
        ["--dataset_name", "texts.jsonl"],
        ["'texts.jsonl' has no 'prompt' column", "found columns ['text', 'color']"],
    ),
    ("model_without_tokenizer", ["--model_name_or_path", "my_model"], ["no tokenizer files in my_model"]),
    (
        "model_folder_mistyped",
        ["--model_name_or_path", "./my_modle"],
        ["'./my_modle' is not a folder", "did you mean", "my_model"],
    ),
]


@pytest.fixture(scope="module")
def task_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("your_task")
    for name in ("prompts.jsonl", "rewards.py"):
        shutil.copy(ROOT / "examples" / "your_task" / name, folder / name)
    rows = [{"text": "Name a red fruit.", "color": "red"}, {"text": "Name a blue bird.", "color": "blue"}]
    (folder / "texts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    model = folder / "my_model"  # a model saved without its tokenizer (model.save_pretrained alone)
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    (model / "model.safetensors").write_bytes(b"")
    return folder


def test_eight_mistakes_are_named_by_their_test():
    assert len(MISTAKES) == 8 and len({row[0] for row in MISTAKES}) == 8


@pytest.mark.parametrize(("flags", "words"), [row[1:] for row in MISTAKES], ids=[row[0] for row in MISTAKES])
def test_each_mistake_is_one_line_before_torch(task_folder, flags, words):
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *RECIPE, *flags],
        cwd=task_folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.perf_counter() - start
    assert result.stdout.strip() == "exit 2 loaded []", result.stdout + result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert errors[0].startswith("gdpo train: error: "), errors[0]
    for word in words:
        assert word in errors[0], f"{word!r} not in {errors[0]!r}"
    print(f"{seconds:.2f} s  {errors[0]}")
