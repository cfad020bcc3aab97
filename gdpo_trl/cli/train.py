"""``gdpo-train``: GDPO (or GRPO) fine-tuning on GSM8K-style or tool-calling data, configured by a TRL-style YAML recipe.

Usage::

    gdpo-train --config recipes/cpu/gdpo/config.yaml                  # one process
    gdpo-train --config recipes/cpu/gdpo/config.yaml --max_steps 2    # flags override the YAML
    accelerate launch --config_file accelerate_configs/zero3.yaml -m gdpo_trl.cli.train \\
        --config recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml     # 8 GPUs, DeepSpeed ZeRO-3

The YAML holds flat keys of three dataclasses: :class:`GDPOScriptArguments` (data and rewards), ``GDPOConfig``
(training) and TRL's ``ModelConfig`` (model and LoRA), plus an optional ``env:`` block of environment variables.
Run ``gdpo-train --help`` for every field. Input errors print one line and exit 2; ``--debug`` or
``GDPO_TRL_DEBUG=1`` shows the traceback.
"""

from __future__ import annotations

from gdpo_trl.checkpoints import hold_output_dir, prepare_run, releases_run_locks
from gdpo_trl.cli.arguments import DATACLASSES, GDPOScriptArguments, build_reward_funcs, parse_args  # noqa: F401
from gdpo_trl.cli.errors import cli_errors, input_stage
from gdpo_trl.cli.offline import check_model_available_offline
from gdpo_trl.console import bound_completions_logging, quiet_known_warnings, setup_logging, use_compact_progress
from gdpo_trl.engines import check_fsdp_engaged, shutdown_distributed
from gdpo_trl.validation import check_data, check_prompt_lengths, check_recipe, check_recipe_yaml, check_rewards


@cli_errors("gdpo-train")
@releases_run_locks  # the output_dir lock taken below is given back when main ends, however it ends
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
    check_recipe_yaml(argv)
    with input_stage("recipe"):
        script_args, training_args, model_args = parse_args(argv)
    check_recipe(script_args, training_args, model_args)  # ranges, JSON fields, weight counts, vLLM installed
    check_fsdp_engaged()  # an FSDP config on a CPU-only machine would silently run DDP
    setup_logging(training_args.get_process_log_level())
    bound_completions_logging(training_args)
    if script_args.cpu_threads is not None:  # the recipe's `env:` is read after torch is imported: too late for OMP
        torch.set_num_threads(script_args.cpu_threads)
    set_seed(training_args.seed)

    # 2. Rewards and the output folder first: a misspelled name or an earlier run in the way fails in a second,
    # before any model loads.
    reward_funcs = build_reward_funcs(script_args)
    check_rewards(reward_funcs, training_args)
    hold_output_dir(training_args)  # one run per output_dir: a second run into it is refused, naming this one
    checkpoint = prepare_run(training_args)  # refuses to overwrite a run; the newest complete checkpoint to resume

    # 3. Model and data. The main process goes first: it builds or caches them, and the other ranks read its files.
    with (
        input_stage("model or dataset", OSError),
        training_args.main_process_first(local=False, desc="model and dataset"),
    ):
        model_path = resolve_model(model_args.model_name_or_path or "")
        check_model_available_offline(model_path)
        train_dataset = load_source(script_args.dataset_name, **source_options(script_args))
    tokenizer = AutoTokenizer.from_pretrained(
        model_path, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
    )
    if tokenizer.pad_token is None:  # GRPO pads prompts and completions
        tokenizer.pad_token = tokenizer.eos_token
    check_prompt_lengths(train_dataset, tokenizer, model_path, training_args.max_completion_length)
    check_data(train_dataset, reward_funcs, training_args)  # each reward fits the rows; enough rows for one step
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
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(training_args.output_dir)  # under ZeRO-3 this gathers the shards
    trainer.save_state()
    if trainer.accelerator.is_main_process:
        print(final_summary(trainer, training_args.output_dir), flush=True)
    shutdown_distributed()  # before the interpreter exits: a ZeRO-3 rank could abort otherwise (gdpo_trl.engines)


def source_options(script_args: GDPOScriptArguments) -> dict:
    """``load_source`` options from the script arguments: generated sources take a size and a seed; the recipe's
    ``system_prompt`` and ``dataset_path`` go through as given (``load_source`` refuses them where they do not apply)."""
    from gdpo_trl.data.sources import GENERATED

    limit = script_args.max_train_samples
    common = {"system_prompt": script_args.system_prompt, "path": script_args.dataset_path}
    if script_args.dataset_name in GENERATED:
        size = script_args.synthetic_size if limit is None else min(limit, script_args.synthetic_size)
        return {"split": "train", "size": size, "seed": script_args.synthetic_seed, **common}
    split, config = script_args.dataset_train_split, script_args.dataset_config or "main"
    return {"split": split, "size": limit, "config": config, **common}


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
