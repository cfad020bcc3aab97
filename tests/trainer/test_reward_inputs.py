"""Each reward gets inputs it cannot change for the others.

TRL 1.16's ``_calculate_rewards`` hands every reward function the same lists (``prompts``, ``completions``,
``completion_ids`` and each dataset column), so a reward listed first that wrote to them changed what the rewards after
it read, with no word: overwriting ``answer[i]`` dropped correctness' mean from 0.625 to 0.0, rewriting each
completion raised format's to 1.0, and emptying ``prompts`` got the culprit blamed for returning 8 rewards "where 0
were expected". ``CheckedReward`` now gives each call its own copies (``private_inputs``), so each row below scores
the same as the rewards alone, and the trainer's own lists are as they were. The rows go through TRL's real
``_calculate_rewards`` on a ``GDPOTrainer``; each first shows what the same culprit does to unwrapped rewards that
share the lists (what TRL did before), so the row can fail.
"""

from __future__ import annotations

import copy

import pytest

from gdpo_trl import GDPOTrainer
from gdpo_trl.rewards import correctness_reward, format_reward
from gdpo_trl.trainer.reward_checks import own_copy, private_inputs
from tests.helpers.toy import toy_config, toy_dataset

WELL = "<think>add them</think>\n<answer>{}</answer>"
# Two prompts of four completions: 5 of 8 right (correctness 0.625), 6 of 8 well formed (format 0.75).
ANSWERS = ["4"] * 4 + ["6"] * 4
COMPLETIONS = [WELL.format(4), WELL.format(4), WELL.format(5), "<answer>4</answer>"] + [
    WELL.format(6), WELL.format(6), "six", WELL.format(7)
]  # fmt: skip


def overwrites_answers(completions, answer, **kwargs):
    for i in range(len(answer)):
        answer[i] = "-1"
    return [0.0] * len(completions)


def rewrites_completions(completions, **kwargs):
    for completion in completions:
        completion[0]["content"] = WELL.format(0)  # the message dict inside a conversational completion
    return [0.0] * len(completions)


def empties_prompts(prompts, completions, **kwargs):
    prompts.clear()
    return [0.0] * len(completions)


def batch():
    """What TRL passes ``_calculate_rewards``: inputs, prompts, completions (conversational) and their ids."""
    prompts = [[{"role": "user", "content": f"What is {n // 2} + {n // 2}?"}] for n in (4, 6) for _ in range(4)]
    inputs = [{"prompt": p, "answer": a} for p, a in zip(prompts, ANSWERS, strict=True)]
    completions = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    return inputs, prompts, completions, [[1, 2, 3]] * len(completions)


# (id, culprit, the reward whose scores it changed, what that reward scores alone, what it scored after the culprit)
ROWS = [
    ("answer_overwritten", overwrites_answers, correctness_reward, 0.625, 0.0),
    ("completions_rewritten", rewrites_completions, format_reward, 0.75, 1.0),
    ("prompts_emptied", empties_prompts, format_reward, 0.75, 0.75),
]


@pytest.mark.parametrize(("culprit", "victim", "alone", "shared"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_reward_cannot_change_what_the_next_one_reads(tiny_model_path, tmp_path, culprit, victim, alone, shared):
    inputs, prompts, completions, ids = batch()
    # Before: TRL's way, the same lists to both rewards.
    kwargs = {"prompts": prompts, "completions": completions, "completion_ids": ids, "answer": list(ANSWERS)}
    kwargs = copy.deepcopy(kwargs)
    culprit(**kwargs)
    assert sum(victim(**kwargs)) / 8 == shared
    if culprit is empties_prompts:  # TRL then compared the 8 values with len(prompts) == 0 and blamed the culprit
        assert len(kwargs["prompts"]) == 0

    trainer = GDPOTrainer(
        tiny_model_path, reward_funcs=[culprit, victim], args=toy_config(tmp_path), train_dataset=toy_dataset()
    )
    before = copy.deepcopy((inputs, prompts, completions, ids))
    rewards = trainer._calculate_rewards(inputs, prompts, completions, ids)
    assert rewards[:, 1].mean().item() == alone  # as if the culprit were not there
    assert (inputs, prompts, completions, ids) == before  # TRL's own lists, which it logs afterwards, untouched


def test_copies_go_down_to_the_leaves_and_leave_shared_objects_alone():
    state, message = object(), {"role": "assistant", "content": "x", "tool_calls": [{"name": "f"}]}
    kwargs = {"completions": [[message]], "answer": ("a", ["b"]), "trainer_state": state, "environments": [state]}
    own = private_inputs(kwargs)
    assert own == kwargs and own["trainer_state"] is state and own["environments"] is kwargs["environments"]
    assert (
        own["completions"][0][0] is not message
        and own["completions"][0][0]["tool_calls"][0] is not message["tool_calls"][0]
    )
    assert own["answer"][1] is not kwargs["answer"][1]
    text = "x" * 10
    assert own_copy([text])[0] is text  # strings are immutable: shared, not copied
