"""A format warm start for SmolLM2-135M-Instruct on GSM8K: a short SFT on worked solutions written in the tag layout.

Why: prompted with the training system prompt (the short default, or the paper-parity one with an example), the
pretrained model never writes ``<think>...</think><answer>...</answer>`` (0 of 16 sampled GSM8K test completions,
either prompt; docs/real_model.md), so every reward of every group is 0, every advantage is 0 and RL has nothing to
learn from. A few hundred worked solutions teach the layout; correctness stays what the model can do.

Each GSM8K ``answer`` (``reasoning with <<a*b=c>> calculator notes`` then ``#### N``) becomes the completion
``<think>\\nreasoning without the notes\\n</think>\\n<answer>\\nN\\n</answer>`` under the prompt training uses
(:func:`gdpo_trl.data.gsm8k.make_prompt`). TRL's ``SFTTrainer`` trains on the completion tokens only, full
fine-tune, float32, one pass over ``steps x batch_size`` rows in the file's order.

    python -m gdpo_trl.tasks.smollm2_sft OUT --data path/to/gsm8k/train.jsonl [--steps 20] [--seed 0]

writes a plain checkpoint (model, tokenizer with its chat template, ``warmstart.json`` with the recipe and build time)
that ``model_name_or_path`` and ``gdpo eval --model`` take.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_CALCULATOR_NOTE = re.compile(r"<<[^>]*>>")


@dataclass(frozen=True)
class SmolSFTRecipe:
    """The SFT's settings (what :func:`gdpo_trl.tasks.warmstart.sft_config` reads)."""

    steps: int = 20
    batch_size: int = 8
    learning_rate: float = 5e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: int = 2


def tagged_solution(answer: str) -> str:
    """A GSM8K ``answer`` in the tag layout: its reasoning without calculator notes, then the number after ``####``."""
    from gdpo_trl.data.gsm8k import parse_gold_answer

    reasoning = _CALCULATOR_NOTE.sub("", answer.rsplit("####", 1)[0]).strip()
    return f"<think>\n{reasoning}\n</think>\n<answer>\n{parse_gold_answer(answer)}\n</answer>"


def sft_dataset(data: Path, rows: int):
    """The first ``rows`` problems of the GSM8K-style file ``data`` as conversational prompt/completion pairs."""
    import datasets

    from gdpo_trl.data.files import load_local_file
    from gdpo_trl.data.gsm8k import check_rows, make_prompt

    raw = load_local_file(Path(data), "GSM8K-style data")
    check_rows(raw["question"], raw["answer"])
    if len(raw) < rows:
        raise SystemExit(f"{data} holds {len(raw)} problems; the SFT needs {rows} (steps x batch_size)")
    raw = raw.select(range(rows))
    return datasets.Dataset.from_dict(
        {
            "prompt": [make_prompt(q) for q in raw["question"]],
            "completion": [[{"role": "assistant", "content": tagged_solution(a)}] for a in raw["answer"]],
        }
    )


def build(out: Path, data: Path, seed: int = 0, recipe: SmolSFTRecipe | None = None) -> Path:
    """SFT ``builtin:smollm2-135m-instruct`` on ``data``; save it with its tokenizer and ``warmstart.json``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.storage.model_source import SOURCE_RECORD, source_record
    from gdpo_trl.tasks.warmstart import train_sft

    recipe = recipe or SmolSFTRecipe()
    start = time.perf_counter()
    base = resolve_model("builtin:smollm2-135m-instruct")
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    dataset = sft_dataset(data, recipe.steps * recipe.batch_size)
    out = train_sft(model, tokenizer, dataset, recipe, seed, out)
    record = source_record(Path(base))
    if record is not None:  # the runs trained from this warm start name the model and GGUF it came from
        record["model"] = f"{record.get('model', 'the base model')} after a format SFT on GSM8K train"
        (out / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    record = {
        "base": "builtin:smollm2-135m-instruct",
        "data": Path(data).name,
        "rows": len(dataset),
        "seed": seed,
        "recipe": asdict(recipe),
        "build_seconds": round(time.perf_counter() - start, 1),
    }
    (out / "warmstart.json").write_text(json.dumps(record, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write the checkpoint to")
    parser.add_argument("--data", type=Path, required=True, help="a GSM8K-style .jsonl (question, answer)")
    parser.add_argument("--steps", type=int, default=SmolSFTRecipe.steps)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"model: {build(args.out, args.data, args.seed, SmolSFTRecipe(steps=args.steps))}")


if __name__ == "__main__":
    main()
