"""The warm start's recipe and its data: the problems of its kind, split by question into what its SFT trains on
(``"train"``) and what RL and evaluation use (``"eval"``), and the SFT examples, each the RL prompt and one flawed
trace (:mod:`gdpo_trl.tasks.traces`). No TRL import here: the warm start's cache key (:mod:`gdpo_trl.tasks.warm_starts`)
and the ``warmstart`` data source read only this.

The problems are the easiest synthetic ones (``buy_items``: one multiplication of two numbers up to 7): a model this
small learns to copy single digits from the question and a small times table in a minute of CPU training, but not
reliably more. :func:`load_warmstart_dataset` gives the same problems for RL.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gdpo_trl.data.gsm8k import make_prompt
from gdpo_trl.tasks.splits import check_split, is_held_out
from gdpo_trl.tasks.synthetic import generate_problems
from gdpo_trl.tasks.traces import TraceMix, gold_answer, make_trace

if TYPE_CHECKING:
    import datasets


@dataclass(frozen=True)
class Recipe:
    """Everything besides the seed that determines the warm start's weights."""

    architecture: str = "mini"
    steps: int = 500
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = 25
    batch_size: int = 16
    learning_rate: float = 3e-3  # 5e-3 sometimes fails to learn copying numbers within the step budget
    templates: tuple[str, ...] = ("buy_items",)
    max_factor: int = 7  # generate_problems' max_operand; with factors up to 9 copying is often not learned in time
    mix: TraceMix = field(default_factory=TraceMix)


def warmstart_problems(n: int, seed: int = 0, *, split: str = "train", recipe: Recipe | None = None) -> list[dict]:
    """``n`` problems (rows of :func:`generate_problems`) of the recipe's kind, from its ``"train"`` or ``"eval"`` split.

    Rows are drawn in rounds and kept by split. Questions repeat within a split (``buy_items`` with factors up to 7
    has about 2,000 distinct ones) but never across splits.
    """
    check_split(n, split)  # held out by question (gdpo_trl.tasks.splits): never trained on, whatever the seeds
    recipe = recipe or Recipe()
    rows = []
    for round_ in itertools.count():
        batch = generate_problems(
            4096, seed=round_seed(seed, round_), templates=recipe.templates, max_operand=recipe.max_factor
        )
        rows += [row for row in batch if is_held_out(row["question"]) == (split == "eval")]
        if len(rows) >= n:
            return rows[:n]


def round_seed(seed: int, round_: int) -> int:
    # Distinct, stable generator seeds per (seed, round), so seed 1's first round is not seed 0's second.
    return int(hashlib.sha1(f"warmstart:{seed}:{round_}".encode()).hexdigest()[:12], 16)


def sft_dataset(n: int, seed: int = 0, recipe: Recipe | None = None) -> datasets.Dataset:
    """``n`` conversational prompt/completion examples (the RL prompt, then one flawed trace) for ``SFTTrainer``.

    The prompt is the same system + user conversation GRPO feeds, so the chat template matches; with a separate
    ``completion``, ``SFTTrainer`` trains on the completion (and its closing ``<|im_end|>``) only.
    """
    import datasets

    recipe = recipe or Recipe()
    rows = warmstart_problems(n, seed, split="train", recipe=recipe)
    rng = random.Random(seed)
    traces = [make_trace(row, rng, recipe.mix)[0] for row in rows]
    return datasets.Dataset.from_dict(
        {
            "prompt": [make_prompt(row["question"]) for row in rows],
            "completion": [[{"role": "assistant", "content": trace}] for trace in traces],
        }
    )


def load_warmstart_dataset(n: int, seed: int = 0, split: str = "eval", recipe: Recipe | None = None):
    """``n`` warm-start problems as a ``datasets.Dataset`` with ``prompt`` and ``answer``, like ``load_synthetic``.

    For RL after the warm start: the ``"eval"`` split (the default) holds questions the SFT never saw.
    """
    import datasets

    rows = warmstart_problems(n, seed, split=split, recipe=recipe)
    return datasets.Dataset.from_dict(
        {
            "prompt": [make_prompt(row["question"]) for row in rows],
            "answer": [str(gold_answer(row)) for row in rows],
        }
    )
