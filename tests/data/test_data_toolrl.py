"""The ToolRL loader: the shipped sample's shape and coverage, local files in both column layouts, and errors."""

import json

import pytest

from gdpo_trl.data.toolrl import FORMAT_INSTRUCTIONS, load_toolrl, make_prompt
from gdpo_trl.rewards.toolcall import parse_tool_calls, tool_correctness, tool_format

PROMPT = make_prompt(
    [{"name": "ping", "description": "Ping.", "parameters": {"type": "object", "properties": {}}}], "Ping!"
)
GOLD = '<think>...</think>\n<tool_call>\n{"name": "ping", "parameters": {}}\n</tool_call>'


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_sample_has_the_toolrl_shape_and_covers_every_kind_of_gold():
    ds = load_toolrl("sample")
    assert len(ds) >= 24 and ds.column_names == ["prompt", "answer"]
    kinds = {"call": 0, "response": 0, "both": 0, "multi": 0, "no_params": 0}
    for row in ds:
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert row["prompt"][0]["content"].endswith(FORMAT_INSTRUCTIONS)
        gold = row["answer"]
        assert gold.startswith("<think>...</think>\n")
        calls = parse_tool_calls(gold) if "<tool_call>" in gold else []
        for call in calls:  # every gold tool is listed in the system message
            assert f'"name": "{call["name"]}"' in row["prompt"][0]["content"]
        has_response = "<response>" in gold
        kinds["both" if calls and has_response else "call" if calls else "response"] += 1
        kinds["multi"] += len(calls) > 1
        kinds["no_params"] += any(call["parameters"] == {} for call in calls)
        # The gold itself is a perfect completion under both rewards.
        assert tool_format([gold], answer=[gold]) == [1.0]
        assert tool_correctness([gold], answer=[gold]) == [3.0 if calls else 0.0]
    assert min(kinds.values()) >= 3, kinds


def test_local_files_in_our_layout_and_in_verl_layout(tmp_path):
    ours = _write_jsonl(tmp_path / "ours.jsonl", [{"prompt": PROMPT, "answer": GOLD, "extra": 1}] * 3)
    ds = load_toolrl(ours, limit=2)
    assert len(ds) == 2 and ds.column_names == ["prompt", "answer"] and ds[0] == {"prompt": PROMPT, "answer": GOLD}
    verl = {
        "data_source": "rlla",
        "prompt": PROMPT,
        "ability": "x",
        "reward_model": {"ground_truth": GOLD, "style": "rule"},
    }
    import datasets

    path = tmp_path / "train.parquet"
    datasets.Dataset.from_list([verl, verl]).to_parquet(str(path))
    ds = load_toolrl(str(path))
    assert len(ds) == 2 and ds[1] == {"prompt": PROMPT, "answer": GOLD}
    json_path = tmp_path / "rows.json"
    json_path.write_text(json.dumps([{"prompt": PROMPT, "ground_truth": GOLD}]))
    assert load_toolrl(str(json_path))[0]["answer"] == GOLD


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"prompt": "hi", "answer": GOLD}, "non-empty list"),
        ({"prompt": [{"role": "user"}], "answer": GOLD}, "string 'role' and a string 'content'"),
        ({"prompt": PROMPT[:1], "answer": GOLD}, "end with the user's message"),
        ({"prompt": PROMPT, "other": GOLD}, "no gold assistant text"),
        ({"prompt": PROMPT, "answer": "<think/>\n<tool_call>\n{name: ping}\n</tool_call>"}, "gold <tool_call> block"),
        ({"prompt": PROMPT, "answer": '<tool_call>\n{"name": "ping"}\n</tool_call>'}, "gold <tool_call> block"),
    ],
)
def test_bad_rows_are_named_with_file_and_row(tmp_path, row, message):
    good = {"prompt": PROMPT, "answer": GOLD}
    path = _write_jsonl(tmp_path / "bad.jsonl", [good, row])
    with pytest.raises(ValueError, match=rf"bad\.jsonl, row 1: .*{message}"):
        load_toolrl(path)


def test_missing_and_unsupported_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        load_toolrl(str(tmp_path / "nope.parquet"))
    (tmp_path / "rows.tsv").write_text("prompt\tanswer\n")
    with pytest.raises(ValueError, match="unsupported ToolRL data file type '.tsv'"):
        load_toolrl(str(tmp_path / "rows.tsv"))
    (tmp_path / "rows.csv").write_text("prompt,answer\n")  # read, but a header alone has no rows
    with pytest.raises(ValueError, match=r"^ToolRL data file .*rows\.csv has no rows \(a header only\?\)\.$"):
        load_toolrl(str(tmp_path / "rows.csv"))
    path = _write_jsonl(tmp_path / "noprompt.jsonl", [{"answer": GOLD}])
    with pytest.raises(ValueError, match="no 'prompt' column"):
        load_toolrl(path)


@pytest.mark.parametrize(
    ("content", "words"),
    [(b"", "is empty"), (b'{"prompt": "caf\xe9"}\n', "is not UTF-8 text"), (b"{oops\n", ":1: not valid JSON")],
    ids=["empty", "not-utf8", "bad-json"],
)
def test_a_broken_local_file_is_named(tmp_path, content, words):
    """The same one-line errors for ToolRL and GSM8K files (gdpo_trl.data.files): the file, and the fault."""
    from gdpo_trl.core.errors import InputError
    from gdpo_trl.data.gsm8k import load_gsm8k
    from gdpo_trl.data.toolrl import load_toolrl

    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    for load in (load_toolrl, load_gsm8k):
        with pytest.raises(InputError, match=words) as error:
            load(str(path))
        assert str(path) in str(error.value)
