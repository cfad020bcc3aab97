"""last_number_reward: what a model answering in its own style solved (the last \\boxed{} content, else the last
number), used to measure the Qwen start with its own chat default (study H9)."""

from decimal import Decimal

import pytest

from gdpo_trl.rewards.gsm8k import last_number_answer, last_number_reward


@pytest.mark.parametrize(
    "text, expected",
    [
        ("so the answer is \\boxed{1,080}.", "1080"),
        ("Total: 3 + 4 = 7.", "7"),
        ("x is 18.0", "18"),
        ("She pays $70,000 in the end.", "70000"),
        ("\\boxed{42} and then 7 more words 9", "42"),  # a boxed answer wins over later numbers
        ("a loss of -3 dollars", "-3"),
        ("no number here", None),
    ],
)
def test_the_answer_read(text, expected):
    assert last_number_answer(text) == (None if expected is None else Decimal(expected))


def test_the_reward_compares_with_the_gold_number():
    completions = ["The answer is 18.", "It makes 17 dollars.", [{"role": "assistant", "content": "\\boxed{3}"}]]
    assert last_number_reward(completions, answer=["18", "18", "3"]) == [1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="needs an `answer` column"):
        last_number_reward(completions)
