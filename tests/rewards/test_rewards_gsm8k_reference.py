"""The GSM8K rewards' reference semantics (semantics="reference"), case by case and on a seeded battery of near-miss
completions scored by an independent re-implementation of the reference's rules; and that the default is unchanged."""

import random
import re

import pytest

from gdpo_trl.rewards import get_reward_funcs
from gdpo_trl.rewards.gsm8k import (
    correctness_reward,
    format_reward,
    integer_reward,
    reference_answer,
    reference_gold_answer,
)

REF = {"semantics": "reference"}


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<think>x</think>\n<answer>42</answer>", "42"),
        ("<think>x</think>\n<answer> 42 \n", "42"),  # no closing tag: the rest of the text
        ("<answer>1</answer> then <answer>2</answer> tail", "2"),  # the last opening tag
        ("<answer>1 </answer> x </answer>", "1"),  # cut at the first closing tag after it
        ("  42  ", "42"),  # no tags at all: the whole text
        ("<think>x</think>\n<answer></answer>", ""),
    ],
)
def test_reference_answer(text, answer):
    assert reference_answer(text) == answer


@pytest.mark.parametrize(
    ("text", "gold", "ours", "reference"),
    [
        ("<think>x</think>\n<answer>42</answer>", "42", 1.0, 1.0),
        ("<think>x</think>\n<answer>42", "42", 0.0, 1.0),  # the case: no </answer>
        ("42", "42", 0.0, 1.0),  # no tags at all
        ("<think>x</think>\n<answer>1080</answer>", "1,080", 1.0, 0.0),  # exact strings there
        ("<think>x</think>\n<answer>1,080</answer>", "1,080", 1.0, 1.0),
        ("<think>x</think>\n<answer>18.0</answer>", "18", 1.0, 0.0),
        ("<think>x</think>\n<answer>$18</answer>", "18", 1.0, 0.0),
        ("<think>x</think>\n<answer>-3</answer>", "-3", 1.0, 1.0),
    ],
)
def test_correctness_reference_vs_ours(text, gold, ours, reference):
    assert correctness_reward([text], answer=[gold]) == [ours]
    assert correctness_reward([text], answer=[gold], **REF) == [reference]


@pytest.mark.parametrize(
    ("text", "ours", "reference"),
    [
        ("<think>x</think>\n<answer>42</answer>", 1.0, 1.0),
        ("<think>x</think>\n<answer>42", 0.0, 1.0),  # no closing tag
        ("<think>x</think>\n<answer>-3</answer>", 1.0, 0.0),  # isdigit has no minus sign
        ("<think>x</think>\n<answer>1,080</answer>", 1.0, 0.0),
        ("<think>x</think>\n<answer>\u0664\u0662</answer>", 0.0, 1.0),  # Arabic-Indic digits pass isdigit
        ("<think>x</think>\n<answer>\u00b2</answer>", 0.0, 1.0),  # so does a superscript two
        ("<think>x</think>\n<answer></answer>", 0.0, 0.0),
    ],
)
def test_integer_reference_vs_ours(text, ours, reference):
    assert integer_reward([text]) == [ours]
    assert integer_reward([text], **REF) == [reference]


@pytest.mark.parametrize(
    ("text", "ours", "reference"),
    [
        ("<think>x</think>\n<answer>42</answer>", 1.0, 1.0),
        ("<think>x</think>\n<answer>42</answer>\n", 1.0, 1.0),  # one final newline, as `$` allows
        ("<think>x</think>\n<answer>42</answer>\n\n", 1.0, 0.0),
        ("<think>x</think><answer>42</answer>", 1.0, 0.0),  # exactly one newline between the blocks
        ("<think>x</think>\n\n<answer>42</answer>", 1.0, 0.0),
        ("<think>x</think> \n<answer>42</answer>", 1.0, 0.0),
        ("<think></think>\n<answer>42</answer>", 0.0, 1.0),  # empty think accepted there
        ("<think>x</think>\n<answer></answer>", 0.0, 1.0),  # empty answer too
        (" <think>x</think>\n<answer>42</answer>", 1.0, 0.0),  # leading whitespace fails there
        ("<think>a\nb</think>\n<answer>4\n2</answer>", 1.0, 1.0),  # dot matches newlines
        ("<think>x</think>\n<answer>1</answer><answer>2</answer>", 0.0, 0.0),  # <answer> counted there too
        ("<think>x</think>\n<answer>1</answer></answer>", 0.0, 0.0),  # and </answer>
        ("<think>x</think>\n<answer><answer>1</answer>", 0.0, 0.0),
        ("<think>a<think>b</think>\n<answer>1</answer>", 0.0, 1.0),  # <think> tags are not counted there
        ("<think>a</think>b</think>\n<answer>1</answer>", 0.0, 1.0),
        ("<think>x</think>\n<answer>42", 0.0, 0.0),
        ("<think>x</think>\n<answer>42</answer> done", 0.0, 0.0),
    ],
)
def test_format_reference_vs_ours(text, ours, reference):
    assert format_reward([text]) == [ours]
    assert format_reward([text], **REF) == [reference]


def test_gold_values_compared_as_they_are():
    text = "<think>x</think>\n<answer>None</answer>"
    assert correctness_reward([text], answer=[None], **REF) == [0.0]  # no '####' in the solution: gold None
    assert correctness_reward(["<answer>42</answer>"], answer=[42], **REF) == [0.0]  # "42" != 42, as there
    assert correctness_reward(["<answer>42</answer>"], answer=[42]) == [1.0]  # ours reads it as a number


@pytest.mark.parametrize(
    ("solution", "gold"),
    [
        ("so 72 clips.\n#### 72", "72"),
        ("a #### 1 #### 2", "1"),  # between the first and the second marker
        ("#### 1,080\n", "1,080"),
        ("no marker", None),
        ("ends with ####", ""),
    ],
)
def test_reference_gold_answer(solution, gold):
    assert reference_gold_answer(solution) == gold


def test_message_lists_unknown_semantics_and_recipe_kwargs():
    message = [{"role": "assistant", "content": "<think></think>\n<answer>7"}]
    assert format_reward([message], **REF) == [0.0]
    assert correctness_reward([message], answer=["7"], **REF) == [1.0]
    # Several messages: the reference reads the first, ours the last.
    two = [{"role": "assistant", "content": "<think></think>\n<answer>7</answer>"}, {"role": "tool", "content": "8"}]
    assert [correctness_reward([two], answer=["7"], **REF), correctness_reward([two], answer=["7"])] == [[1.0], [0.0]]
    assert [format_reward([two], **REF), integer_reward([two], **REF)] == [[1.0], [1.0]]
    for reward in (format_reward, integer_reward):
        with pytest.raises(ValueError, match="semantics must be one of"):
            reward(["x"], semantics="paper")
    with pytest.raises(ValueError, match="semantics must be one of"):
        correctness_reward(["x"], answer=["1"], semantics="paper")
    # The way a recipe turns it on: reward_kwargs bound by the registry.
    names = ["correctness", "integer", "format"]
    funcs = get_reward_funcs(names, {name: REF for name in names})
    text = "<think></think>\n<answer>7"
    assert [f([text], answer=["7"])[0] for f in funcs] == [1.0, 1.0, 0.0]


# --- The battery: the reference's rules written out again here, independently of gdpo_trl.rewards.gsm8k ----------


def rule_text(completion):
    """The reference reads ``completion[0]["content"]``; a plain string is taken as it is."""
    return completion if isinstance(completion, str) else completion[0]["content"]


def rule_extract(text):
    """Text after the last ``<answer>``, up to the first ``</answer>`` in it, stripped."""
    tail = text.rsplit("<answer>", 1)[-1]
    cut = tail.find("</answer>")
    return (tail if cut < 0 else tail[:cut]).strip()


def rule_gold(solution):
    """Between the first ``####`` and the next one (or the end), stripped; ``None`` with no ``####``."""
    parts = solution.split("####")
    return parts[1].strip() if len(parts) > 1 else None


def rule_format(text):
    layout = re.search(r"^<think>.*?</think>\n<answer>.*?</answer>$", text, flags=re.DOTALL)
    return float(bool(layout) and text.count("<answer>") == 1 and text.count("</answer>") == 1)


def rule_scores(completion, solution):
    text = rule_text(completion)
    answer = rule_extract(text)
    return (float(answer == rule_gold(solution)), float(answer.isdigit()), rule_format(text))


NUMBERS = ["42", "-3", "1,080", "1080", "18.0", "18", " 42 ", "$18", "\u0664\u0662", "\u00b2", "", "12.", "007"]
NUMBERS += ["0", "4 2", "abc", "None", "-0", "3.14", "1,0800", "\u00a042", "42\n", "+5", "1e3"]
# Each slot of the layout: the reference's own piece first (picked most of the time), then near misses of it.
SLOTS = [
    ["", " ", "\n", "text ", "<answer>9</answer>", "\ufeff", "\t"],  # before <think>
    ["<think>", "", "<think><think>", "<Think>", "<think> "],
    ["x", "a\nb", "", "6 * 3 = 18", "</think>", "<answer>", "#### 5", "</answer>", "<think>"],  # the thinking
    ["</think>", "", "</think></think>", "</think >"],
    ["\n", "", "\n\n", " \n", "\r\n", "\n ", "\t\n"],  # between the blocks
    ["<answer>", "", "<answer><answer>", "<answer> ", "<ANSWER>"],
    NUMBERS,
    ["</answer>", "", "</answer></answer>", "</answer>\n", "</answer>\n\n", "</answer> "],
    ["", "\n", " done", "<answer>7</answer>", "\n<answer>5", "</answer>", "\r", "\n\n"],  # after </answer>
]
TAGS = ["<think>", "</think>", "<answer>", "</answer>", "\n", "####", ","]


def near_miss(rng):
    text = "".join(slot[0] if rng.random() < 0.8 else rng.choice(slot) for slot in SLOTS)
    for _ in range(rng.choice([0, 0, 0, 1, 2])):  # duplicate, drop or insert a piece somewhere
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randrange(1, 12))
        kind = rng.randrange(3)
        if kind == 0:
            text = text[:i] + text[i:j] * 2 + text[j:]
        elif kind == 1:
            text = text[:i] + text[j:]
        else:
            text = text[:i] + rng.choice(TAGS) + text[i:]
    return text


def as_completion(rng, text):
    kind = rng.randrange(4)
    if kind == 0:
        return text
    message = {"role": "assistant", "content": text}
    if kind == 1:
        return [message]
    other = {"role": rng.choice(["assistant", "tool"]), "content": near_miss(rng)}
    return [message, other] if kind == 2 else [other, message]


def solution_for(rng, completion):
    """A GSM8K-style solution; its gold is often the completion's own answer, so correctness is not always 0."""
    own = rule_extract(rule_text(completion))
    golds = [own, own, rng.choice(NUMBERS).strip(), f" {own} "]
    parts = [f"step one\n#### {rng.choice(golds)}" for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))]
    return "reasoning " + "\n".join(parts) + rng.choice(["", "\n", " tail"])


BATTERY = 2000


def test_battery_of_near_misses_scores_like_the_reference_rules():
    rng = random.Random(20260105)
    completions = [as_completion(rng, near_miss(rng)) for _ in range(BATTERY)]
    solutions = [solution_for(rng, c) for c in completions]
    golds = [reference_gold_answer(s) for s in solutions]
    assert golds == [rule_gold(s) for s in solutions]
    ours = list(
        zip(
            correctness_reward(completions, answer=golds, **REF),
            integer_reward(completions, **REF),
            format_reward(completions, **REF),
            strict=True,
        )
    )
    expected = [rule_scores(c, s) for c, s in zip(completions, solutions, strict=True)]
    disagreements = [(c, s, o, e) for c, s, o, e in zip(completions, solutions, ours, expected, strict=True) if o != e]
    assert not disagreements, disagreements[:5]
    # The battery is not trivial: every reward takes both values often, and the near-misses hit the edge cases.
    for k in range(3):
        ones = sum(e[k] for e in expected)
        assert 0.05 * BATTERY < ones < 0.95 * BATTERY, (k, ones)
    assert sum(g is None for g in golds) > 50 and sum(s.count("####") > 1 for s in solutions) > 100
    assert sum(isinstance(c, list) and len(c) == 2 for c in completions) > 500
