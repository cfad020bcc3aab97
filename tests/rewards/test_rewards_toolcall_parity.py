"""The ToolRL rewards against ToolRL's rules re-implemented here (independently of gdpo_trl.rewards.toolcall), on a
seeded battery of near-miss completions: whitespace JSON does and does not accept, broken tags and JSON, wrong names,
values, types and counts."""

import json
import random
import re
from collections import Counter

import pytest

from gdpo_trl.rewards.toolcall import tool_correctness, tool_format

# --- ToolRL's rules (verl/utils/reward_score/rlla.py, all environment switches at their defaults) ----------------


def rule_format(response, gold):
    text = response.strip()  # the reference scores the stripped assistant text
    has_call, has_resp = "<tool_call>" in gold, "<response>" in gold
    layout = r"^<think>.*?</think>"
    counted = []
    if has_call:
        layout += r"\n<tool_call>\n.*?\n</tool_call>"
        counted += ["<tool_call>", "</tool_call>"]
    if has_resp:
        layout += r"\n<response>.*?</response>"
        counted += ["<response>", "</response>"]
    ok = re.search(layout + "$", text, re.DOTALL) and all(text.count(tag) == 1 for tag in counted)
    return 1.0 if ok else 0.0


def rule_block(text):
    """Between the first <tool_call> and the next <tool_call> or </tool_call>, str-stripped, one JSON per line."""
    segment = text.split("<tool_call>")[1]
    return [json.loads(line) for line in segment.split("</tool_call>")[0].strip().split("\n")]


def rule_similarity(a, b):
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    common = sum((Counter(a) & Counter(b)).values())
    return common / (len(a) + len(b) - common)


def rule_score(gold_calls, pred_calls):
    if gold_calls == pred_calls:
        return 3.0
    score = rule_similarity([c["name"] for c in gold_calls], [c["name"] for c in pred_calls])
    top = 1.0
    taken = set()
    for g in gold_calls:
        top += 1.0 + len(g["parameters"])
        best, best_i = 0.0, None
        for i, p in enumerate(pred_calls):
            if i in taken or p["name"] != g["name"]:
                continue
            keys = rule_similarity(list(g["parameters"].keys()), list(p["parameters"].keys()))
            values = sum(1.0 for k, v in g["parameters"].items() if k in p["parameters"] and p["parameters"][k] == v)
            if keys + values > best:
                best, best_i = keys + values, i
        if best_i is not None:
            taken.add(best_i)
            score += best
    return 6.0 * score / top - 3.0


def rule_correctness(response, gold):
    if "<tool_call>" not in gold:
        return 0.0
    gold_calls = rule_block(gold)
    try:
        if "<tool_call>" not in response or "</tool_call>" not in response:
            return -3.0
        return rule_score(gold_calls, rule_block(response.strip()))
    except Exception:  # anything the reference's bare `except` turns into the lowest score
        return -3.0


# --- The battery ------------------------------------------------------------------------------------------------

GOLD_CALLS = [
    [("weather", {"city": "Paris", "unit": "C"})],
    [("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})],
    [("news", {})],
    [("weather", {"city": "Rome", "unit": "F"}), ("time", {"city": "Rome"})],
]
WHITESPACE = [" ", "\t", "\r", "  ", "\u00a0", "\x0c", "\x0b", "\u2028", "\x85", "\u3000"]
VALUES = ["Paris", "paris", 1, 1.0, True, "1", None, [1], {"x": 1}, 2, float("nan")]


def space(rng):
    return rng.choice(WHITESPACE) if rng.random() < 0.3 else ""


def render_call(rng, name, params):
    params = dict(params)
    kind = rng.randrange(12)
    if kind == 0 and params:  # a wrong value
        params[rng.choice(sorted(params))] = rng.choice(VALUES)
    elif kind == 1 and params:  # a missing parameter
        params.pop(rng.choice(sorted(params)))
    elif kind == 2:  # an extra parameter
        params["extra"] = rng.choice(VALUES)
    elif kind == 3:
        name = rng.choice(["wether", "time", "add", name.upper()])
    call = {"name": name, "parameters": params}
    if kind == 4:
        call = {"name": name, "parameters": rng.choice([[1], "x", None, 3])}
    elif kind == 5:
        call = {"parameters": params} if rng.random() < 0.5 else [name, params]
    elif kind == 6:
        call = {"name": rng.choice([["x"], {"n": 1}, 3, None]), "parameters": params}
    line = json.dumps(call, allow_nan=True)
    if kind == 7:
        line = line[: rng.randrange(len(line))]  # cut short
    elif kind == 8:
        line = line.replace('"', "'")
    elif kind == 9:
        line = "[" * 3000 + "]" * 3000  # nested beyond the parser's recursion limit
    return space(rng) + line + space(rng)


def near_miss(rng, gold_calls):
    calls = [render_call(rng, n, p) for n, p in gold_calls]
    if rng.random() < 0.2:
        rng.shuffle(calls)
    if rng.random() < 0.15:
        calls.append(rng.choice(calls))  # one call too many
    if rng.random() < 0.15 and len(calls) > 1:
        calls.pop()  # one too few
    if rng.random() < 0.1:
        calls.insert(rng.randrange(len(calls) + 1), rng.choice(["", " ", "<tool_call>"]))  # a blank or stray line
    block = "<tool_call>\n" + "\n".join(calls) + "\n</tool_call>"
    pieces = ["<think>ok</think>", "\n" if rng.random() < 0.85 else rng.choice(["", "\n\n", " \n"]), block]
    if rng.random() < 0.3:
        pieces.append("\n<response>done</response>")
    if rng.random() < 0.1:
        pieces.append(rng.choice(["\n<tool_call>\n{}\n</tool_call>", "</tool_call>", " tail", "\n"]))
    text = "".join(pieces)
    if rng.random() < 0.08:  # drop a tag
        tag = rng.choice(["<tool_call>", "</tool_call>", "<think>", "</think>"])
        text = text.replace(tag, "", 1)
    return rng.choice(["", "", "\n", " ", "\u00a0", "x"]) + text + rng.choice(["", "", "\n", "\u00a0"])


def gold_text(calls, response):
    text = "<think>...</think>"
    if calls:
        text += "\n<tool_call>\n" + "\n".join(json.dumps({"name": n, "parameters": p}) for n, p in calls)
        text += "\n</tool_call>"
    if response:
        text += "\n<response>Sure.</response>"
    return text


BATTERY = 1500


def test_battery_scores_like_toolrl_rules():
    rng = random.Random(4242)
    golds, completions = [], []
    for _ in range(BATTERY):
        calls = rng.choice(GOLD_CALLS + [[]])
        golds.append(gold_text(calls, response=not calls or rng.random() < 0.3))
        completions.append(near_miss(rng, calls or rng.choice(GOLD_CALLS)))
    ours_format = tool_format(completions, answer=golds)
    ours_correct = tool_correctness(completions, answer=golds)
    for text, gold, fmt, correct in zip(completions, golds, ours_format, ours_correct, strict=True):
        assert fmt == rule_format(text, gold), (text, gold)
        assert correct == pytest.approx(rule_correctness(text, gold), abs=1e-12), (text, gold)
    # Not a trivial battery: both format values, full, partial and lowest correctness all occur often.
    assert 0.1 * BATTERY < sum(ours_format) < 0.9 * BATTERY
    assert sum(c == -3.0 for c in ours_correct) > 150 and sum(c == 3.0 for c in ours_correct) > 100
    assert sum(-3.0 < c < 3.0 and c != 0.0 for c in ours_correct) > 150
