"""Tests for gdpo_trl.data.gsm8k: the shipped sample, local JSONL/parquet files, and input errors."""

import json
import os
import re

import pytest

from gdpo_trl.data import gsm8k
from gdpo_trl.data.gsm8k import (
    SAMPLE_PATH,
    SYSTEM_PROMPT,
    load_gsm8k,
    make_prompt,
    parse_gold_answer,
    to_gdpo_example,
)

# The Hub is unreachable here: make any accidental Hub call fail fast. gdpo_trl.data does not import `datasets`,
# so these are set before `datasets` reads them (unless another module imported it first).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# An integer literal as GSM8K writes it: optional minus, optional thousands commas.
INT_LITERAL = re.compile(r"-?(\d{1,3}(,\d{3})+|\d+)")

ROWS = [
    {"question": "Ann has 2 cats and gets 3 more. How many cats?", "answer": "2 + 3 = 5\n#### 5"},
    {"question": "A pen costs $4. How much do 3 pens cost?", "answer": "3 * 4 = 12\n#### 12"},
    {"question": "Tom had 10 apples and ate 4. How many are left?", "answer": "10 - 4 = 6\n#### 6"},
]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _sample_lines():
    return [json.loads(line) for line in SAMPLE_PATH.read_text().splitlines() if line.strip()]


def test_system_prompt_is_short_and_names_the_tags():
    assert len(SYSTEM_PROMPT) < 250
    for tag in ("<think>", "</think>", "<answer>", "</answer>"):
        assert tag in SYSTEM_PROMPT


def test_make_prompt_and_to_gdpo_example():
    assert make_prompt("Q?") == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Q?"}]
    assert to_gdpo_example(ROWS[1], 1) == {"prompt": make_prompt(ROWS[1]["question"]), "answer": "12"}


def test_parse_gold_answer_uses_last_marker_and_strips():
    assert parse_gold_answer("a #### 1\nb ####  1,200 \n") == "1,200"
    assert parse_gold_answer("x\n#### -7") == "-7"


@pytest.mark.parametrize("solution", ["no marker here", "nothing after ####   "])
def test_parse_gold_answer_errors_name_the_row(solution):
    with pytest.raises(ValueError, match=r"row 17\b") as info:
        parse_gold_answer(solution, row=17)
    assert solution[:10] in str(info.value)  # shows the start of the offending text


def test_sample_file_is_well_formed():
    lines = _sample_lines()
    assert len(lines) >= 40
    assert len({row["question"] for row in lines}) == len(lines), "duplicate questions in the sample"
    golds = []
    for row in lines:
        assert set(row) == {"question", "answer"}
        assert row["answer"].count("####") == 1
        gold = row["answer"].rsplit("####", 1)[1].strip()
        assert INT_LITERAL.fullmatch(gold), f"not an integer literal: {gold!r}"
        golds.append(int(gold.replace(",", "")))
    # The sample must exercise the formats GSM8K uses: thousands commas and negative answers.
    assert sum("," in row["answer"].rsplit("####", 1)[1] for row in lines) >= 2
    assert any(value < 0 for value in golds)


def test_load_sample():
    ds = load_gsm8k("sample")
    lines = _sample_lines()
    assert sorted(ds.column_names) == ["answer", "prompt"]
    assert len(ds) == len(lines)
    for example, raw in zip(ds, lines, strict=True):
        assert example["prompt"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": raw["question"]},
        ]
        int(example["answer"].replace(",", ""))  # parses as an integer, commas allowed


def test_load_sample_by_path_matches_sample_alias():
    assert load_gsm8k(str(SAMPLE_PATH))["answer"] == load_gsm8k("sample")["answer"]


def test_limit_takes_first_rows():
    full = load_gsm8k("sample")
    limited = load_gsm8k("sample", limit=5)
    assert len(limited) == 5
    assert limited["answer"] == full["answer"][:5]
    assert len(load_gsm8k("sample", limit=10_000)) == len(full)
    with pytest.raises(ValueError, match="limit"):
        load_gsm8k("sample", limit=-1)


def test_local_jsonl_drops_extra_columns(tmp_path):
    rows = [{**row, "id": i} for i, row in enumerate(ROWS)]
    ds = load_gsm8k(str(_write_jsonl(tmp_path / "data.jsonl", rows)), split="test")  # split ignored for files
    assert sorted(ds.column_names) == ["answer", "prompt"]
    assert ds["answer"] == ["5", "12", "6"]
    assert ds[2]["prompt"][1] == {"role": "user", "content": ROWS[2]["question"]}


def test_local_json_array(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(ROWS))
    assert load_gsm8k(str(path))["answer"] == ["5", "12", "6"]


def test_local_parquet(tmp_path):
    from datasets import Dataset

    path = tmp_path / "data.parquet"
    Dataset.from_list(ROWS).to_parquet(str(path))
    ds = load_gsm8k(str(path), limit=2)
    assert ds["answer"] == ["5", "12"]
    assert ds[0]["prompt"][0]["content"] == SYSTEM_PROMPT


def test_missing_column_error_names_column_and_found_columns(tmp_path):
    path = _write_jsonl(tmp_path / "no_answer.jsonl", [{"question": "q", "solution": "1 #### 1"}])
    with pytest.raises(ValueError, match=r"'answer'") as info:
        load_gsm8k(str(path))
    message = str(info.value)
    assert str(path) in message
    assert "'solution'" in message  # the columns that were found
    assert "'question'" not in message.split("found")[0]  # only the missing column is reported as missing


def test_bad_row_error_names_row_index(tmp_path):
    rows = [ROWS[0], ROWS[1], {"question": "q", "answer": "the answer is 4"}]
    path = _write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ValueError, match=r"row 2\b"):
        load_gsm8k(str(path))


def test_nonexistent_path(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        load_gsm8k(str(missing))


def test_unsupported_extension_lists_supported(tmp_path):
    path = tmp_path / "data.tsv"  # .csv is read; tab-separated files are not
    path.write_text("question\tanswer\nq\t#### 1\n")
    with pytest.raises(ValueError, match=r"\.tsv") as info:
        load_gsm8k(str(path))
    for suffix in (".json", ".jsonl", ".parquet", ".csv"):
        assert suffix in str(info.value)


def test_hub_id_goes_to_load_dataset(monkeypatch):
    # The Hub is unreachable, so check only that a Hub id is passed through with its config and split.
    import datasets

    calls = []

    def fake_load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return datasets.Dataset.from_list(ROWS)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    ds = load_gsm8k("openai/gsm8k", "test", config="socratic")
    assert calls == [(("openai/gsm8k", "socratic"), {"split": "test"})]
    assert ds["answer"] == ["5", "12", "6"]


def test_sample_path_is_inside_the_package():
    assert SAMPLE_PATH.is_file()
    assert str(SAMPLE_PATH.parent) == os.path.dirname(gsm8k.__file__)
