"""The ``equations`` process reward (gdpo_trl/rewards/equations.py): each equation written in a completion is a step,
scored by whether its arithmetic holds, on hand-checked texts and on the warm start's traces."""

import pytest

from gdpo_trl.rewards.process import is_process_reward


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("<think>3*4=12</think>\n<answer>12</answer>", [(21, 1.0)]),  # the warm start's trace: ends with its line
        ("<think>3*4=13</think>\n<answer>13</answer>", [(21, 0.0)]),
        ("3*4=12, 12+5=18\nthen 2 + 3 * 4 = 14", [(6, 1.0), (15, 0.0), (35, 1.0)]),  # two on one line
        ("10 / 3 = 3.33\n10/3=3\n7-2-1=4", [(13, 1.0), (20, 0.0), (28, 1.0)]),
        ("1,200 + 0.5 = 1200.5 dollars", [(28, 1.0)]),
        ("5 - 8 = -3 and 2 / 0 = 1", [(10, 1.0), (24, 0.0)]),
        ("Natalia sold 48/2 = <<48/2=24>>24 clips", [(39, 1.0)]),
        ("no arithmetic: 12 = 12", None),
        ("", None),
    ],
)
def test_equation_steps(text, steps):
    from gdpo_trl.rewards.equations import equation_steps

    assert equation_steps(text) == steps


def test_equations_is_a_registered_process_reward_on_conversational_completions():
    from gdpo_trl.rewards import get_reward_func

    reward = get_reward_func("equations")
    assert is_process_reward(reward) and reward.__name__ == "equations_reward"
    completions = [[{"role": "assistant", "content": "2*3=6\n"}], [{"role": "assistant", "content": "six"}]]
    assert reward(completions=completions) == [[(5, 1.0)], None]


def test_equations_score_the_warm_start_traces():
    import random

    from gdpo_trl.rewards.equations import equations_reward
    from gdpo_trl.tasks.traces import make_trace
    from gdpo_trl.tasks.warmstart_data import warmstart_problems

    rng = random.Random(0)
    traces = [make_trace(row, rng)[0] for row in warmstart_problems(20)]
    steps = equations_reward(completions=traces)
    assert all(s is not None and len(s) == 1 and s[0][1] == 1.0 for s in steps)  # one right equation each
