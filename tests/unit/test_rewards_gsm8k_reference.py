"""The GSM8K rewards' reference semantics (semantics="reference"), case by case, and that the default is unchanged."""

import pytest

from gdpo_trl.rewards import get_reward_funcs
from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward, reference_answer

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
        ("<think>x</think>\n<answer>1</answer><answer>2</answer>", 0.0, 1.0),  # tags not counted there
        ("<think>x</think>\n<answer>42", 0.0, 0.0),
        ("<think>x</think>\n<answer>42</answer> done", 0.0, 0.0),
    ],
)
def test_format_reference_vs_ours(text, ours, reference):
    assert format_reward([text]) == [ours]
    assert format_reward([text], **REF) == [reference]


def test_message_lists_unknown_semantics_and_recipe_kwargs():
    message = [{"role": "assistant", "content": "<think></think>\n<answer>7"}]
    assert format_reward([message], **REF) == [0.0]
    assert correctness_reward([message], answer=["7"], **REF) == [1.0]
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
