"""The ToolRL rewards against hand-computed values: every rule and its edge cases."""

import json

import pytest

from gdpo_trl.rewards import get_reward_func
from gdpo_trl.rewards.toolcall import parse_tool_calls, tool_correctness, tool_format


def calls(*items):
    """A <tool_call> block with one JSON object per line."""
    lines = "\n".join(json.dumps({"name": n, "parameters": p}) for n, p in items)
    return f"<tool_call>\n{lines}\n</tool_call>"


def gold(*items, response=None):
    text = "<think>...</think>"
    if items:
        text += "\n" + calls(*items)
    if response is not None:
        text += f"\n<response>{response}</response>"
    return text


def correct(text, gold_text, **kw):
    return tool_correctness([text], answer=[gold_text], **kw)[0]


def fmt(text, gold_text):
    return tool_format([text], answer=[gold_text])[0]


GOLD_RESP = gold(response="Hello")
GOLD_CALL = gold(("f", {"a": 1}))
GOLD_BOTH = gold(("f", {"a": 1}), response="Working on it")
GOLD_NONE = gold()


# ---- format ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gold_text", "expected"),
    [
        ("<think>x</think>\n<response>hi</response>", GOLD_RESP, 1.0),
        ("  \n<think>x</think>\n<response>hi</response>\n ", GOLD_RESP, 1.0),  # stripped first
        ("<think></think>\n<response></response>", GOLD_RESP, 1.0),  # empty blocks are fine
        ("<think>x</think><response>hi</response>", GOLD_RESP, 0.0),  # exactly one newline between blocks
        ("<think>x</think>\n\n<response>hi</response>", GOLD_RESP, 0.0),
        ("<think>x</think>\n<response>a</response><response>b</response>", GOLD_RESP, 0.0),  # tag twice
        ("<think>x</think>\n<response>a <response> b</response>", GOLD_RESP, 0.0),  # opening tag twice
        ("<think>x</think>\n<response>hi</response> bye", GOLD_RESP, 0.0),  # anchored at the end
        ("hi <think>x</think>\n<response>hi</response>", GOLD_RESP, 0.0),  # anchored at the start
        ("<think>x</think>\n" + calls(("f", {"a": 1})), GOLD_RESP, 0.0),  # shape of the gold, not any shape
        # Think tags are not counted: a second think block fits inside the lazy `.*?` of an anchored match.
        ("<think>a</think><think>b</think>\n<response>hi</response>", GOLD_RESP, 1.0),
        ("<think>x</think>\n<tool_call>\nanything\n</tool_call>", GOLD_CALL, 1.0),  # content is not parsed here
        ("<think>x</think>\n<tool_call>\n\n</tool_call>", GOLD_CALL, 1.0),  # `\n.*?\n` with empty middle
        ("<think>x</think>\n<tool_call>\n</tool_call>", GOLD_CALL, 0.0),  # needs two newlines inside
        ("<think>x</think>\n<tool_call>{}</tool_call>", GOLD_CALL, 0.0),  # tags on their own lines
        ("<think>x</think>\n<tool_call>\n{}\n</tool_call>\n<response>r</response>", GOLD_CALL, 0.0),
        ("<think>x</think>\n<tool_call>\na\n</tool_call>\n<tool_call>\nb\n</tool_call>", GOLD_CALL, 0.0),
        ("<think>x</think>\n<tool_call>\n{}\n</tool_call>\n<response>r</response>", GOLD_BOTH, 1.0),
        ("<think>x</think>\n<tool_call>\n{}\n</tool_call>", GOLD_BOTH, 0.0),  # response required
        ("<think>x</think>\n<response>r</response>", GOLD_BOTH, 0.0),  # tool call required
        ("<think>x</think>\n<response>r</response>\n<tool_call>\n{}\n</tool_call>", GOLD_BOTH, 0.0),  # order
        ("<think>x</think>\n<tool_call>\n{}\n</tool_call>\n<response>r</response><response>", GOLD_BOTH, 0.0),
        ("<think>x</think>", GOLD_NONE, 1.0),
        ("<think>x</think> trailing", GOLD_NONE, 0.0),
        ("<think>x</think>\n<response>r</response>", GOLD_NONE, 0.0),  # must end with </think>
        ("<think>x</think>\nmore</think>", GOLD_NONE, 1.0),  # lazy but anchored: stretches to the last </think>
    ],
)
def test_format_rules(text, gold_text, expected):
    assert fmt(text, gold_text) == expected


def test_format_reads_message_lists_and_needs_answer():
    completion = [{"role": "assistant", "content": "<think>x</think>\n<response>hi</response>"}]
    assert tool_format([completion], answer=[GOLD_RESP]) == [1.0]
    with pytest.raises(ValueError, match="answer"):
        tool_format(["x"])
    with pytest.raises(ValueError, match="2 completions but 1"):
        tool_format(["x", "y"], answer=[GOLD_RESP])


# ---- correctness -------------------------------------------------------------------------------------------------


def test_issue_worked_example():
    g = gold(("weather", {"city": "Paris", "unit": "C"}), ("time", {"tz": "CET"}))
    p = gold(("weather", {"city": "Paris", "unit": "F"}), ("time", {"tz": "CET"}), ("news", {}))
    # S = 2/3 (names: overlap 2 / (2 + 3 - 2)) + (1 + 1) + (1 + 1); Smax = 1 + 3 + 2 = 6
    assert correct(p, g) == pytest.approx(6 * (2 / 3 + 4) / 6 - 3)
    assert correct(p, g) == pytest.approx(5 / 3)


def test_no_gold_tool_call_scores_zero_whatever_the_completion():
    assert correct("garbage", GOLD_RESP) == 0.0
    assert correct("<think>x</think>\n" + calls(("f", {})), GOLD_NONE) == 0.0


def test_equal_lists_score_three_and_key_order_does_not_matter():
    g = gold(("f", {"a": 1, "b": "x"}), ("g", {}))
    assert correct(g, g) == 3.0
    assert correct(calls(("f", {"b": "x", "a": 1.0}), ("g", {})), g) == 3.0  # dict equality, 1 == 1.0
    # Same calls in another order: names Jaccard 1, pairs 1+2 and 1+0: S = 4 = Smax (1 + 3 + 1) -> 3
    assert correct(calls(("g", {}), ("f", {"a": 1, "b": "x"})), g) == pytest.approx(3.0)


@pytest.mark.parametrize(
    "text",
    [
        "no tags at all",
        "<think>x</think>\n<tool_call>\n" + json.dumps({"name": "f", "parameters": {"a": 1}}),  # no closing tag
        json.dumps({"name": "f", "parameters": {"a": 1}}) + "\n</tool_call>",  # no opening tag
        "<tool_call>\n{'name': 'f', 'parameters': {'a': 1}}\n</tool_call>",  # not JSON
        "<tool_call>\n\n</tool_call>",  # empty block
        "<tool_call>\n"
        + json.dumps({"name": "f", "parameters": {"a": 1}})
        + "\n\n"
        + json.dumps({"name": "g", "parameters": {}})
        + "\n</tool_call>",  # blank line
        "<tool_call>\n" + json.dumps({"parameters": {"a": 1}}) + "\n</tool_call>",  # no name
        "<tool_call>\n" + json.dumps(["f", {"a": 1}]) + "\n</tool_call>",  # not an object
        "<tool_call>\n" + json.dumps({"name": ["f"], "parameters": {}}) + "\n</tool_call>",  # unhashable name
        "<tool_call>\n" + json.dumps({"name": "f"}) + "\n</tool_call>",  # gold name without parameters
        "<tool_call>\n" + json.dumps({"name": "f", "parameters": [1]}) + "\n</tool_call>",  # not a dict
        "<tool_call>\n" + json.dumps({"name": "f", "parameters": {"a": 1}}) + " x\n</tool_call>",  # trailing text
    ],
)
def test_unreadable_calls_score_minus_three(text):
    assert correct(text, GOLD_CALL) == -3.0


def test_missing_parameters_are_fine_when_the_name_matches_no_gold_call():
    # f pairs (1 + 1), names: overlap 1 / (1 + 2 - 1) = 1/2; S = 2.5, Smax = 1 + 2 = 3
    text = "<tool_call>\n" + json.dumps({"name": "f", "parameters": {"a": 1}}) + "\n" + '{"name": "zzz"}\n</tool_call>'
    assert correct(text, GOLD_CALL) == pytest.approx(6 * 2.5 / 3 - 3)


def test_only_the_first_block_is_read_and_json_whitespace_is_allowed():
    good = calls(("f", {"a": 1}))
    assert correct(good + "\n" + calls(("zzz", {})), GOLD_CALL) == 3.0
    assert correct(calls(("zzz", {})) + "\n" + good, GOLD_CALL) == pytest.approx(6 * 0 / 3 - 3)
    assert correct('<tool_call>\n   {"name": "f", "parameters": {"a": 1}}  \r\n</tool_call>', GOLD_CALL) == 3.0


CALL_LINE = json.dumps({"name": "f", "parameters": {"a": 1}})


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (" \t", "\t \r", 3.0),  # JSON's own whitespace around a value: json.loads accepts it, as in the reference
        ("\u00a0", "", -3.0),  # no-break space: str.strip would remove it, JSON (and the reference) rejects it
        ("", "\u00a0", -3.0),
        ("\x0c", "", -3.0),  # form feed
        ("\x0b", "", -3.0),  # vertical tab
        ("\u2028", "", -3.0),  # line separator: not a line break for the split on "\\n" either
        ("\u3000", "", -3.0),  # ideographic space
    ],
)
def test_each_line_allows_only_json_whitespace(before, after, expected):
    other = json.dumps({"name": "g", "parameters": {}})
    # In the middle of three lines: the block's ends are str-stripped (as in the reference), its inner lines are not.
    text = f"<tool_call>\n{other}\n{before}{CALL_LINE}{after}\n{other}\n</tool_call>"
    gold_text = gold(("g", {}), ("f", {"a": 1}), ("g", {}))
    assert correct(text, gold_text) == expected
    assert parse_tool_calls(text) == (
        None if expected < 0 else [json.loads(line) for line in (other, CALL_LINE, other)]
    )
    # At the block's very end, str.strip removes even a no-break space, there as here.
    assert correct(f"<tool_call>\n{other}\n{CALL_LINE}\u00a0\n</tool_call>", gold(("g", {}), ("f", {"a": 1}))) == 3.0


def test_block_ends_at_a_second_opening_tag():
    # The reference splits on every <tool_call>: the first block stops at the next opening tag as well.
    text = f"<tool_call>\n{CALL_LINE}\n<tool_call>\n{json.dumps({'name': 'zzz', 'parameters': {}})}\n</tool_call>"
    assert parse_tool_calls(text) == [{"name": "f", "parameters": {"a": 1}}]
    assert correct(text, GOLD_CALL) == 3.0


def test_json_too_deep_for_the_parser_is_unreadable():
    assert parse_tool_calls("<tool_call>\n" + "[" * 100_000 + "]" * 100_000 + "\n</tool_call>") is None


def test_block_runs_to_the_end_when_the_closing_tag_comes_first():
    # Both tags occur; the first opening tag has no closing tag after it, so the block is the rest of the text.
    assert parse_tool_calls('</tool_call> <tool_call>\n{"name": "f", "parameters": {"a": 1}}') == [
        {"name": "f", "parameters": {"a": 1}}
    ]


def test_partial_credit_values_and_zero_scores_are_not_paired():
    g = gold(("f", {"a": 1, "b": 2}))  # Smax = 1 + 3 = 4
    # Right name, one key right with the right value, one extra key: keys {a, b} vs {a, c} -> 1/3; values 1
    assert correct(calls(("f", {"a": 1, "c": 2})), g) == pytest.approx(6 * (1 + 1 / 3 + 1) / 4 - 3)
    # Right name, no parameters at all: pair score 0 (not paired); names 1 -> S = 1
    assert correct(calls(("f", {})), g) == pytest.approx(6 * 1 / 4 - 3)
    # Wrong name: S = 0 -> -3 exactly
    assert correct(calls(("h", {"a": 1, "b": 2})), g) == pytest.approx(-3.0)
    # Gold call without parameters vs the same name with none: equal lists -> 3; with an extra parameter the pair
    # scores 0 (keys Jaccard 0, nothing to match) and names 1: S = 1, Smax = 2 -> 0
    g0 = gold(("ping", {}))
    assert correct(calls(("ping", {})), g0) == 3.0
    assert correct(calls(("ping", {"x": 1})), g0) == pytest.approx(0.0)


def test_duplicate_names_use_multiset_jaccard_and_each_prediction_once():
    g = gold(("f", {"a": 1}), ("f", {"a": 2}))  # Smax = 1 + 2 + 2 = 5
    # One prediction can only serve one gold call: names 1/2, pair 2 -> S = 2.5
    assert correct(calls(("f", {"a": 1})), g) == pytest.approx(6 * 2.5 / 5 - 3)
    # Three predictions f: names overlap 2 / (2 + 3 - 2) = 2/3; pairs 2 + 2
    p = calls(("f", {"a": 2}), ("f", {"a": 1}), ("f", {"a": 1}))
    assert correct(p, g) == pytest.approx(6 * (2 / 3 + 4) / 5 - 3)


def test_greedy_ties_take_the_earliest_and_can_lose_to_the_optimal_pairing():
    # Gold 1 {a: 1, b: 1}, gold 2 {a: 1, c: 5}; predictions P1 {a: 1, b: 9, c: 5}, P2 {a: 1, b: 1}.
    g = gold(("f", {"a": 1, "b": 1}), ("f", {"a": 1, "c": 5}))  # Smax = 1 + 3 + 3 = 7
    p = calls(("f", {"a": 1, "b": 9, "c": 5}), ("f", {"a": 1, "b": 1}))
    # gold1: P1 keys 2/3 + 1 value = 5/3, P2 keys 1 + 2 values = 3 -> P2. gold2: P1 keys 2/3 + 2 = 8/3.
    greedy = 6 * (1 + 3 + 8 / 3) / 7 - 3
    assert correct(p, g) == pytest.approx(greedy)
    assert correct(p, g, matching="optimal") == pytest.approx(greedy)  # greedy is optimal here
    # Greedy loses: gold1 {a: 1} takes P1 {a: 1, b: 2, c: 3} (keys 1/3 + 1 = 4/3 beats P2 {a: 9}: 1 + 0 = 1), which
    # leaves gold2 {a: 1, b: 2, c: 3} only P2 (keys 1/3 + 0). Optimal: gold1-P2 (1) + gold2-P1 (1 + 3 = 4).
    g = gold(("f", {"a": 1}), ("f", {"a": 1, "b": 2, "c": 3}))  # Smax = 1 + 2 + 4 = 7
    p = calls(("f", {"a": 1, "b": 2, "c": 3}), ("f", {"a": 9}))
    assert correct(p, g) == pytest.approx(6 * (1 + 4 / 3 + 1 / 3) / 7 - 3)
    assert correct(p, g, matching="optimal") == pytest.approx(6 * (1 + 5) / 7 - 3)
    # Exact tie for the gold call (P1 and P2 identical): one is taken, the other only costs in the names' Jaccard.
    g = gold(("f", {"a": 1}))  # Smax = 3; names [f] vs [f, f]: 1/2; pair: keys 1/2 + 1
    assert correct(calls(("f", {"a": 1, "z": 0}), ("f", {"a": 1, "z": 0})), g) == pytest.approx(6 * 2 / 3 - 3)


def test_optimal_leaves_rows_unpaired_when_nothing_scores():
    g = gold(("f", {"a": 1}), ("g", {"b": 1}))  # Smax = 5; names 1/3 (overlap 1 / (2 + 2 - 1))
    p = calls(("f", {"a": 1}), ("h", {"b": 1}))
    for matching in ("greedy", "optimal"):
        assert correct(p, g, matching=matching) == pytest.approx(6 * (1 / 3 + 2) / 5 - 3)


def test_reward_range_and_registry_and_errors():
    assert get_reward_func("tool_format") is tool_format
    assert get_reward_func("tool_correctness") is tool_correctness
    message = [{"role": "assistant", "content": GOLD_CALL}]
    assert tool_correctness([message, "x"], answer=[GOLD_CALL, GOLD_CALL]) == [3.0, -3.0]
    with pytest.raises(ValueError, match="matching"):
        tool_correctness(["x"], answer=[GOLD_CALL], matching="hungarian")
    with pytest.raises(ValueError, match="gold answer #0"):
        tool_correctness(["x"], answer=["<think/>\n<tool_call>\nnot json\n</tool_call>"])
    with pytest.raises(ValueError, match="gold answer #0"):
        tool_correctness(["x"], answer=[gold(("f", []))])
