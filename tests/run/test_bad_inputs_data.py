"""Rewards that cannot score the rows, tool rows whose gold is wrong, a run that would train 0 steps, and a wait
for the warm-start build that says what it waits for (issue: nothing silent, nothing poor, no silent hang).

CLI rows run ``gdpo train`` (see :func:`tests.helpers.bad_inputs.check_train_rejects`) on the tiny built-in model: the
data is loaded, the model is not. Before these checks each of them trained: on every completion scored 0 by a
reward that does not apply, on a gold calling a tool the prompt does not offer, or for 0 steps, saving the untouched
model as the result.
"""

import json
import threading
import time
from types import SimpleNamespace

import datasets
import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.toolrl import make_prompt
from gdpo_trl.models.build_lock import build_lock
from gdpo_trl.rewards import get_reward_funcs
from gdpo_trl.run.data_checks import check_rewards_fit_rows, check_steps_per_epoch, listed_tools, tool_gold_problem
from tests.helpers.bad_inputs import check_train_rejects

TOOLS = [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}},
]
WEATHER = '<think>...</think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Oslo"}}\n</tool_call>'
TOOL_RECIPE = {"dataset_name": "toolrl", "reward_funcs": ["tool_format", "tool_correctness"]}


def tool_rows(tmp_path, second_answer: str) -> str:
    """A ToolRL-format file: one good row, then one whose gold is ``second_answer``."""
    rows = [
        {"prompt": make_prompt(TOOLS, "Weather in Oslo?"), "answer": WEATHER},
        {"prompt": make_prompt(TOOLS, "What now?"), "answer": second_answer},
    ]
    path = tmp_path / "tools.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


# (id, recipe overrides, words the one-line error must contain); a "dataset_path" override is the second row's gold
# (tool_rows writes the file).
DATA_ROWS = [
    (
        "tool_rewards_on_gsm8k_rows",
        {"reward_funcs": ["tool_format", "tool_correctness"]},
        ["'tool_format'", "GSM8K-style row", "toolcall"],
    ),
    (
        "gsm8k_rewards_on_tool_rows",
        {"dataset_name": "toolrl_sample", "reward_funcs": ["format", "correctness", "integer"]},
        ["'correctness'", "row 0 is a tool-calling row", "tool_format and tool_correctness"],
    ),
    ("condition_on_a_tool_reward", {"reward_conditions": {"format": "tool_correctness"}}, ["'tool_correctness'"]),
    (
        "gold_calls_an_unlisted_tool",
        {**TOOL_RECIPE, "dataset_path": WEATHER.replace("get_weather", "get_stock")},
        ["tool-calling row 1", "'get_stock'", "does not offer", "get_time, get_weather"],
    ),
    (
        "gold_without_a_block",
        {**TOOL_RECIPE, "dataset_path": "<think>...</think>"},
        ["tool-calling row 1", "neither a <tool_call> nor a <response>"],
    ),
    (
        "batch_larger_than_dataset",
        {
            "dataset_name": "synthetic",
            "synthetic_size": 10,
            "num_generations": 8,
            "per_device_train_batch_size": 32,
            "gradient_accumulation_steps": 4,
        },
        ["10 rows", "16 distinct prompts", "32 x 1 process x steps_per_generation 4 = 128", "0 steps"],
    ),
    ("max_train_samples_below_one_batch", {"max_train_samples": 3, "per_device_train_batch_size": 8}, ["3 rows"]),
]


@pytest.mark.parametrize(("overrides", "words"), [r[1:] for r in DATA_ROWS], ids=[r[0] for r in DATA_ROWS])
def test_gdpo_train_rejects_data(tmp_path, capsys, monkeypatch, overrides, words):
    if "dataset_path" in overrides:
        overrides = {**overrides, "dataset_path": tool_rows(tmp_path, overrides["dataset_path"])}
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


def test_rewards_that_fit_pass():
    """The rows each built-in reward is for pass, including the forms that look odd (ToolRL's chat-only golds, tools
    listed as name(args)), and the check is not passing them blind: the same rows under the other task's rewards
    are refused, and a reward outside the registry is not judged."""
    from gdpo_trl.data.sources import load_source

    tool, gsm8k = get_reward_funcs(["tool_format", "tool_correctness"]), get_reward_funcs(["correctness", "format"])
    toolrl, toolcall, sample = load_source("toolrl_sample"), load_source("toolcall", size=300), load_source("sample")
    assert any("<tool_call>" not in a and "<response>" in a for a in toolrl["answer"])  # chat-only golds are there
    assert all(listed_tools(prompt) for prompt in toolcall["prompt"])  # every prompt lists its tools as name(args)
    for rows, rewards in ((toolrl, tool), (toolcall, tool), (sample, gsm8k)):
        assert check_rewards_fit_rows(rows, rewards) is None
    with pytest.raises(
        InputError, match="reward 'correctness' scores GSM8K-style rows .* but row 0 is a tool-calling"
    ):
        check_rewards_fit_rows(toolrl, gsm8k)
    with pytest.raises(
        InputError,
        match="reward 'tool_format' needs tool-calling rows .* but row 0's answer is '12', a GSM8K-style row",
    ):
        check_rewards_fit_rows(sample, tool)
    assert check_rewards_fit_rows(sample, [lambda completions, **kwargs: [0.0] * len(completions)]) is None


def test_reward_needing_a_missing_column_is_named():
    rows = datasets.Dataset.from_dict({"prompt": [[{"role": "user", "content": "hi"}]]})
    with pytest.raises(InputError, match="'correctness' needs the dataset column 'answer'"):
        check_rewards_fit_rows(rows, get_reward_funcs(["correctness"]))


def test_tool_listings_in_known_forms():
    openai = json.dumps({"type": "function", "function": {"name": "lookup", "parameters": {}}})
    assert listed_tools([{"role": "system", "content": f"Tools:\n{openai}"}]) == {"lookup"}
    assert listed_tools([{"role": "system", "content": "1. Name: search\nDescription: x"}]) == {"search"}
    assert listed_tools([{"role": "system", "content": "tools: add(a,b) news()"}]) == {"add", "news"}
    assert listed_tools([{"role": "system", "content": "Be nice."}]) is None  # unknown form: no tool check
    # (the ToolRL loader refuses this already; other sources of tool rows meet the same check here)
    unclosed = WEATHER.removesuffix("</tool_call>") + "<response>ok</response>"
    assert "not closed" in tool_gold_problem(make_prompt(TOOLS, "Weather?"), unclosed)


@pytest.mark.parametrize(("rows", "ok"), [(4, True), (3, False)])
def test_steps_per_epoch_edge(rows, ok):
    args = SimpleNamespace(
        num_generations=2, generation_batch_size=8, per_device_train_batch_size=8, world_size=1,
        steps_per_generation=1,
    )  # fmt: skip
    data = datasets.Dataset.from_dict({"x": list(range(rows))})
    if ok:
        check_steps_per_epoch(data, args)
    else:
        with pytest.raises(InputError, match="3 rows, fewer than the 4 distinct prompts"):
            check_steps_per_epoch(data, args)


def test_waiting_for_a_warm_start_build_says_what_and_how_long(tmp_path, capsys):
    """A second process waiting for the first one's build used to sit silent for minutes, like a hang."""
    import fcntl

    lock = tmp_path / "warmstart-abc.lock"
    holder = open(lock, "a+")  # noqa: SIM115 - held across the thread below
    fcntl.flock(holder, fcntl.LOCK_EX)
    holder.write("pid 4242\n")
    holder.flush()
    got = threading.Event()

    def waiter():
        with build_lock(lock, report_every=0.3):
            got.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(1.2)
    assert not got.is_set()
    fcntl.flock(holder, fcntl.LOCK_UN)
    holder.close()
    thread.join(10)
    assert got.is_set()
    err = capsys.readouterr().err
    assert f"Waiting for pid 4242 to finish building {tmp_path / 'warmstart-abc'}" in err
    assert err.count("Still waiting for") >= 2 and "Done waiting" in err


# --- splits that do not exist, a data file's own prompt column ------------------------------------------

SPLIT_WORDS = ["split 'tset' does not exist", "['train', 'validation', 'test']"]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"dataset_train_split": "tset"}, ["'sample' is a single file", *SPLIT_WORDS]),
        ({"dataset_name": "{tmp}/rows.jsonl", "dataset_train_split": "tset"}, ["rows.jsonl' is a single file"]),
        ({"dataset_name": "synthetic", "dataset_train_split": "tset"}, ["'tset' does not apply", "synthetic_seed"]),
        ({"dataset_name": "{tmp}/prompted.jsonl"}, ["has a 'prompt' column of its own", "drop or rename"]),
    ],
    ids=["sample", "file", "generated", "own_prompt_column"],
)
def test_a_split_that_does_not_exist_or_a_prompt_column_is_refused(tmp_path, capsys, monkeypatch, overrides, words):
    """Before: a single file was read whole and a generated source took the eval seed for any split name, and the
    file's own prompts were replaced by ones built from 'question', without a word."""
    row = {"question": "What is 6 times 7?", "answer": "#### 42"}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "prompted.jsonl").write_text(json.dumps({**row, "prompt": "Answer: 6 x 7"}) + "\n")
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


def test_gdpo_eval_split_that_does_not_exist(tmp_path, capsys):
    from gdpo_trl.cli.evaluate import main as eval_main
    from tests.helpers.bad_inputs import assert_one_line_error, run_cli

    argv = ["--model", "builtin:tiny", "--dataset", "sample", "--split", "tset", "--output_dir", str(tmp_path / "o")]
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", ["'sample' is a single file", *SPLIT_WORDS])
    assert not (tmp_path / "o").exists()


def test_a_10_mb_row_is_refused_without_tokenizing_it(tmp_path, capsys, monkeypatch):
    """Before: a fast tokenizer spent minutes on the one long row after the conversion bar, with nothing on screen.
    Tokenizing is made to fail here, so the row must be refused by its length in characters alone."""
    from transformers import PreTrainedTokenizerBase

    def no_tokenizing(*args, **kwargs):
        raise AssertionError("tokenized the 10 MB row")

    monkeypatch.setattr(PreTrainedTokenizerBase, "apply_chat_template", no_tokenizing)
    monkeypatch.setenv("GDPO_TRL_MAX_LINE_MB", "20")  # past the 4 MB a line the file reader refuses by default
    rows = [{"question": "What is 6 times 7?", "answer": "#### 42"}] * 2
    rows.insert(1, {"question": "x" * 10_000_000, "answer": "#### 1"})
    (tmp_path / "big.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    words = ["1 of 3 prompts do not fit", "(row 1) has 10,000,", "characters", "Drop or shorten them"]
    check_train_rejects(tmp_path, capsys, monkeypatch, {"dataset_name": "{tmp}/big.jsonl"}, [], None, words)
