"""``builtin:qwen2.5-warmstart``: the demo's SFT warm start (:mod:`gdpo_trl.tasks.warmstart`) on Qwen2.5's tokenizer.

Why: a random model never writes ``<think>``/``<answer>``, so every GSM8K reward is 0 and GRPO/GDPO have nothing to
learn from. This trains ``builtin:qwen2.5-tiny`` (two layers, Qwen2.5's 151,936-row vocabulary) on the warm start's
flawed traces, so recipes on the real tokenizer start mid-range on format, correctness and integer and can learn on
a CPU. Same problems, traces and prompts as the character-level warm start; only tokenizer and model differ.

Why not TRL's ``SFTTrainer``: on a CPU, TRL's fused LM head scores every position (prompt included) against the
whole vocabulary, about five times the work of scoring the completion tokens alone, which is all the loss needs.
The loop here runs the backbone on the full sequences and the LM head on completion positions only.

Measured on a busy 2-core machine (seed 0): the build took 7.7 minutes (SFT ~6.5, measuring ~1.3) and starts at
format 0.37, correctness 0.09, integer 0.42 (the character-level warm start: 0.43, 0.50, 0.46; two layers copy
BPE numbers less reliably). ``recipes/cpu/gdpo`` on it for 20 steps (~57 s each: TRL scores every prompt position
against the whole vocabulary on a CPU) raised format 0.44 -> 0.65 and integer 0.44 -> 0.78 (means of the first and
last five steps); correctness stayed near 0.04.

``python -m gdpo_trl.tasks.qwen_warmstart PATH [--seed N] [--steps N] [--threads N] [--no-measure]`` builds one;
``resolve_model("builtin:qwen2.5-warmstart[@seed]")`` builds it once per machine (in a child process) and caches it.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gdpo_trl.tasks.traces import TraceMix

NAME = "qwen2.5-warmstart"


@dataclass(frozen=True)
class QwenRecipe:
    """Everything besides the seed that determines the weights (the problem and trace settings are the
    character-level warm start's)."""

    size: str = "tiny"
    steps: int = 300
    batch_size: int = 16
    learning_rate: float = 3e-3
    warmup_steps: int = 25
    templates: tuple[str, ...] = ("buy_items",)
    max_factor: int = 7
    mix: TraceMix = field(default_factory=TraceMix)

    def problems(self):
        """The :class:`gdpo_trl.tasks.warmstart.Recipe` that draws the same problems and traces."""
        from gdpo_trl.tasks.warmstart_data import Recipe

        return Recipe(templates=self.templates, max_factor=self.max_factor, mix=self.mix)


def tokenized_examples(tokenizer, n: int, seed: int, recipe: QwenRecipe) -> list[tuple[list[int], list[int]]]:
    """``n`` (prompt ids, completion ids) pairs: the RL prompt as the chat template renders it for generation, and
    one flawed trace followed by ``<|im_end|>`` (where generation should stop)."""
    from gdpo_trl.tasks.warmstart_data import sft_dataset

    dataset = sft_dataset(n, seed, recipe.problems())
    examples = []
    for prompt, completion in zip(dataset["prompt"], dataset["completion"], strict=True):
        prompt_ids = tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        completion_ids = tokenizer.encode(completion[0]["content"]) + [tokenizer.eos_token_id]
        examples.append((list(prompt_ids), completion_ids))
    return examples


def completion_loss(model, batch: list[tuple[list[int], list[int]]], pad_id: int):
    """Mean cross-entropy of the completion tokens of ``batch``, the LM head applied at those positions only."""
    import torch

    width = max(len(p) + len(c) for p, c in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    scored = torch.zeros_like(ids, dtype=torch.bool)  # positions whose *next* token is a completion token
    for row, (prompt, completion) in enumerate(batch):
        length = len(prompt) + len(completion)
        ids[row, :length] = torch.tensor(prompt + completion)
        attention[row, :length] = 1
        scored[row, len(prompt) - 1 : length - 1] = True
    hidden = model.model(input_ids=ids, attention_mask=attention).last_hidden_state
    logits = model.lm_head(hidden[scored])
    targets = ids[:, 1:][scored[:, :-1]]
    return torch.nn.functional.cross_entropy(logits, targets)


def train(path: str | Path, seed: int = 0, recipe: QwenRecipe | None = None) -> Path:
    """SFT a freshly initialized ``builtin:qwen2.5-<size>`` on flawed traces; save it with the tokenizer to ``path``."""
    import torch
    from tqdm.auto import tqdm
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    from gdpo_trl.models.qwen import qwen_config, qwen_tokenizer_dir, save_with_tokenizer

    recipe = recipe or QwenRecipe()
    tokenizer = AutoTokenizer.from_pretrained(qwen_tokenizer_dir())
    examples = tokenized_examples(tokenizer, recipe.steps * recipe.batch_size, seed, recipe)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(qwen_config(recipe.size))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, weight_decay=0.0)

    def schedule(step: int) -> float:  # linear warmup, then cosine to 0
        if step < recipe.warmup_steps:
            return (step + 1) / recipe.warmup_steps
        progress = (step - recipe.warmup_steps) / max(1, recipe.steps - recipe.warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    bar = tqdm(range(recipe.steps), desc="SFT", file=sys.stderr)
    for step in bar:
        batch = examples[step * recipe.batch_size : (step + 1) * recipe.batch_size]
        loss = completion_loss(model, batch, tokenizer.pad_token_id)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        bar.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    return save_with_tokenizer(model, path)


def build(path: str | Path, seed: int = 0, recipe: QwenRecipe | None = None, *, measure: bool = True) -> Path:
    """Train into ``path``; record the recipe, build time and (with ``measure``) starting rewards in warmstart.json."""
    from gdpo_trl.tasks.sft import build_and_record

    recipe = recipe or QwenRecipe()
    return build_and_record(path, seed, recipe, train, measure=measure, problems=recipe.problems())


def resolve_warmstart(seed: int = 0) -> str:
    """The cached ``builtin:qwen2.5-warmstart@seed`` folder, trained on first use in a child process (which keeps
    the training's threads and memory, and a torch.distributed job's ranks, out of this process)."""
    import torch

    from gdpo_trl.models.builtins import cache_dir, cached_build, run_isolated
    from gdpo_trl.models.qwen import COMMON_CONFIG, SIZES, tokenizer_key

    recipe = QwenRecipe()
    key = [tokenizer_key(), COMMON_CONFIG, SIZES[recipe.size], asdict(recipe), seed]
    target = cache_dir() / f"{NAME}-seed{seed}-{hashlib.sha1(json.dumps(key).encode()).hexdigest()[:10]}"

    def build_isolated(tmp: Path) -> None:
        threads = torch.get_num_threads()
        print(f"Building builtin:{NAME}@{seed} once for this machine ({threads} torch thread(s)).", file=sys.stderr)
        args = ["-m", __name__, str(tmp), "--seed", str(seed), "--threads", str(threads)]
        run_isolated(args, f"builtin:{NAME}", show_output=True)

    return str(cached_build(target, build_isolated))


def build_builtin_qwen_warmstart(name: str, seed: int = 0) -> str:
    """The entry point behind ``builtin:qwen2.5-warmstart[@seed]`` (see :mod:`gdpo_trl.core.plugins`)."""
    return resolve_warmstart(seed)


def main(argv: list[str] | None = None) -> None:
    from gdpo_trl.models.build_cli import builder_main

    banner = "Qwen2.5 warm start: SFT with a progress bar, then (unless --no-measure) sampling"
    builder_main(argv, __doc__, banner, QwenRecipe, build)


if __name__ == "__main__":
    main()
