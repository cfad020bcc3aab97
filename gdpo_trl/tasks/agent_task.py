"""An offline multi-turn agent task for the CPU: a tiny shop whose prices the model must look up, then multiply.

Each episode has its own price table (:data:`ITEMS`, prices 1-9, drawn from the episode's seed) and asks for the cost
of a few of one item: ``cost of 3 pen``. The prices are not in the prompt, so the model has to call the shop's tools:
``price(item)``, then ``mul(a, b)`` (a character-level model cannot multiply reliably, but it can copy numbers), then
answer ``<answer>N</answer>``: three assistant turns, two calls. :class:`ShopEnv` is the environment TRL's
``GRPOTrainer(environment_factory=...)`` instantiates per rollout; its ``get_reward`` (the share of its tool calls
that did not fail) is an environment-owned reward next to the rewards of :mod:`gdpo_trl.rewards.agent`.

The policy is the ``mini`` model of :mod:`gdpo_trl.models.tiny` with a chat template that renders tools, calls and tool
answers compactly, and a ``response_template`` that TRL's ``parse_response`` reads calls with (both saved with the
tokenizer). Its warm start (``builtin:agent_warmstart``, :mod:`gdpo_trl.tasks.agent_warmstart`) is SFT on flawed
episodes, so that every reward starts mid-range; the same model serves the mixed run, where :class:`ArithEnv` rows
(no tools) sit next to shop rows.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

from gdpo_trl.rewards.agent import AGENT_ENVIRONMENT
from gdpo_trl.tasks.splits import draw_split

if TYPE_CHECKING:
    import datasets

ITEMS = ("pen", "cup", "hat", "box", "map", "key")
TOOL_TAGS = ["<tool_call>", "</tool_call>"]
# The calls' JSON scaffolding and the tool names as whole tokens, as a BPE tokenizer like Qwen's holds common strings:
# a call is 8-12 tokens instead of ~50 characters, so a clean episode is ~30 generated tokens. With one token per
# character, slips over ~115 tokens at temperature 1 ended most episodes of the warm start (success 0.008, H6).
CALL_TOKENS = ('{"name": "', '", "arguments": {"', '": "', '": ', ', "', '"}}', "}}", "price", "mul", "item")
ARITH_ENVIRONMENT = "arith"
# A ChatML template for the character-level tokenizer that renders tools as one short line (`tools: price(item)
# mul(a,b)`), a call as `<tool_call>{json}</tool_call>` and a tool's answer as a `tool` turn. It is prefix-preserving,
# as TRL's multi-turn loop requires.
CHAT_TEMPLATE = (
    "{%- if tools %}{{ '<|im_start|>system\ntools:' }}{%- for t in tools %}"
    "{{ ' ' + t.function.name + '(' + (t.function.parameters.properties | list | join(',')) + ')' }}{%- endfor %}"
    "{{ '<|im_end|>\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' %}{{ '<|im_start|>assistant\n' + (message.content or '') }}"
    "{%- for call in message.tool_calls or [] %}{%- set f = call.function if call.function is defined else call %}"
    "{{ '<tool_call>{\"name\": \"' + f.name + '\", \"arguments\": ' + (f.arguments | tojson) + '}</tool_call>' }}"
    "{%- endfor %}{{ '<|im_end|>\n' }}"
    "{%- else %}{{ '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}"
)
# How transformers' `parse_response` reads an assistant turn (the new-style response template of transformers >= 5.13,
# the shape of TRL's Qwen3 one): calls as JSON between the tool-call tags, the rest as content.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


class ShopEnv:
    """One episode of the shop: a price table, and the calls made so far. TRL makes one per rollout and resets it."""

    def __init__(self):
        self.prices: dict[str, int] = {}
        self.calls = 0
        self.failures = 0

    def reset(self, prices: str | None = None, **kwargs) -> None:
        """Start an episode with the row's price table (JSON ``{item: price}``); the prompt already asks the question."""
        if prices is None:
            raise ValueError("ShopEnv.reset needs the row's `prices` column (JSON {item: price})")
        self.prices = json.loads(prices)
        self.calls = self.failures = 0

    def _fail(self, message: str):
        self.failures += 1
        raise ValueError(message)

    def price(self, item: str) -> int:
        """The price of one item in the shop.

        Args:
            item: The item's name.

        Returns:
            Its price.
        """
        self.calls += 1
        if item not in self.prices:
            self._fail(f"no item {item!r}")
        return self.prices[item]

    def mul(self, a: int, b: int) -> int:
        """Multiply two whole numbers.

        Args:
            a: The first factor.
            b: The second factor.

        Returns:
            The product.
        """
        self.calls += 1
        if not (isinstance(a, int) and isinstance(b, int)):
            self._fail("mul takes two whole numbers")
        return a * b

    def get_reward(self) -> float:
        """The environment's own reward: the share of this episode's tool calls that worked (0.0 without calls).

        TRL counts only calls its parser read and found a tool for; a call to an unknown tool never reaches here.
        """
        return (self.calls - self.failures) / self.calls if self.calls else 0.0


class ArithEnv:
    """The GSM8K-style rows of the mixed run: no tools, nothing to reset; their rewards score the text."""

    def reset(self, **kwargs) -> None:
        return None


# --- episodes -----------------------------------------------------------------------------------------------------


def make_episode(rng: random.Random) -> dict:
    """One episode: ``question``, ``item``, ``count``, ``prices`` (JSON) and the gold ``answer`` (as text)."""
    prices = {item: rng.randint(1, 9) for item in ITEMS}
    item, count = rng.choice(ITEMS), rng.randint(2, 9)
    return {
        "question": f"cost of {count} {item}",
        "item": item,
        "count": count,
        "prices": json.dumps(prices),
        "answer": str(count * prices[item]),
    }


def generate_episodes(n: int, seed: int = 0, split: str = "train") -> list[dict]:
    """``n`` episodes of the ``"train"`` or ``"eval"`` split (disjoint by question and price table)."""
    return draw_split("agent", n, seed, split, make_episode, key=lambda e: f"{e['question']}|{e['prices']}")


def make_prompt(question: str) -> list[dict]:
    # No system message: with tools, the chat template writes one listing them.
    return [{"role": "user", "content": question}]


def load_agent_task(n: int, seed: int = 0, split: str = "eval") -> datasets.Dataset:
    """``n`` shop episodes as rows ``prompt``, ``answer``, ``prices``, ``item``, ``count`` (``"eval"``: unseen in SFT)."""
    import datasets

    episodes = generate_episodes(n, seed, split)
    columns = {"prompt": [make_prompt(e["question"]) for e in episodes]}
    for key in ("answer", "prices", "item", "count"):
        columns[key] = [e[key] for e in episodes]
    return datasets.Dataset.from_dict(columns)


def load_agent_mix(n: int, seed: int = 0, split: str = "eval") -> datasets.Dataset:
    """``n`` rows, alternating shop episodes (``environment: shop``) and GSM8K-style problems (``arith``)."""
    import datasets

    from gdpo_trl.tasks.warmstart_data import load_warmstart_dataset

    shop = load_agent_task((n + 1) // 2, seed, split).to_list()
    arith = load_warmstart_dataset(n // 2, seed, split=split).to_list()
    rows = []
    for i in range(n):
        source, env = (shop, AGENT_ENVIRONMENT) if i % 2 == 0 else (arith, ARITH_ENVIRONMENT)
        rows.append({"prices": None, "item": None, "count": None, **source[i // 2], "environment": env})
    return datasets.Dataset.from_list(rows)


SHOP_FACTORY = ShopEnv
MIX_FACTORIES = {AGENT_ENVIRONMENT: ShopEnv, ARITH_ENVIRONMENT: ArithEnv}


def build_tokenizer(call_tokens: tuple[str, ...] = CALL_TOKENS):
    """The character-level tokenizer of :mod:`gdpo_trl.models.tiny` with the tool-call tags and ``call_tokens``, the
    tool-rendering chat template and the response template (saved with it, so a loaded model parses calls the same
    way)."""
    from gdpo_trl.models.tiny import build_tokenizer as tiny_tokenizer

    tokenizer = tiny_tokenizer()
    # Ordinary tokens, kept when decoding, like the <think>/<answer> tags; matched longest first, so `": "` wins over
    # `": ` where both fit. TRL never re-tokenizes what the model generated (prompt + completion + tool answer ids are
    # concatenated), so the model's own choice of tokens is what trains.
    tokenizer.add_tokens(TOOL_TAGS + list(call_tokens))
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer
