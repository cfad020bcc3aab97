"""The offline multi-turn agent task: gold answers recomputed from the episode, the environment's tools and its own
reward by hand, the chat template TRL's loop needs, and the warm start's traces rendered as TRL renders rollouts."""

import json
import random
import re

import pytest
from trl.chat_template_utils import is_chat_template_prefix_preserving, parse_response, supports_tool_calling

from gdpo_trl.rewards.agent import agent_cost, agent_format, agent_success
from gdpo_trl.tasks.agent_task import (
    ITEMS,
    ArithEnv,
    ShopEnv,
    build_tokenizer,
    generate_episodes,
    load_agent_mix,
    load_agent_task,
)
from gdpo_trl.tasks.agent_warmstart import FLAWS, AgentRecipe, make_trace, sft_dataset


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def test_episodes_gold_and_splits():
    episodes = generate_episodes(200, seed=3)
    for e in episodes:
        count, item = re.fullmatch(r"cost of (\d) (\w+)", e["question"]).groups()
        assert (int(count), item) == (e["count"], e["item"]) and item in ITEMS
        assert e["answer"] == str(int(count) * json.loads(e["prices"])[item])
    assert generate_episodes(200, seed=3) == episodes  # the seed decides
    assert generate_episodes(200, seed=4) != episodes
    held_out = {(e["question"], e["prices"]) for e in generate_episodes(200, seed=3, split="eval")}
    assert held_out and not held_out & {(e["question"], e["prices"]) for e in episodes}
    with pytest.raises(ValueError, match="split"):
        generate_episodes(1, split="test")


def test_shop_tools_and_its_own_reward_by_hand():
    env = ShopEnv()
    env.reset(prices=json.dumps({"pen": 4, "cup": 9}))
    assert env.get_reward() == 0.0  # no call yet
    assert env.price("pen") == 4 and env.mul(3, 4) == 12
    with pytest.raises(ValueError, match="no item 'pan'"):
        env.price("pan")
    with pytest.raises(ValueError, match="whole numbers"):
        env.mul("3", 4)
    assert env.get_reward() == pytest.approx(2 / 4)  # 2 of 4 calls worked
    env.reset(prices=json.dumps({"hat": 1}))  # TRL reuses instances: a reset forgets the last episode
    assert (env.calls, env.failures, env.prices) == (0, 0, {"hat": 1})
    with pytest.raises(ValueError, match="prices"):
        env.reset()
    assert ArithEnv().reset(answer="3") is None


def test_rows_and_the_mixed_rows():
    rows = load_agent_task(4, seed=1)
    assert rows.column_names == ["prompt", "answer", "prices", "item", "count"]
    assert rows[0]["prompt"] == [{"role": "user", "content": generate_episodes(4, 1, "eval")[0]["question"]}]
    mix = load_agent_mix(6, seed=1)
    assert mix["environment"] == ["shop", "arith"] * 3
    assert [p is None for p in mix["prices"]] == [False, True] * 3
    assert all(row["prompt"][0]["role"] == "system" for row in mix if row["environment"] == "arith")


def test_chat_template_is_what_trls_tool_loop_needs(tokenizer):
    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    env = ShopEnv()
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "cost of 3 pen"}], tools=[env.price, env.mul], add_generation_prompt=True
    )
    text = '<tool_call>{"name": "mul", "arguments": {"a": 3, "b": 4}}</tool_call><|im_end|>'
    parsed = parse_response(tokenizer, tokenizer(text)["input_ids"], prefix=prompt, tools=[env.price, env.mul])
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "mul", "arguments": {"a": 3, "b": 4}}}]
    broken = parse_response(
        tokenizer, tokenizer("<tool_call>{'name': </tool_call><|im_end|>")["input_ids"], prefix=prompt
    )
    assert "tool_calls" not in broken  # an unreadable call stays text: the episode ends


def test_call_tokens_shorten_an_episode_and_round_trip_through_save_and_load(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    episode = generate_episodes(1, seed=0)[0]
    trace, _ = make_trace(episode, random.Random(0), AgentRecipe(**{flaw: 0.0 for flaw in FLAWS}))
    # The model's part of a clean episode: each assistant turn (the tool answers are TRL's, not generated).
    generated = [part.split("<|im_end|>")[0] + "<|im_end|>" for part in trace.split("<|im_start|>assistant\n")]
    ids = [tokenizer(turn, add_special_tokens=False)["input_ids"] for turn in generated]
    # price call: <tool_call> {"name": " price ", "arguments": {" item ": " x x x "}} </tool_call> <|im_end|>
    assert len(ids[0]) == 12
    assert sum(map(len, ids)) <= 32 < sum(len(turn) for turn in generated) / 3  # ~115 characters
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    for turn, turn_ids in zip(generated, ids, strict=True):
        assert loaded(turn, add_special_tokens=False)["input_ids"] == turn_ids
        assert loaded.decode(turn_ids) == tokenizer.decode(turn_ids) == turn  # spaces and quotes survive
    # One character at a time decodes to the same text: a model that spells a call out still makes a call.
    spelled = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(c)) for c in generated[1]]
    assert tokenizer.decode([i for token in spelled for i in token]) == generated[1]


def _as_messages(trace: str) -> list[dict]:
    """A trace's turns as TRL's completion messages (calls parsed as TRL's loop would)."""
    messages = []
    for part in trace.split("<|im_start|>assistant\n"):
        assistant, _, tool = part.partition("<|im_end|>\n<|im_start|>tool\n")
        calls = re.findall(r"<tool_call>(.*?)</tool_call>", assistant)
        try:
            parsed = [{"type": "function", "function": json.loads(c)} for c in calls]
            messages.append(
                {"role": "assistant", "content": "", "tool_calls": parsed}
                if calls
                else {"role": "assistant", "content": assistant.removesuffix("<|im_end|>")}
            )
        except json.JSONDecodeError:
            messages.append({"role": "assistant", "content": assistant.removesuffix("<|im_end|>")})
        if tool:
            messages.append({"role": "tool", "name": "t", "content": tool.removesuffix("<|im_end|>\n")})
    return messages


def test_a_clean_trace_is_rendered_as_trl_renders_the_rollout(tokenizer):
    episode = generate_episodes(1, seed=0)[0]
    clean = AgentRecipe(**{flaw: 0.0 for flaw in FLAWS})
    trace, flaws = make_trace(episode, random.Random(0), clean)
    assert flaws == []
    env = ShopEnv()
    env.reset(prices=episode["prices"])
    prompt = [{"role": "user", "content": episode["question"]}]
    messages = _as_messages(trace)
    full = tokenizer.apply_chat_template(prompt + messages, tools=[env.price, env.mul], tokenize=False)
    start = tokenizer.apply_chat_template(
        prompt, tools=[env.price, env.mul], add_generation_prompt=True, tokenize=False
    )
    assert full == start + trace + "\n"  # the template closes the last turn with a newline
    assert agent_success([messages], answer=[episode["answer"]]) == [1.0]
    assert agent_format([messages]) == [1.0] and agent_cost([messages]) == [1.0]


def test_flawed_traces_cost_each_reward_something():
    rng = random.Random(0)
    episodes = generate_episodes(400, seed=0)
    traces = [make_trace(e, rng) for e in episodes]
    messages = [_as_messages(t) for t, _ in traces]
    answers = [e["answer"] for e in episodes]
    means = [
        sum(r) / len(r)
        for r in (agent_success(messages, answer=answers), agent_format(messages), agent_cost(messages))
    ]
    assert 0.4 < means[0] < 0.85 and 0.5 < means[1] < 0.9 and 0.75 < means[2] < 0.98, means
    assert {flaw for _, flaws in traces for flaw in flaws} == set(FLAWS)


def test_sft_rows_mix_arith_traces(tokenizer):
    rows = sft_dataset(40, seed=0, tokenizer=tokenizer, recipe=AgentRecipe(arith_share=0.25))
    shop = [r for r in rows if "tools: price(item) mul(a,b)" in r["prompt"]]
    assert len(shop) == 30 and all(r["completion"].endswith("<|im_end|>") for r in rows)
