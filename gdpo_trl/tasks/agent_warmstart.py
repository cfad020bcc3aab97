"""The agent task's warm start (``builtin:agent_warmstart``): SFT of the ``mini`` model on flawed shop episodes.

The flaws are skipped lookups, wrong items, extra calls, wrong copies, unreadable calls and broken answers, each drawn
independently per trace, so that every reward of :mod:`gdpo_trl.rewards.agent` starts mid-range; a share of
GSM8K-style traces (:mod:`gdpo_trl.tasks.warmstart`'s) lets the same model serve the mixed run. Built by
``python -m gdpo_trl.tasks.agent_warmstart PATH --seed N``; seed 0 ships with the package.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gdpo_trl.tasks.agent_task import CALL_TOKENS, ShopEnv, build_tokenizer, generate_episodes, make_prompt

if TYPE_CHECKING:
    import datasets


# The ways an episode goes wrong, each drawn independently per trace with the recipe's probability.
FLAWS = ("skip_lookup", "wrong_item", "extra_call", "wrong_copy", "bad_call", "broken_answer")


@dataclass(frozen=True)
class AgentRecipe:
    """Everything besides the seed that determines the agent warm start's weights."""

    architecture: str = "mini"
    call_tokens: tuple[str, ...] = CALL_TOKENS  # added to the character-level vocabulary (see CALL_TOKENS)
    # With CALL_TOKENS, 300 steps still miscopy items, counts and prices (held-out success 0.016 at temperature 1);
    # 900 succeed on 0.38 of held-out episodes, with format 0.50 and ShopEnv 0.79: every reward mid-range (docs/agents.md).
    # Without CALL_TOKENS, 900 steps succeeded on 0.008 (H6 in docs/results/README.md).
    steps: int = 900
    batch_size: int = 16
    learning_rate: float = 3e-3
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = 45
    arith_share: float = 0.25  # GSM8K-style traces, for the mixed run
    skip_lookup: float = 0.1  # answer at once with a guess: cheap, rarely right
    wrong_item: float = 0.08  # look up an item not in the shop (the call fails), then the right one
    extra_call: float = 0.25  # look the price up twice: right, but over the call budget
    wrong_copy: float = 0.15  # pass mul a number off by one: a wrong answer
    bad_call: float = 0.08  # an unreadable call: the episode ends there
    broken_answer: float = 0.3  # the answer without its tags, or with text after it


def _call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _turns(turns: list[tuple[str, str | None]]) -> str:
    """The completion text after the prompt: each assistant turn, then its tool answer (if any) as TRL appends it."""
    text = ""
    for assistant, tool in turns:
        text += assistant + "<|im_end|>"
        if tool is not None:
            text += f"\n<|im_start|>tool\n{tool}<|im_end|>\n<|im_start|>assistant\n"
    return text


def make_trace(episode: dict, rng: random.Random, recipe: AgentRecipe | None = None) -> tuple[str, list[str]]:
    """A completion for ``episode`` with flaws drawn from ``recipe``, and which were drawn."""
    recipe = recipe or AgentRecipe()
    flaws = [flaw for flaw in FLAWS if rng.random() < getattr(recipe, flaw)]
    prices, item, count = json.loads(episode["prices"]), episode["item"], episode["count"]
    value = count * prices[item]
    turns: list[tuple[str, str | None]] = []
    if "bad_call" in flaws:
        return _turns([(_call("price", item=item).replace('"', "'"), None)]), flaws
    if "skip_lookup" in flaws:
        value = count * rng.randint(1, 9)
    else:
        if "wrong_item" in flaws:
            wrong = rng.choice(["pan", "cap", "bag", "mop"])
            turns.append((_call("price", item=wrong), str({"error": f"no item {wrong!r}"})))  # as TRL reports it
        turns.append((_call("price", item=item), str(prices[item])))
        if "extra_call" in flaws:
            turns.append((_call("price", item=item), str(prices[item])))
        price = prices[item] + (rng.choice((-1, 1)) if "wrong_copy" in flaws else 0)
        price = price if price > 0 else 2
        turns.append((_call("mul", a=count, b=price), str(count * price)))
        value = count * price
    answer = f"<answer>{value}</answer>"
    if "broken_answer" in flaws:
        answer = rng.choice((str(value), f"<answer>{value}</answer> ok"))
    turns.append((answer, None))
    return _turns(turns), flaws


def _shop_tools() -> list:
    env = ShopEnv()
    return [env.price, env.mul]  # what TRL renders for a shop row: the environment's public methods


def sft_dataset(n: int, seed: int, tokenizer, recipe: AgentRecipe | None = None) -> datasets.Dataset:
    """``n`` text prompt/completion pairs: flawed shop episodes and (``arith_share``) GSM8K-style traces, each prompt
    rendered exactly as TRL renders it in RL (with the shop's tools for a shop row, none for an arith row)."""
    import datasets

    from gdpo_trl.data.gsm8k import make_prompt as arith_prompt
    from gdpo_trl.tasks.traces import make_trace as arith_trace
    from gdpo_trl.tasks.warmstart_data import Recipe, warmstart_problems

    recipe = recipe or AgentRecipe()
    rng = random.Random(seed)
    n_arith = round(n * recipe.arith_share)
    tools = _shop_tools()
    prompts, completions = [], []
    for episode in generate_episodes(n - n_arith, seed, "train"):
        prompts.append(
            tokenizer.apply_chat_template(
                make_prompt(episode["question"]), tools=tools, add_generation_prompt=True, tokenize=False
            )
        )
        completions.append(make_trace(episode, rng, recipe)[0])
    for row in warmstart_problems(n_arith, seed, split="train", recipe=Recipe()):
        prompts.append(
            tokenizer.apply_chat_template(arith_prompt(row["question"]), add_generation_prompt=True, tokenize=False)
        )
        completions.append(arith_trace(row, rng)[0] + "<|im_end|>")
    order = list(range(n))
    rng.shuffle(order)
    return datasets.Dataset.from_dict(
        {"prompt": [prompts[i] for i in order], "completion": [completions[i] for i in order]}
    )


def train_agent_warmstart(path, seed: int = 0, recipe: AgentRecipe | None = None):
    """SFT the ``mini`` model on flawed episodes (one epoch of ``steps`` batches); save it to ``path``."""
    import torch

    from gdpo_trl.models.tiny import build_model
    from gdpo_trl.tasks.sft import train_sft

    recipe = recipe or AgentRecipe()
    torch.manual_seed(seed)
    tokenizer = build_tokenizer(recipe.call_tokens)
    model = build_model(tokenizer, recipe.architecture, seed)
    dataset = sft_dataset(recipe.steps * recipe.batch_size, seed, tokenizer, recipe)
    return train_sft(model, tokenizer, dataset, recipe, seed, path)


def build_agent_warmstart(path, seed: int = 0, recipe: AgentRecipe | None = None, *, measure: bool = True):
    """Train the warm start into ``path`` and record it (``warmstart.json``: recipe, build time)."""
    from gdpo_trl.tasks.sft import build_and_record

    # Its starting rewards come from a multi-turn rollout (gdpo eval --dataset agent), not the GSM8K measurement.
    return build_and_record(path, seed, recipe or AgentRecipe(), train_agent_warmstart, measure=False)


def main(argv: list[str] | None = None) -> None:
    from gdpo_trl.models.build_cli import builder_main

    banner = "agent warm start: loading TRL (about 10 s), then SFT with a progress bar"
    builder_main(argv, __doc__, banner, AgentRecipe, build_agent_warmstart)


if __name__ == "__main__":
    main()
