"""The multi-turn agent rewards on hand-written episodes (values computed by hand in the comments), and None for the
rows of another task."""

import pytest

from gdpo_trl.rewards import get_reward_funcs
from gdpo_trl.rewards.agent import (
    agent_cost,
    agent_format,
    agent_success,
    arith_correctness,
    arith_format,
    count_calls,
    final_answer,
)
from gdpo_trl.rewards.conditioned import conditioned


def call(name, **arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def turn(content="", *calls):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool(content):
    return {"role": "tool", "name": "price", "content": content}


# cost of 3 pen, pen costs 4: gold 12.
CLEAN = [
    turn("", call("price", item="pen")),
    tool("4"),
    turn("", call("mul", a=3, b=4)),
    tool("12"),
    turn("<answer>12</answer>"),
]
EXTRA = [
    turn("", call("price", item="pen")),
    tool("4"),
    turn("", call("price", item="pen")),
    tool("4"),
    turn("", call("mul", a=3, b=4)),
    tool("12"),
    turn("<answer>12</answer>"),
]  # right, 3 calls
GUESS = [turn("<answer>15</answer>")]  # no call, wrong
LUCKY = [turn("<answer>12</answer>")]  # no call, right
UNTAGGED = [turn("", call("price", item="pen")), tool("4"), turn("", call("mul", a=3, b=4)), tool("12"), turn("12")]
TAIL = [*CLEAN[:-1], turn("<answer>12</answer> ok")]  # right answer, text after it
UNREAD = [turn("<tool_call>{'name': 'price'}</tool_call>")]  # the parser left the call as text: episode over
CUT = CLEAN[:2]  # ended on a tool answer (the completion budget ran out)
EPISODES = [CLEAN, EXTRA, GUESS, LUCKY, UNTAGGED, TAIL, UNREAD, CUT]
GOLD = ["12"] * len(EPISODES)


def test_success_format_and_cost_by_hand():
    assert agent_success(EPISODES, answer=GOLD) == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    assert agent_format(EPISODES) == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    # budget 2: 2 calls -> 1, 3 calls -> 2/3, 0 calls -> 1, 1 call -> 1.
    assert agent_cost(EPISODES) == pytest.approx([1.0, 2 / 3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert agent_cost([EXTRA], budget=1) == [pytest.approx(1 / 3)]


def test_cost_conditioned_on_success_is_eq_8():
    cost_if_success = conditioned(agent_cost, on=agent_success)
    assert cost_if_success(EPISODES, answer=GOLD) == pytest.approx([1.0, 2 / 3, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    assert cost_if_success.__name__ == "agent_cost_if_agent_success"


def test_helpers_count_calls_and_read_the_final_answer():
    assert [count_calls(e) for e in EPISODES] == [2, 3, 0, 0, 2, 2, 0, 1]
    assert [final_answer(e) for e in EPISODES] == [12, 12, 15, 12, None, 12, None, None]
    assert final_answer("<answer>7</answer>") == 7  # a plain string is one assistant turn


def test_rows_of_another_environment_get_none():
    arith = [{"role": "assistant", "content": "<think>3*4=12</think>\n<answer>12</answer>"}]
    completions = [CLEAN, arith, GUESS, arith]
    environment = ["shop", "arith", "shop", "arith"]
    answer = ["12", "12", "12", "13"]
    assert agent_success(completions, answer=answer, environment=environment) == [1.0, None, 0.0, None]
    assert agent_format(completions, environment=environment) == [1.0, None, 1.0, None]
    assert agent_cost(completions, environment=environment) == [1.0, None, 1.0, None]
    assert arith_format(completions, answer=answer, environment=environment) == [None, 1.0, None, 1.0]
    assert arith_correctness(completions, answer=answer, environment=environment) == [None, 1.0, None, 0.0]
    # A batch with no row of a reward's task: all None (the trainer trains on; GDPO skips that reward).
    assert arith_format([CLEAN, GUESS], answer=["12", "12"], environment=["shop", "shop"]) == [None, None]


def test_scoped_reward_needs_the_environment_column():
    with pytest.raises(ValueError, match="environment"):
        arith_format([CLEAN], answer=["12"])


def test_bad_inputs_fail_naming_the_problem():
    with pytest.raises(ValueError, match="answer"):
        agent_success([CLEAN, GUESS], answer=["12"])
    with pytest.raises(ValueError, match="budget"):
        agent_cost([CLEAN], budget=0)


def test_registered_under_their_names():
    funcs = get_reward_funcs(["agent_success", "agent_format", "agent_cost", "arith_format", "arith_correctness"])
    assert [f.__name__ for f in funcs] == [
        "agent_success",
        "agent_format",
        "agent_cost",
        "arith_format",
        "arith_correctness",
    ]
