"""What every SFT warm start of the demo shares: TRL's ``SFTConfig`` for one, one epoch of ``SFTTrainer`` and the
folder saved, and the record each writes beside its weights (``warmstart.json``: its recipe, parameter count, build
time and the rewards it starts RL from, measured with ``gdpo eval``'s loop on held-out problems).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from gdpo_trl.tasks.warmstart_data import Recipe, load_warmstart_dataset


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


def build_and_record(path, seed: int, recipe, train, *, measure: bool = True, problems=None) -> Path:
    """``train(path, seed, recipe)``, then ``warmstart.json``: the recipe, parameter count, build time and (with
    ``measure``) the starting rewards on held-out problems of ``problems`` (default: ``recipe``). Every warm start
    of the demo records itself this way."""
    start = time.perf_counter()
    path = train(path, seed, recipe)
    record = {
        "seed": seed,
        "recipe": asdict(recipe),
        "parameters": count_parameters(path),
        "build_seconds": round(time.perf_counter() - start, 1),
    }
    if measure:
        record["starting_rewards"] = measure_rewards(path, seed=seed, recipe=problems or recipe, progress=True)
        record["measured_with"] = {"num_prompts": 64, "num_samples": 4, "temperature": 1.0, "split": "eval"}
    (path / "warmstart.json").write_text(json.dumps(record, indent=2) + "\n")
    return path


def count_parameters(path: Path) -> int:
    """The saved model's parameters (its safetensors file's tensors)."""
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
