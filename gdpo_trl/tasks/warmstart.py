"""A warm-start policy for the offline CPU demo: a tiny char-level Qwen2 model, briefly SFT-trained on flawed traces.

Why: GRPO/GDPO learn only from reward differences within a group of samples. A randomly initialised model never
emits a tag, so every reward is 0 for every sample and there is nothing to learn from. This module trains the
``mini`` model of :mod:`gdpo_trl.models.tiny` with TRL's ``SFTTrainer`` on short traces such as
``<think>3*4=12</think>\\n<answer>12</answer>``, with imperfections mixed in on purpose (broken format, answers off by
a little, answers written ``12.0`` or ``$12``). Sampled at temperature 1.0 (GRPO's default), the result scores in the
middle on the format, correctness and integer rewards, so each one has room, and signal, for RL to improve.

The problems are the easiest synthetic ones (``buy_items``: one multiplication of two numbers up to 7): a model this
small learns to copy single digits from the question and a small times table in a minute of CPU training, but not
reliably more. :func:`load_warmstart_dataset` gives the same problems for RL.

``resolve_model("builtin:warmstart")`` builds the model once and caches it. Here: :func:`build_warmstart`,
:func:`measure_rewards`, and ``python -m gdpo_trl.tasks.warmstart PATH [--seed N]``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.data.gsm8k import make_prompt
from gdpo_trl.tasks.splits import check_split, is_held_out
from gdpo_trl.tasks.synthetic import generate_problems
from gdpo_trl.tasks.traces import (  # noqa: F401  (re-exported: part of this module's interface)
    FORMAT_BREAKS,
    NON_INTEGER_STYLES,
    TraceMix,
    gold_answer,
    make_trace,
    reasoning,
)

if TYPE_CHECKING:
    import datasets

__all__ = [
    "Recipe",
    "TraceMix",
    "build_warmstart",
    "load_warmstart_dataset",
    "make_trace",
    "measure_rewards",
    "warmstart_problems",
]


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
            4096, seed=_round_seed(seed, round_), templates=recipe.templates, max_operand=recipe.max_factor
        )
        rows += [row for row in batch if is_held_out(row["question"]) == (split == "eval")]
        if len(rows) >= n:
            return rows[:n]


def _round_seed(seed: int, round_: int) -> int:
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


def sft_config(output_dir: str, seed: int, recipe: Recipe, bf16: bool = False):
    """TRL's ``SFTConfig`` for a warm start: ``recipe`` needs ``steps``, ``batch_size``, ``learning_rate``,
    ``lr_scheduler_type`` and ``warmup_steps`` (the tool-call warm start of :mod:`gdpo_trl.tasks.toolcall_task` uses it
    too)."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=output_dir,
        max_steps=recipe.steps,
        per_device_train_batch_size=recipe.batch_size,
        learning_rate=recipe.learning_rate,
        lr_scheduler_type=recipe.lr_scheduler_type,
        warmup_steps=recipe.warmup_steps,
        weight_decay=0.0,
        seed=seed,
        data_seed=seed,
        dataloader_num_workers=0,  # workers would make the data order depend on process scheduling
        bf16=bf16,  # the tiny warm starts train in float32; a real model's LoRA may take the CPU's native bf16
        use_cpu=True,
        gradient_checkpointing=False,  # SFTConfig turns it on by default; a model this small only pays its recompute
        report_to="none",
        save_strategy="no",
        logging_strategy="no",  # the progress bar alone: loss lines would tangle with it
        disable_tqdm=False,
    )


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


def train_sft(model, tokenizer, dataset, recipe, seed: int, path) -> Path:
    """One epoch of TRL's ``SFTTrainer`` on ``dataset`` with :func:`sft_config`, then the model, tokenizer and
    generation config saved to ``path`` (shared by the demo's warm starts)."""
    from trl import SFTTrainer

    with tempfile.TemporaryDirectory() as scratch:
        trainer = SFTTrainer(
            model=model, args=sft_config(scratch, seed, recipe), train_dataset=dataset, processing_class=tokenizer
        )
        trainer.train()
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    model.generation_config.save_pretrained(path)
    return path


def build_warmstart(path: str | Path, seed: int = 0, recipe: Recipe | None = None, *, measure: bool = True) -> Path:
    """Train the warm start into ``path``; record the recipe, build time and starting rewards in ``warmstart.json``.

    Same ``seed`` and recipe on the same machine give the same weights (see :func:`weights_checksum`).
    """
    return build_and_record(path, seed, recipe or Recipe(), train_warmstart, measure=measure)


def build_and_record(path, seed: int, recipe, train, *, measure: bool = True, problems=None) -> Path:
    """``train(path, seed, recipe)``, then ``warmstart.json``: the recipe, parameter count, build time and (with
    ``measure``) the starting rewards on held-out problems of ``problems`` (default: ``recipe``). Every warm start
    of the demo records itself this way."""
    start = time.perf_counter()
    path = train(path, seed, recipe)
    record = {
        "seed": seed,
        "recipe": asdict(recipe),
        "parameters": _count_parameters(path),
        "build_seconds": round(time.perf_counter() - start, 1),
    }
    if measure:
        record["starting_rewards"] = measure_rewards(path, seed=seed, recipe=problems or recipe, progress=True)
        record["measured_with"] = {"num_prompts": 64, "num_samples": 4, "temperature": 1.0, "split": "eval"}
    (path / "warmstart.json").write_text(json.dumps(record, indent=2) + "\n")
    return path


def _count_parameters(path: Path) -> int:
    from safetensors.torch import load_file

    return sum(tensor.numel() for tensor in load_file(str(path / "model.safetensors")).values())


def weights_checksum(model_path: str | Path) -> str:
    """SHA-1 over the saved weights in name order: equal checksums mean equal models."""
    from safetensors.torch import load_file

    state = load_file(str(Path(model_path) / "model.safetensors"))
    digest = hashlib.sha1()
    for name in sorted(state):
        digest.update(name.encode())
        digest.update(state[name].float().numpy().tobytes())
    return digest.hexdigest()


def measure_rewards(
    model_path: str | Path,
    num_prompts: int = 64,
    num_samples: int = 4,
    seed: int = 0,
    temperature: float = 1.0,
    max_new_tokens: int = 96,
    *,
    recipe: Recipe | None = None,
    batch_size: int = 16,
    progress: bool = False,
) -> dict[str, float]:
    """Sample ``num_samples`` completions for each of ``num_prompts`` held-out problems and average the rewards.

    Sampling is GRPO's default (temperature 1.0, no top-k or top-p), so the numbers are what RL starts from; the
    problems come from the eval split of ``recipe`` (default :class:`Recipe`), disjoint from the SFT problems. Runs
    ``gdpo eval``'s generate-and-score loop. Returns the mean ``format``, ``correctness`` and ``integer`` rewards, the
    mean ``completion_length`` in tokens (the closing ``<|im_end|>`` included) and ``clipped``, the fraction that hit
    ``max_new_tokens`` without stopping.
    """
    from gdpo_trl.eval import GenerationSettings, generate_and_score, resolve_model_spec

    problems = load_warmstart_dataset(num_prompts, seed, split="eval", recipe=recipe)
    settings = GenerationSettings(num_samples, temperature, 1.0, max_new_tokens, batch_size, seed)
    spec = resolve_model_spec(str(model_path))
    _, metrics, _ = generate_and_score(
        spec, problems, settings, ("format", "correctness", "integer"), progress=progress
    )
    return {
        "format": metrics["format_rate"],
        "correctness": metrics["pass@1"],
        "integer": metrics["integer_rate"],
        "completion_length": metrics["mean_completion_tokens"],
        "clipped": metrics["truncated_fraction"],
    }


def main(argv: list[str] | None = None) -> None:
    from gdpo_trl.models.build_cli import builder_main

    banner = "warm start: loading TRL (about 10 s), then a progress bar per stage"
    builder_main(argv, __doc__, banner, Recipe, build_warmstart)


if __name__ == "__main__":
    main()
