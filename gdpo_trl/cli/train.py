"""``gdpo-train``: GDPO (or GRPO) fine-tuning on GSM8K-style data, configured by a TRL-style YAML recipe.

Usage::

    gdpo-train --config recipes/cpu/gdpo/config.yaml                  # one process
    gdpo-train --config recipes/cpu/gdpo/config.yaml --max_steps 2    # flags override the YAML
    accelerate launch --config_file accelerate_configs/zero3.yaml -m gdpo_trl.cli.train \\
        --config recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml     # 8 GPUs, DeepSpeed ZeRO-3

The YAML holds flat keys of three dataclasses: :class:`GDPOScriptArguments` (data and rewards), ``GDPOConfig``
(training) and TRL's ``ModelConfig`` (model and LoRA), plus an optional ``env:`` block of environment variables.
Run ``gdpo-train --help`` for every field.
"""

from __future__ import annotations

from gdpo_trl.cli.arguments import DATACLASSES, GDPOScriptArguments, build_reward_funcs, parse_args  # noqa: F401
from gdpo_trl.cli.offline import check_model_available_offline
from gdpo_trl.cli.resume import find_resume_checkpoint
from gdpo_trl.console import bound_completions_logging, quiet_known_warnings, setup_logging, use_compact_progress


def main(argv: list[str] | None = None) -> None:
    """Parse, data, rewards, model, trainer, train, save: the whole of ``gdpo-train``."""
    import torch
    from transformers import AutoTokenizer, set_seed
    from trl import get_peft_config, get_quantization_config

    from gdpo_trl.data.sources import load_source
    from gdpo_trl.demo.tiny import resolve_model
    from gdpo_trl.trainer import GDPOTrainer

    # 1. Parse the recipe and flags (flags win), and set up this process.
    quiet_known_warnings()
    script_args, training_args, model_args = parse_args(argv)
    setup_logging(training_args.get_process_log_level())
    bound_completions_logging(training_args)
    if script_args.cpu_threads is not None:  # the recipe's `env:` is read after torch is imported: too late for OMP
        torch.set_num_threads(script_args.cpu_threads)
    set_seed(training_args.seed)

    # 2. Rewards and vLLM first: a misspelled name or a missing package fails in a second, before any model loads.
    check_vllm(training_args.use_vllm)
    reward_funcs = build_reward_funcs(script_args)

    # 3. Model and data. The main process goes first: it builds or caches them, and the other ranks read its files.
    with training_args.main_process_first(local=False, desc="model and dataset"):
        model_path = resolve_model(model_args.model_name_or_path or "")
        check_model_available_offline(model_path)
        train_dataset = load_source(script_args.dataset_name, **source_options(script_args))
    tokenizer = AutoTokenizer.from_pretrained(
        model_path, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
    )
    if tokenizer.pad_token is None:  # GRPO pads prompts and completions
        tokenizer.pad_token = tokenizer.eos_token
    # The trainer loads the model from its path (so ZeRO-3 can shard it while loading) with ModelConfig's dtype and
    # attention; `model_init_kwargs` set in the recipe win.
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision,
        "dtype": model_args.dtype,
        "attn_implementation": model_args.attn_implementation,
        **(training_args.model_init_kwargs or {}),
    }

    # 4. The trainer; with `use_peft`, LoRA adapters (`lora_*` fields) wrap the model.
    trainer = GDPOTrainer(
        model_path,
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
    )
    use_compact_progress(trainer)

    # 5. Train, save the model (or adapter), tokenizer and trainer_state.json, and print the rewards before/after.
    trainer.train(resume_from_checkpoint=find_resume_checkpoint(training_args))
    trainer.save_model(training_args.output_dir)  # under ZeRO-3 this gathers the shards
    trainer.save_state()
    if trainer.accelerator.is_main_process:
        print(final_summary(trainer, training_args.output_dir), flush=True)


def check_vllm(use_vllm: bool) -> None:
    """Fail before any model is loaded when vLLM generation is asked for but vLLM is not installed."""
    from trl.import_utils import is_vllm_available  # looks the package up without importing it

    if use_vllm and not is_vllm_available():
        raise ImportError(
            "use_vllm is true but vLLM is not installed: `pip install gdpo-trl[vllm]`, or set `use_vllm: false` "
            "(generation then runs in transformers, slower)."
        )


def source_options(script_args: GDPOScriptArguments) -> dict:
    """``load_source`` options from the script arguments: generated sources take a size and a seed."""
    from gdpo_trl.data.sources import GENERATED

    limit = script_args.max_train_samples
    if script_args.dataset_name in GENERATED:
        size = script_args.synthetic_size if limit is None else min(limit, script_args.synthetic_size)
        return {"split": "train", "size": size, "seed": script_args.synthetic_seed}
    split, config = script_args.dataset_train_split, script_args.dataset_config or "main"
    return {"split": split, "size": limit, "config": config}


def final_summary(trainer, output_dir: str) -> str:
    """The rewards at the start and end of training (from :mod:`gdpo_trl.runs`), and where the model is."""
    from gdpo_trl.runs import format_ends, reward_ends

    state, processes = trainer.state, trainer.accelerator.num_processes
    rows, window = reward_ends(state.log_history, trainer.reward_func_names)
    return "\n".join(
        [
            f"Training finished after {state.global_step} steps on {processes} process{'es' * (processes > 1)}.",
            format_ends(rows, window),
            f"Model saved to {output_dir}",
        ]
    )


if __name__ == "__main__":
    main()
