"""Any prompt dataset: a file, folder or Hub-style source whose rows have a `prompt` is used as it is, every
other column kept for the rewards; GSM8K's question/answer keep their path; the columns decide or dataset_format
does; the line gdpo train prints says which; a dataset of neither kind is refused naming its columns, and the file
alone tells (no `datasets`, no torch) for gdpo train's early check."""

import json
import subprocess
import sys

import datasets
import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.formats import check_local_dataset, choose_format, missing_data_line, peek_columns
from gdpo_trl.data.prompt_rows import prompt_problem
from gdpo_trl.data.sources import load_source, load_source_described

CHAT = [{"role": "user", "content": "Name a red fruit."}]
ROWS = [
    {"prompt": CHAT, "color": "red"},
    {"prompt": [{"role": "user", "content": "Name a blue bird."}], "color": "blue"},
]


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_chat_prompts_are_used_as_they_are_with_every_column(tmp_path):
    rows, line = load_source_described(str(write_jsonl(tmp_path / "p.jsonl", ROWS)))
    assert rows.to_list() == ROWS
    assert line == (
        f"data: {tmp_path / 'p.jsonl'}: 2 rows with a 'prompt' column (chat messages), used as they are; the rewards "
        "also receive color"
    )


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json", ".jsonl"])
def test_text_prompts_in_each_file_format(tmp_path, suffix):
    table = {"prompt": ["Name a red fruit.", "Name a blue bird."], "color": ["red", "blue"]}
    records = [{"prompt": p, "color": c} for p, c in zip(*table.values(), strict=True)]
    path = tmp_path / f"p{suffix}"
    if suffix == ".csv":
        path.write_text("prompt,color\nName a red fruit.,red\nName a blue bird.,blue\n")
    elif suffix == ".parquet":
        datasets.Dataset.from_dict(table).to_parquet(str(path))
    elif suffix == ".json":
        path.write_text(json.dumps(records))
    else:
        write_jsonl(path, records)
    assert peek_columns(str(path)) == ["prompt", "color"]  # read from the file itself
    rows, line = load_source_described(str(path), size=1)
    assert rows.to_list() == [{"prompt": "Name a red fruit.", "color": "red"}]
    assert "1 row with a 'prompt' column (text), used as they are; the rewards also receive color" in line


def test_a_folder_of_splits(tmp_path):
    write_jsonl(tmp_path / "data" / "train.jsonl", ROWS)
    write_jsonl(tmp_path / "data" / "test.jsonl", ROWS[:1])
    assert peek_columns(str(tmp_path / "data")) == ["prompt", "color"]
    assert len(load_source(str(tmp_path / "data"), split="test")) == 1
    assert load_source(str(tmp_path / "data"))["color"] == ["red", "blue"]


def test_system_prompt_on_chat_and_on_text_prompts(tmp_path):
    chat, line = load_source_described(str(write_jsonl(tmp_path / "c.jsonl", ROWS)), system_prompt="Be brief.")
    assert chat["prompt"][0] == [{"role": "system", "content": "Be brief."}, *CHAT]
    assert "with the recipe's system_prompt" in line
    text = load_source(str(write_jsonl(tmp_path / "t.jsonl", [{"prompt": "Hi", "k": 1}])), system_prompt="S")
    assert text.to_list() == [
        {"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}], "k": 1}
    ]


def test_gsm8k_rows_keep_their_path_and_say_what_they_drop(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [{"question": "6 x 7?", "answer": "So 42.\n#### 42", "topic": "x"}])
    rows, line = load_source_described(str(path))
    assert sorted(rows.column_names) == ["answer", "prompt"] and rows[0]["answer"] == "42"
    assert line == (
        f"data: {path}: 1 row of GSM8K (question/answer): a chat prompt with the system prompt, the gold number in "
        "'answer'; dropped columns topic (a 'prompt' column keeps every column)"
    )


def test_the_columns_decide_or_dataset_format_does():
    assert choose_format(["prompt", "answer"], "auto", "d") == "prompt"
    assert choose_format(["question", "answer", "x"], "auto", "d") == "gsm8k"
    assert choose_format(["prompt", "question", "answer"], "prompt", "d") == "prompt"
    with pytest.raises(InputError, match=r"^dataset 'd' has a 'prompt' column of its own beside GSM8K's"):
        choose_format(["prompt", "question", "answer"], "auto", "d")
    with pytest.raises(InputError, match=r"^GSM8K source 'd' is missing required column\(s\) \['question'\]"):
        choose_format(["prompt", "answer"], "gsm8k", "d")
    with pytest.raises(InputError, match=r"^dataset_format 'chat': use one of auto, prompt, gsm8k\.$"):
        choose_format(["prompt"], "chat", "d")


def test_neither_kind_is_refused_naming_the_columns(tmp_path):
    path = write_jsonl(tmp_path / "n.jsonl", [{"text": "Name a red fruit.", "label": "red"}])
    expected = (
        f"dataset {str(path)!r} has neither a 'prompt' column (text or chat messages, used as it is, every other column "
        "passed to the rewards) nor GSM8K's 'question' and 'answer'; found columns ['text', 'label']: rename the "
        "column holding the prompts to 'prompt'."
    )
    with pytest.raises(InputError) as loaded:
        load_source(str(path))
    with pytest.raises(InputError) as early:
        check_local_dataset(str(path))
    assert str(loaded.value) == str(early.value) == expected


@pytest.mark.parametrize(
    ("prompt", "words"),
    [
        ("  ", "is empty"),
        (17, "is '17' (int); it must be text or a list of chat messages"),
        ([], "it must be text or a list of chat messages"),
        ([{"content": "hi"}], "not a chat message"),
    ],
)
def test_a_bad_prompt_is_named_by_its_row(tmp_path, prompt, words):
    assert words in prompt_problem(prompt)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": "fine"}) + "\n" + json.dumps({"prompt": prompt}) + "\n")
    if isinstance(prompt, str):  # datasets reads a column of one kind only: a string here
        with pytest.raises(InputError, match=rf"^dataset '{path}' row 1: 'prompt' is empty\. Fix or drop that row\.$"):
            load_source(str(path))


def test_a_missing_file_is_named_with_the_closest_one(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "prompts.jsonl", ROWS)
    monkeypatch.chdir(tmp_path)
    assert missing_data_line("promts.jsonl") == "data file not found: promts.jsonl (did you mean 'prompts.jsonl'?)"
    assert missing_data_line("other/x.jsonl") == "data file not found: other/x.jsonl (./ has no 'other'.)"
    assert missing_data_line("openai/gsm8k") is None  # a Hub id
    assert missing_data_line("prompts.jsonl") is None


def test_peeking_imports_neither_datasets_nor_torch(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", ROWS)
    code = (
        "import sys\nfrom gdpo_trl.data.formats import peek_columns\n"
        f"print(peek_columns({str(path)!r}), sorted({{'datasets', 'torch'}} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert out.strip() == "['prompt', 'color'] []"
