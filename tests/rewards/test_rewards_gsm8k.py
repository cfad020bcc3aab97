"""Table-driven tests for the GSM8K rewards (the registry that names them: test_reward_registry.py)."""

import pytest

from gdpo_trl.rewards.gsm8k import correctness_reward, extract_answer, format_reward, integer_reward

VALID = "<think>6 * 3 = 18</think>\n<answer>18</answer>"


def wrap(answer: str) -> str:
    """A well-formed completion whose answer block holds ``answer``."""
    return f"<think>reasoning</think><answer>{answer}</answer>"


def chat(text: str) -> list[dict]:
    """``text`` as a conversational completion."""
    return [{"role": "assistant", "content": text}]


# TRL passes these alongside the dataset columns; every reward must accept and ignore them.
TRL_KWARGS = {
    "prompts": ["p"],
    "completion_ids": [[1, 2]],
    "trainer_state": None,
    "log_extra": lambda *a, **k: None,
    "log_metric": lambda *a, **k: None,
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>18</answer>", "18"),
        ("<answer>1</answer> then <answer>2</answer>", "2"),  # last block wins
        ("<answer>1</answer> then <answer>2", "1"),  # unclosed last block: the last complete one wins
        ("<answer>  18 \n</answer>", "18"),  # whitespace stripped
        ("<answer>\nline one\nline two\n</answer>", "line one\nline two"),  # multiline
        ("<answer></answer>", ""),
        ("<answer>a<answer>b</answer>", "b"),  # nested opening tag: the innermost block is the complete one
        ("<answer>1</answer> stray </answer>", "1"),  # stray closing tag does not extend the block
        ("no tags at all", None),
        ("<answer>18", None),  # unclosed
        ("18</answer>", None),  # no opening tag
        ("</answer><answer>", None),  # tags in the wrong order
        ("", None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VALID, 1.0),
        ("<think>a</think><answer>b</answer>", 1.0),  # no whitespace between blocks
        ("  \n<think>a</think> \n\t <answer>b</answer>\n  ", 1.0),  # whitespace around and between
        ("<think>\nmulti\nline\n</think>\n<answer>\n18\n</answer>", 1.0),
        ("<think> <b </think><answer>1</answer>", 1.0),  # content may contain a bare '<'
        ("<answer>18</answer>", 0.0),  # missing think
        ("<think>a</think>", 0.0),  # missing answer
        ("<think></think><answer>18</answer>", 0.0),  # empty think
        ("<think> \n\t</think><answer>18</answer>", 0.0),  # blank think
        ("<think>a</think><answer></answer>", 0.0),  # empty answer
        ("<think>a</think><answer>  \n </answer>", 0.0),  # blank answer
        ("<think>a</think><think>b</think><answer>18</answer>", 0.0),  # duplicated think block
        ("<think>a</think><answer>1</answer><answer>2</answer>", 0.0),  # duplicated answer block
        ("<think>a <think> b</think><answer>18</answer>", 0.0),  # duplicated opening tag
        ("<think>a</think><answer>18</answer></answer>", 0.0),  # duplicated closing tag
        ("<think>a</think><answer>18</answer> done", 0.0),  # text after the answer
        ("Sure! <think>a</think><answer>18</answer>", 0.0),  # text before think
        ("<think>a</think> so <answer>18</answer>", 0.0),  # text between the blocks
        ("<answer>18</answer><think>a</think>", 0.0),  # reversed order
        ("<think>a<answer>18</answer></think>", 0.0),  # answer nested in think
        ("<think>a</think", 0.0),  # malformed
        ("", 0.0),
    ],
)
def test_format_reward(text, expected):
    assert format_reward([text]) == [expected]
    assert format_reward([chat(text)], **TRL_KWARGS) == [expected]


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("18", "18", 1.0),
        ("18.0", "18", 1.0),
        ("18.000", "18", 1.0),
        ("18", "18.0", 1.0),
        ("1,080", "1080", 1.0),
        ("1080", "1,080", 1.0),  # gold with a comma
        ("1,234,567", "1234567", 1.0),
        ("$18", "18", 1.0),
        ("$1,080.00", "1080", 1.0),
        ("18.", "18", 1.0),  # trailing full stop
        ("  18  ", "18", 1.0),
        ("18", " 18\n", 1.0),  # gold whitespace
        ("-10", "-10", 1.0),
        ("$-10", "-10", 1.0),
        ("0.5", ".5", 1.0),
        ("3.14", "3.140", 1.0),
        ("123456789012345678901234567890", "123456789012345678901234567890", 1.0),
        ("123456789012345678901234567891", "123456789012345678901234567890", 0.0),  # float equality would say 1.0
        ("10", "-10", 0.0),
        ("17", "18", 0.0),  # wrong number
        ("18.5", "18", 0.0),
        ("18 dollars", "18", 0.0),  # units
        ("eighteen", "18", 0.0),  # words
        ("9+9", "18", 0.0),  # expression
        ("١٨", "18", 0.0),  # Arabic-Indic digits
        ("１８", "18", 0.0),  # fullwidth digits
        ("-$10", "-10", 0.0),  # the '$' must come first
        ("+18", "18", 0.0),
        ("1e1", "10", 0.0),
        ("1,0800", "10800", 0.0),  # bad thousands grouping is not a number
        ("18..", "18", 0.0),
        ("$$18", "18", 0.0),
        ("", "18", 0.0),
        ("abc", "abc", 0.0),  # gold that is not a number never matches
        ("18", "", 0.0),
        ("18", "18 apples", 0.0),
    ],
)
def test_correctness_reward(predicted, gold, expected):
    assert correctness_reward([wrap(predicted)], answer=[gold]) == [expected]
    assert correctness_reward([chat(wrap(predicted))], answer=[gold], **TRL_KWARGS) == [expected]


@pytest.mark.parametrize(
    "completion",
    ["18", "<answer>18", "<think>18</think>", "the answer is 18"],
)
def test_correctness_without_answer_block_scores_zero(completion):
    assert correctness_reward([completion], answer=["18"]) == [0.0]


def test_correctness_uses_last_answer_block_even_if_format_is_broken():
    assert correctness_reward(["<answer>17</answer> no wait <answer>18</answer>"], answer=["18"]) == [1.0]


def test_correctness_accepts_non_string_gold():
    assert correctness_reward([wrap("18"), wrap("18")], answer=[18, 18.0]) == [1.0, 1.0]


def test_correctness_without_answer_column_raises():
    with pytest.raises(ValueError, match="needs an `answer` column"):
        correctness_reward([wrap("18")])


def test_correctness_with_mismatched_lengths_raises():
    with pytest.raises(ValueError, match="2 completions but 1 gold answers"):
        correctness_reward([wrap("1"), wrap("2")], answer=["1"])


@pytest.mark.parametrize(
    ("predicted", "expected"),
    [
        ("18", 1.0),
        ("0", 1.0),
        ("-3", 1.0),
        ("1,080", 1.0),
        ("1080", 1.0),
        ("12,345,678", 1.0),
        ("-1,000", 1.0),
        (" 18 ", 1.0),  # extract_answer strips
        ("123456789012345678901234567890", 1.0),
        ("18.0", 0.0),
        ("18.5", 0.0),
        ("18.", 0.0),  # a trailing full stop is not part of an integer literal
        ("$18", 0.0),
        ("+18", 0.0),
        ("1,0800", 0.0),  # bad grouping
        ("1234,567", 0.0),  # lead group longer than 3 digits
        ("1,08", 0.0),
        (",5", 0.0),
        ("5,", 0.0),
        ("-", 0.0),
        ("--3", 0.0),
        ("1 000", 0.0),
        ("eighteen", 0.0),
        ("18 apples", 0.0),
        ("١٨", 0.0),  # Arabic-Indic digits
        ("²", 0.0),  # str.isdigit() is True for this
        ("", 0.0),
    ],
)
def test_integer_reward(predicted, expected):
    assert integer_reward([wrap(predicted)]) == [expected]
    assert integer_reward([chat(wrap(predicted))], **TRL_KWARGS) == [expected]


def test_integer_reward_without_answer_block_scores_zero():
    assert integer_reward(["<think>18</think>", "18", ""]) == [0.0, 0.0, 0.0]


def test_conversational_completion_scores_last_message():
    completion = [{"role": "assistant", "content": "<answer>1</answer>"}, {"role": "assistant", "content": VALID}]
    assert format_reward([completion]) == [1.0]
    assert correctness_reward([completion], answer=["18"]) == [1.0]
    assert integer_reward([completion]) == [1.0]


def test_empty_conversation_scores_zero():
    assert format_reward([[]]) == [0.0]
    assert integer_reward([[]]) == [0.0]
    assert correctness_reward([[]], answer=["18"]) == [0.0]


def test_non_string_message_content_raises():
    with pytest.raises(TypeError, match="content to be a str"):
        format_reward([[{"role": "assistant", "content": [{"type": "text", "text": VALID}]}]])


def test_mixed_batch_returns_one_float_per_completion():
    completions = [
        VALID,  # format, correct, integer
        chat(wrap("18.0")),  # format, correct, not integer
        "<answer>17</answer>",  # no format, wrong, integer
        "no answer at all",  # nothing
        chat("<think>x</think><answer>1,080</answer> trailing"),  # no format, correct, integer
    ]
    answers = ["18", "18", "18", "18", "1080"]
    cases = [
        (format_reward(completions, answer=answers, **TRL_KWARGS), [1.0, 1.0, 0.0, 0.0, 0.0]),
        (correctness_reward(completions, answer=answers, **TRL_KWARGS), [1.0, 1.0, 0.0, 0.0, 1.0]),
        (integer_reward(completions, answer=answers, **TRL_KWARGS), [1.0, 0.0, 1.0, 0.0, 1.0]),
    ]
    for result, expected in cases:
        assert result == expected
        assert all(type(x) is float for x in result)


def test_empty_batch():
    assert format_reward([]) == []
    assert correctness_reward([], answer=[]) == []
    assert integer_reward([]) == []
