"""The multi-turn evaluation: episodes rolled out with the environment's tools from scripted model turns, scored with
the training rewards and the environment's own reward; success rate and mean turns by hand."""

import json

import pytest
import torch

from gdpo_trl.eval.agent import rollout, run_tool_calls, score_episodes
from gdpo_trl.eval.scoring import reward_funcs
from gdpo_trl.eval.settings import EvaluationInputError, GenerationSettings
from gdpo_trl.tasks.agent_task import MIX_FACTORIES, ShopEnv, build_tokenizer

PRICES = json.dumps({"pen": 4, "cup": 9})
CALL_PRICE = '<tool_call>{"name": "price", "arguments": {"item": "pen"}}</tool_call><|im_end|>'
CALL_MUL = '<tool_call>{"name": "mul", "arguments": {"a": 3, "b": 4}}</tool_call><|im_end|>'
CALL_MISSING = '<tool_call>{"name": "price", "arguments": {"item": "pan"}}</tool_call><|im_end|>'


class ScriptedModel:
    """Stands in for a causal LM: each generate call answers every prompt with the next scripted turn of its row
    (rows told apart by the question in the prompt)."""

    device = torch.device("cpu")

    def __init__(self, tokenizer, scripts: dict[str, list[str]]):
        self.tokenizer, self.scripts = tokenizer, {q: list(turns) for q, turns in scripts.items()}
        self.generation_config = type("G", (), {"eos_token_id": tokenizer.eos_token_id})()

    def generate(self, input_ids, attention_mask, generation_config):
        rows = []
        for ids in input_ids.tolist():
            text = self.tokenizer.decode(ids)
            question = next(q for q in self.scripts if f"user\n{q}<|im_end|>" in text)
            turn = self.tokenizer(self.scripts[question].pop(0), add_special_tokens=False)["input_ids"]
            rows.append(ids + turn)
        width = max(map(len, rows))
        pad = self.tokenizer.pad_token_id
        return torch.tensor([row + [pad] * (width - len(row)) for row in rows])


def row(question, answer):
    return {"prompt": [{"role": "user", "content": question}], "answer": answer, "prices": PRICES}


def test_episodes_scored_with_training_rewards_and_the_environments():
    tokenizer = build_tokenizer()
    scripts = {
        "cost of 3 pen": [CALL_PRICE, CALL_MUL, "<answer>12</answer><|im_end|>"],  # 3 turns, 2 calls, right
        "cost of 2 pen": [CALL_MISSING, CALL_PRICE, "<answer>9</answer><|im_end|>"],  # a failed call, wrong
        "cost of 5 cup": ["45<|im_end|>"],  # no call, right number but no tags
    }
    rows = [row("cost of 3 pen", "12"), row("cost of 2 pen", "8"), row("cost of 5 cup", "45")]
    settings = GenerationSettings(n=1, temperature=1.0, max_new_tokens=400, batch_size=2)
    episodes = rollout(ScriptedModel(tokenizer, scripts), tokenizer, rows, ShopEnv, settings, progress=False)
    first = episodes[0][0].completion
    assert [m["role"] for m in first] == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert [m["content"] for m in first if m["role"] == "tool"] == ["4", "12"]
    assert "no item 'pan'" in episodes[1][0].completion[1]["content"]
    rows_out, metrics = score_episodes(episodes, reward_funcs(("agent_success", "agent_format", "agent_cost")))
    assert [r["rewards"][0]["agent_success"] for r in rows_out] == [1.0, 0.0, 0.0]
    assert [r["rewards"][0]["agent_format"] for r in rows_out] == [1.0, 1.0, 0.0]
    assert [r["rewards"][0]["ShopEnv"] for r in rows_out] == [1.0, 0.5, 0.0]
    assert metrics["success_rate"] == pytest.approx(1 / 3)
    assert metrics["mean_turns"] == pytest.approx((3 + 3 + 1) / 3)
    assert metrics["mean_calls"] == pytest.approx((2 + 2 + 0) / 3)
    assert metrics["ShopEnv_mean"] == pytest.approx(0.5) and metrics["ShopEnv_rows"] == 3


def test_turn_limit_and_mixed_environments_with_rewards_that_do_not_apply():
    tokenizer = build_tokenizer()
    arith = {
        "prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "2+2"}],
        "answer": "4",
        "prices": None,
        "environment": "arith",
    }
    scripts = {"cost of 3 pen": [CALL_PRICE] * 2, "2+2": ["<think>2+2=4</think>\n<answer>4</answer><|im_end|>"]}
    rows = [{**row("cost of 3 pen", "12"), "environment": "shop"}, arith]
    settings = GenerationSettings(n=1, temperature=1.0, max_new_tokens=400)
    episodes = rollout(
        ScriptedModel(tokenizer, scripts), tokenizer, rows, MIX_FACTORIES, settings, max_turns=2, progress=False
    )
    assert len(episodes[0][0].completion) == 4  # two turns, each with its call's answer: the limit ends it
    names = ("agent_success", "arith_format", "arith_correctness")
    rows_out, metrics = score_episodes(episodes, reward_funcs(names))
    assert rows_out[0]["rewards"][0] == {
        "agent_success": 0.0,
        "arith_format": None,
        "arith_correctness": None,
        "ShopEnv": 1.0,
    }
    assert rows_out[1]["rewards"][0] == {
        "agent_success": None,
        "arith_format": 1.0,
        "arith_correctness": 1.0,
        "ShopEnv": None,
    }
    assert (metrics["arith_format_rows"], metrics["agent_success_rows"], metrics["ShopEnv_rows"]) == (1, 1, 1)


def test_tool_errors_reach_the_model_and_a_tokenizer_without_template_is_refused():
    messages = run_tool_calls([{"function": {"name": "nope", "arguments": {}}}], {})
    assert messages == [{"role": "tool", "name": "nope", "content": "{'error': 'Tool nope not found.'}"}]
    from gdpo_trl.models.tiny import build_tokenizer as plain

    with pytest.raises(EvaluationInputError, match="response template"):
        rollout(None, plain(), [], ShopEnv, GenerationSettings(n=1, temperature=1.0), progress=False)
