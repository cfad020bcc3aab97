"""reasoning_format: the layout with written work in the think block, checked by hand and on H9's committed
completions (docs/results/qwen_gdpo_grpo/), from which the rule was read."""

import gzip
import json
from pathlib import Path

import pytest

from gdpo_trl.rewards import get_reward_func
from gdpo_trl.rewards.gsm8k import format_reward
from gdpo_trl.rewards.reasoning import reasoning_format_reward, think_lines

ROOT = Path(__file__).resolve().parents[2]
H9 = ROOT / "docs" / "results" / "qwen_gdpo_grpo"
TRAINED = [f"eval-{arm}-seed{seed}" for arm in ("gdpo", "grpo") for seed in (0, 1, 2)]

WORKED = "<think>\nJean has 30 lollipops.\nShe eats 2, so 30 - 2 = 28 are left.\n</think>\n<answer>\n14\n</answer>"


def _completions(folder: str) -> list[dict]:
    with gzip.open(H9 / folder / "completions.jsonl.gz", "rt") as handle:
        return [json.loads(line) for line in handle]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (WORKED, 1.0),
        # One line, even with a calculation: the layout H9's runs learned.
        ("<think>\nShe has 30 - 2 = 28 left.\n</think>\n<answer>\n14\n</answer>", 0.0),
        # Two lines but no calculation: a restated question.
        ("<think>\nJean has 30 lollipops.\nShe eats 2.\n</think>\n<answer>14</answer>", 0.0),
        # "=" without a digit before it states, not computes.
        ("<think>\nLet x be the bags.\nx = 14\n</think>\n<answer>14</answer>", 0.0),
        ("<think>\n\\[ 3 \\times 5 = 15 \\]\nSo fifteen.\n</think>\n<answer>15</answer>", 1.0),
        # The work is there but the layout is not (no </think>): format_reward's rule decides.
        ("<think>\nJean has 30.\n30 - 2 = 28\n<answer>14</answer>", 0.0),
        (WORKED + "\nextra", 0.0),
    ],
)
def test_the_rule_by_hand(completion, expected):
    assert reasoning_format_reward([completion]) == [expected]
    assert reasoning_format_reward([[{"role": "assistant", "content": completion}]]) == [expected]


def test_its_knobs_and_registry_name():
    one_line = "<think>\n30 - 2 = 28\n</think>\n<answer>28</answer>"
    assert reasoning_format_reward([one_line], min_lines=1) == [1.0]
    assert reasoning_format_reward([WORKED], min_calculations=2) == [0.0]
    assert get_reward_func("reasoning_format") is reasoning_format_reward
    with pytest.raises(ValueError, match="min_lines >= 1"):
        reasoning_format_reward([WORKED], min_lines=0)


def test_on_the_starts_correct_answers():
    """The start's 17 correct answers: of the 2 in the layout, the one with written steps passes, the one-line plan
    with no calculation fails; the 14 that reasoned but never closed </think> pass once it is closed."""
    rows = _completions("eval-start")
    correct = [row["completions"][0] for row in rows if row["rewards"][0]["correctness"] == 1.0]
    assert len(correct) == 17
    laid_out = [c for c in correct if format_reward([c]) == [1.0]]
    assert len(laid_out) == 2
    assert reasoning_format_reward(laid_out) == [1.0, 0.0]
    assert len(think_lines(laid_out[1])) == 1
    unclosed = [c for c in correct if "<think>" in c and "</think>" not in c]
    assert len(unclosed) == 14
    closed = [c.replace("<answer>", "</think>\n<answer>", 1) for c in unclosed]
    assert sum(reasoning_format_reward(closed)) == 14
    # All of the start's completions: 52 in the layout, 3 of them with written work.
    texts = [row["completions"][0] for row in rows]
    assert sum(format_reward(texts)) == 52 and sum(reasoning_format_reward(texts)) == 3


def test_every_one_line_think_of_h9s_trained_runs_fails():
    texts = [text for folder in TRAINED for row in _completions(folder) for text in row["completions"]]
    assert len(texts) == 1200
    one_line = [text for text in texts if "</think>" in text and len(think_lines(text)) <= 1]
    assert len(one_line) == 1169
    assert sum(reasoning_format_reward(one_line)) == 0
    assert sum(reasoning_format_reward(texts)) == 18
