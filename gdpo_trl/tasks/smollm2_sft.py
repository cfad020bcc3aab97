"""The GSM8K format warm start for SmolLM2-135M-Instruct: a LoRA adapter from a short SFT on worked solutions.

Why: prompted with the training system prompt (the short default, or the paper-parity one with an example), the
pretrained model never writes ``<think>...</think><answer>...</answer>`` (0 of 16 sampled GSM8K test completions,
either prompt; docs/real_model.md), so every reward of every group is 0, every advantage is 0 and RL has nothing to
learn from. A few hundred worked solutions teach the layout; correctness stays what the model can do.

Each GSM8K ``answer`` (``reasoning with <<a*b=c>> calculator notes`` then ``#### N``) becomes the completion
``<think>\\nreasoning without the notes\\n</think>\\n<answer>\\nN\\n</answer>`` under the prompt training uses
(:func:`gdpo_trl.data.gsm8k.make_prompt`). TRL's ``SFTTrainer`` fine-tunes the whole model in float32 on the
completion tokens only, one pass over ``steps x batch_size`` rows in the file's order (20 x 8, learning rate 5e-5);
the weight change of every linear layer is then cut to rank 32 by truncated SVD and saved as a LoRA adapter
(:func:`low_rank_adapter`).

Why an adapter: the whole model is 538 MB; the adapter, stored in bfloat16, is 19.6 MB, so it ships inside the
package (``gdpo_trl/models/shipped/smollm2_gsm8k_format/``, with its build record and SHA-256), and
``builtin:smollm2-135m-gsm8k-format`` is the same start on every machine (:mod:`gdpo_trl.models.smollm2`).
Rebuilding is one command, which says whether this machine builds the shipped adapter::

    python -m gdpo_trl.tasks.smollm2_sft OUT --data path/to/gsm8k/train.jsonl [--steps 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from gdpo_trl.models.smollm2 import SHIPPED_FORMAT, shipped_format_record

_CALCULATOR_NOTE = re.compile(r"<<[^>]*>>")


@dataclass(frozen=True)
class SmolSFTRecipe:
    """The SFT's settings (what :func:`gdpo_trl.tasks.sft.sft_config` reads)."""

    steps: int = 20
    batch_size: int = 8
    learning_rate: float = 5e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: int = 2
    lora_r: int = 32  # the format start: the rank its full fine-tune's weight change is cut to; the control: LoRA's
    lora_alpha: int = 32
    full_fine_tune: bool = True  # False: train a LoRA adapter directly (the control)
    base: str = "builtin:smollm2-135m-instruct"
    skip_rows: int = 0  # rows of the file left out first (the control leaves out the format SFT's own problems)
    shuffle: bool = False  # draw the rows in the seed's order rather than the file's


# Study H8's control that is not RL (docs/results/README.md): the format start SFT'd further on GSM8K train's gold
# solutions, with the RL arms' LoRA, learning rate, steps and completions per step (10 x 16), on problems the format
# SFT did not see, drawn by the run's seed.
CONTROL = SmolSFTRecipe(
    steps=10,
    batch_size=16,
    learning_rate=1e-4,
    lr_scheduler_type="constant",
    warmup_steps=0,
    lora_r=16,
    lora_alpha=32,
    base="builtin:smollm2-135m-gsm8k-format",
    skip_rows=160,
    shuffle=True,
    full_fine_tune=False,
)


def tagged_solution(answer: str) -> str:
    """A GSM8K ``answer`` in the tag layout: its reasoning without calculator notes, then the number after ``####``."""
    from gdpo_trl.data.gsm8k import parse_gold_answer

    reasoning = _CALCULATOR_NOTE.sub("", answer.rsplit("####", 1)[0]).strip()
    return f"<think>\n{reasoning}\n</think>\n<answer>\n{parse_gold_answer(answer)}\n</answer>"


def sft_dataset(data: Path, rows: int, skip: int = 0, seed: int | None = None):
    """``rows`` problems of the GSM8K-style file ``data`` after its first ``skip`` (in the file's order, or shuffled
    by ``seed``) as conversational prompt/completion pairs."""
    import datasets

    from gdpo_trl.data.files import load_local_file
    from gdpo_trl.data.gsm8k import check_rows, make_prompt

    raw = load_local_file(Path(data), "GSM8K-style data")
    check_rows(raw["question"], raw["answer"])
    if len(raw) < skip + rows:
        raise SystemExit(
            f"{data} holds {len(raw)} problems; the SFT needs {skip + rows} (steps x batch_size + skipped)"
        )
    raw = raw.select(range(skip, len(raw)))
    raw = (raw if seed is None else raw.shuffle(seed=seed)).select(range(rows))
    return datasets.Dataset.from_dict(
        {
            "prompt": [make_prompt(q) for q in raw["question"]],
            "completion": [[{"role": "assistant", "content": tagged_solution(a)}] for a in raw["answer"]],
        }
    )


def low_rank_adapter(base_model, tuned_model, rank: int, alpha: int):
    """A PEFT LoRA model over ``base_model`` whose every linear layer adds the best rank-``rank`` approximation of
    that layer's change in ``tuned_model`` (truncated SVD: ``B = U_r sqrt(S_r)``, ``A = sqrt(S_r) V_r^T``, divided
    by LoRA's scale ``alpha / rank``). Embeddings and norms keep the base's values."""
    import torch
    from peft import LoraConfig, get_peft_model

    tuned = dict(tuned_model.named_parameters())
    lora = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    model = get_peft_model(base_model, lora)
    scale = alpha / rank
    for name, module in model.base_model.model.named_modules():
        if not hasattr(module, "lora_A"):
            continue
        delta = (tuned[f"{name}.weight"] - module.base_layer.weight).detach().double()
        u, s, vh = torch.linalg.svd(delta, full_matrices=False)
        root = s[:rank].sqrt()
        with torch.no_grad():
            module.lora_B["default"].weight.copy_((u[:, :rank] * root / scale).float())
            module.lora_A["default"].weight.copy_((root[:, None] * vh[:rank]).float())
    return model


def build(out: Path, data: Path, seed: int = 0, recipe: SmolSFTRecipe | None = None) -> Path:
    """SFT on ``data`` from ``recipe.base`` and save a LoRA adapter (``adapter_model.safetensors``,
    ``adapter_config.json``) with ``build.json`` (recipe, dtype, machine, time, the adapter's SHA-256) in ``out``.

    The format start is a full fine-tune in float32 (a LoRA trained directly for the same 20 steps wrote the tags
    and then looped on them: format 0.010 on 200 test problems), whose weight change is then cut to a rank-32
    adapter so that it ships; the control trains its LoRA directly, as the RL arms do."""
    import copy
    import tempfile

    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer

    from gdpo_trl.core.cpu_speed import choose_cpu_dtype
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.models.shipped import file_sha256, machine
    from gdpo_trl.models.smollm2 import adapter_sha256
    from gdpo_trl.tasks.sft import sft_config

    recipe = recipe or SmolSFTRecipe()
    start = time.perf_counter()
    base = resolve_model(recipe.base)
    dtype, why = ("float32", "float32: the full fine-tune") if recipe.full_fine_tune else choose_cpu_dtype("auto")
    print(f"dtype {why}", flush=True)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=getattr(torch, dtype))
    original = copy.deepcopy(model) if recipe.full_fine_tune else None
    dataset = sft_dataset(data, recipe.steps * recipe.batch_size, recipe.skip_rows, seed if recipe.shuffle else None)
    lora = None if recipe.full_fine_tune else LoraConfig(
        r=recipe.lora_r, lora_alpha=recipe.lora_alpha, lora_dropout=0.0, target_modules="all-linear",
        task_type="CAUSAL_LM",
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        args = sft_config(scratch, seed, recipe, bf16=dtype == "bfloat16")
        trainer = SFTTrainer(
            model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=lora
        )
        trainer.train()
    adapter = trainer.model
    if recipe.full_fine_tune:
        adapter = low_rank_adapter(original, trainer.model, recipe.lora_r, recipe.lora_alpha)
    out = Path(out)
    adapter.save_pretrained(out)  # the adapter only, in float32
    config_path = out / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config["base_model_name_or_path"] = recipe.base  # not this machine's cache path
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    record = {
        "base": recipe.base,
        "data": Path(data).name,
        "rows": len(dataset),
        "seed": seed,
        "recipe": asdict(recipe),
        "dtype": dtype,
        "built_on": machine(),
        "build_seconds": round(time.perf_counter() - start, 1),
        "adapter_sha256": adapter_sha256(out),
        "adapter_config_sha256": file_sha256(config_path),
    }
    (out / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write the checkpoint to")
    parser.add_argument("--data", type=Path, required=True, help="a GSM8K-style .jsonl (question, answer)")
    parser.add_argument("--steps", type=int, help="SFT steps (default: the recipe's, 20; the control's, 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--control", action="store_true", help="study H8's SFT control from the format start")
    args = parser.parse_args(argv)
    if args.control:
        out = build(args.out, args.data, args.seed, replace(CONTROL, steps=args.steps or CONTROL.steps))
        print(f"adapter: {out}")
        return
    out = build(args.out, args.data, args.seed, replace(SmolSFTRecipe(), steps=args.steps or SmolSFTRecipe.steps))
    built = json.loads((out / "build.json").read_text())["adapter_sha256"]
    # The shipped adapter is stored in bfloat16 (half the size); its record keeps the float32 build's hash too.
    shipped = shipped_format_record().get("adapter_sha256_float32") if SHIPPED_FORMAT.is_dir() else None
    print(f"adapter: {out} (SHA-256 {built[:16]}...)")
    if shipped is None:
        print("no shipped adapter to compare with")
    else:
        same = "equals" if built == shipped else "differs from"
        print(f"{same} the shipped adapter ({shipped[:16]}...; builds are bound to the machine's math kernels)")


if __name__ == "__main__":
    main()
