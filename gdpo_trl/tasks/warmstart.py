"""A warm-start policy for the offline CPU demo: a tiny char-level Qwen2 model, briefly SFT-trained on flawed traces.

Why: GRPO/GDPO learn only from reward differences within a group of samples. A randomly initialised model never
emits a tag, so every reward is 0 for every sample and there is nothing to learn from. This module trains the
``mini`` model of :mod:`gdpo_trl.models.tiny` with TRL's ``SFTTrainer`` on short traces such as
``<think>3*4=12</think>\\n<answer>12</answer>``, with imperfections mixed in on purpose (broken format, answers off by
a little, answers written ``12.0`` or ``$12``). Sampled at temperature 1.0 (GRPO's default), the result scores in the
middle on the format, correctness and integer rewards, so each one has room, and signal, for RL to improve.

Its recipe and problems are :mod:`gdpo_trl.tasks.warmstart_data`; the SFT and the record every warm start shares,
:mod:`gdpo_trl.tasks.sft`. ``resolve_model("builtin:warmstart")`` builds the model once and caches it. Here:
:func:`build_warmstart`, and ``python -m gdpo_trl.tasks.warmstart PATH [--seed N]``.
"""

from __future__ import annotations

from pathlib import Path

from gdpo_trl.tasks.sft import build_and_record, train_sft
from gdpo_trl.tasks.warmstart_data import Recipe, sft_dataset


def train_warmstart(path: str | Path, seed: int = 0, recipe: Recipe | None = None) -> Path:
    """SFT a freshly built ``recipe.architecture`` model on flawed traces; save model and tokenizer to ``path``."""
    import torch

    from gdpo_trl.models.tiny import build_model, build_tokenizer

    recipe = recipe or Recipe()
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, recipe.architecture, seed)
    dataset = sft_dataset(recipe.steps * recipe.batch_size, seed, recipe)  # exactly one epoch of `steps` batches
    return train_sft(model, tokenizer, dataset, recipe, seed, path)


def build_warmstart(path: str | Path, seed: int = 0, recipe: Recipe | None = None, *, measure: bool = True) -> Path:
    """Train the warm start into ``path``; record the recipe, build time and starting rewards in ``warmstart.json``.

    Same ``seed`` and recipe on the same machine give the same weights (see :func:`gdpo_trl.tasks.sft.weights_checksum`).
    """
    return build_and_record(path, seed, recipe or Recipe(), train_warmstart, measure=measure)


def main(argv: list[str] | None = None) -> None:
    from gdpo_trl.models.build_cli import builder_main

    banner = "warm start: loading TRL (about 10 s), then a progress bar per stage"
    builder_main(argv, __doc__, banner, Recipe, build_warmstart)


if __name__ == "__main__":
    main()
