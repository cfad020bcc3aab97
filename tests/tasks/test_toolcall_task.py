"""The offline tool-calling task: gold answers recomputed independently from the request text, splits, and the
warm start's flawed traces scored by the real rewards."""

import json
import random
import re

import pytest

from gdpo_trl.rewards.toolcall import parse_tool_calls, tool_correctness, tool_format
from gdpo_trl.tasks.toolcall_task import (
    CALL_ERRORS,
    CITIES,
    FORMAT_BREAKS,
    SYSTEM_PROMPT,
    generate_requests,
    load_toolcall_task,
    make_trace,
    render,
    sft_dataset,
)

CITY = "|".join(CITIES)
# Each request pattern and the calls it asks for, written out again here rather than imported.
PATTERNS = [
    (rf"weather in ({CITY}) in ([CF])", lambda m: [{"name": "weather", "parameters": {"city": m[1], "unit": m[2]}}]),
    (rf"time in ({CITY})", lambda m: [{"name": "time", "parameters": {"city": m[1]}}]),
    (rf"time in ({CITY}) and ({CITY})", lambda m: [{"name": "time", "parameters": {"city": c}} for c in m.groups()]),
    (r"add (\d+) and (\d+)", lambda m: [{"name": "add", "parameters": {"a": int(m[1]), "b": int(m[2])}}]),
    (r"alarm at (\d+)", lambda m: [{"name": "alarm", "parameters": {"h": int(m[1])}}]),
    (r"news please|any news\?", lambda m: [{"name": "news", "parameters": {}}]),
    (r"thanks|hello|bye", lambda m: None),
]


def expected_calls(request):
    matches = [(p, f) for p, f in PATTERNS if re.fullmatch(p, request)]
    assert len(matches) == 1, request
    pattern, calls = matches[0]
    return calls(re.fullmatch(pattern, request))


def test_gold_answers_recomputed_from_the_request_text():
    rows = generate_requests(500, seed=3, split="train") + generate_requests(200, seed=3, split="eval")
    assert {r["kind"] for r in rows} == {"weather", "time", "add", "alarm", "news", "two_times", "chat"}
    for row in rows:
        gold = render(row["calls"])
        expected = expected_calls(row["request"])
        if expected is None:
            assert "<tool_call>" not in gold and gold.endswith("<response>ok</response>")
        else:
            assert parse_tool_calls(gold) == expected
        # The gold completion is perfect under both rewards.
        assert tool_format([gold], answer=[gold]) == [1.0]
        assert tool_correctness([gold], answer=[gold]) == [0.0 if expected is None else 3.0]


def test_values_are_in_range_and_two_cities_differ():
    for row in generate_requests(300, seed=1):
        for _, params in row["calls"]:
            assert all(1 <= v <= 99 for k, v in params.items() if k in "ab")
            assert 1 <= params.get("h", 1) <= 12
        if row["kind"] == "two_times":
            assert row["calls"][0][1] != row["calls"][1][1]


def test_seeded_and_splits_disjoint():
    assert generate_requests(50, seed=7) == generate_requests(50, seed=7)
    assert generate_requests(50, seed=7) != generate_requests(50, seed=8)
    train = {r["request"] for r in generate_requests(2000, seed=0, split="train")}
    held_out = {r["request"] for r in generate_requests(300, seed=5, split="eval")}
    assert train and held_out and not train & held_out
    with pytest.raises(ValueError, match="split"):
        generate_requests(1, split="test")


def test_dataset_shape():
    ds = load_toolcall_task(6, seed=0)
    assert ds.column_names == ["prompt", "answer"] and len(ds) == 6
    assert ds[0]["prompt"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    sft = sft_dataset(4, seed=0)
    assert sft.column_names == ["prompt", "completion"] and sft[0]["completion"][0]["role"] == "assistant"


def test_each_flaw_costs_what_it_should():
    row = {"request": "weather in Oslo in C", "kind": "weather", "calls": [("weather", {"city": "Oslo", "unit": "C"})]}
    gold = render(row["calls"])
    seen = {}
    rng = random.Random(0)
    for _ in range(400):
        text, drawn = make_trace(row, rng)
        seen[(drawn["layout"], drawn["error"])] = text
        fmt, corr = tool_format([text], answer=[gold])[0], tool_correctness([text], answer=[gold])[0]
        assert fmt == (1.0 if drawn["layout"] is None else 0.0), text
        # Smax = 1 + (1 + 2) = 4. A wrong value: names 1 + keys 1 + one value = 3 -> 1.5. A missing parameter:
        # 1 + (1/2 + 1) -> 0.75. A wrong tool: names 0, no pair -> -3. Unreadable JSON: -3. One call too many:
        # names 1/2 + pair 3 -> 6 * 3.5 / 4 - 3 = 2.25.
        want = {None: 3.0, "wrong_value": 1.5, "missing_param": 0.75, "wrong_name": -3.0, "bad_json": -3.0}
        want["call_count"] = 2.25
        assert corr == pytest.approx(want[drawn["error"]]), text
    assert {k[0] for k in seen} == {None, *FORMAT_BREAKS} and {k[1] for k in seen} == {None, *CALL_ERRORS}


def test_trace_mix_starts_mid_range():
    rows = generate_requests(3000, seed=0)
    rng = random.Random(0)
    texts = [make_trace(row, rng)[0] for row in rows]
    golds = [render(row["calls"]) for row in rows]
    fmt = sum(tool_format(texts, answer=golds)) / len(rows)
    corr = sum(tool_correctness(texts, answer=golds)) / len(rows)
    assert 0.45 < fmt < 0.55  # 1 - broken_format
    assert 0.5 < corr < 1.6  # half the calls right (3, or 0 for chat), half with a flaw averaging about -0.8
    assert json.loads(json.dumps(texts[:3])) == texts[:3]


def test_sft_examples_end_with_eos_and_tool_tags_are_single_tokens():
    from gdpo_trl.models.tiny import build_tokenizer
    from gdpo_trl.tasks.toolcall_task import TOOL_TAGS

    tokenizer = build_tokenizer()
    tokenizer.add_tokens(TOOL_TAGS)
    for tag in TOOL_TAGS:
        assert len(tokenizer(tag, add_special_tokens=False)["input_ids"]) == 1
    for example in sft_dataset(8, seed=0):
        prompt = tokenizer.apply_chat_template(example["prompt"], add_generation_prompt=True)["input_ids"]
        full = tokenizer.apply_chat_template(example["prompt"] + example["completion"])["input_ids"]
        assert full[: len(prompt)] == prompt and tokenizer.eos_token_id in full[len(prompt) :]
        assert len(full) - len(prompt) < 160  # fits the CPU recipe's max_completion_length


def test_short_build_in_a_child_process(tmp_path):
    """Two SFT steps, built as resolve_model("builtin:toolcall_warmstart") builds (a child process): a loadable
    model whose saved tokenizer keeps the tool tags as single tokens."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "gdpo_trl.tasks.toolcall_task", str(tmp_path / "ws"), "--steps", "2"]
    subprocess.run(command, env=env, check=True, capture_output=True)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "ws")
    assert len(tokenizer("<tool_call>", add_special_tokens=False)["input_ids"]) == 1
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "ws")
    assert model.config.vocab_size == len(tokenizer)
    assert json.loads((tmp_path / "ws" / "warmstart.json").read_text())["recipe"]["steps"] == 2
