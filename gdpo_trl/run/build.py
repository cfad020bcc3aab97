"""One way to build a run from a parsed recipe: checks, output folder, rewards, data, model, trainer.

Parsing is apart (:func:`gdpo_trl.recipe.arguments.parse_args`), as in TRL's scripts and open-r1's
``main(script_args, training_args, model_args)``, so every path builds the same way: ``gdpo train``, each run of
``gdpo compare``, the tests and Python users::

    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.build import train_run

    script_args, training_args, model_args = parse_args(["--config", "recipes/cpu/gdpo/config.yaml"])
    trainer = train_run(script_args, training_args, model_args)

Everything that can be checked without the model is checked first, so a mistake fails in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdpo_trl.core.cpu_speed import cpu_dtype_choice, trains_on_cpu
from gdpo_trl.core.errors import input_stage
from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.data.prompt_fit import check_prompt_lengths
from gdpo_trl.data.sources import environment_factory, load_source_described, source_options
from gdpo_trl.recipe.arguments import build_reward_funcs
from gdpo_trl.run.agent_checks import check_agent_recipe, check_environments
from gdpo_trl.run.checkpoints import prepare_run
from gdpo_trl.run.checks import (
    check_chat_template,
    check_loaded_weights,
    check_recipe,
    check_rewards,
    fit_to_machine,
)
from gdpo_trl.run.data_checks import check_data
from gdpo_trl.run.offline import check_model_available_offline
from gdpo_trl.run.output_checks import check_free_space, disk_full_error, is_disk_full
from gdpo_trl.run.resume_settings import LENGTH, check_resume_settings, recipe_record
from gdpo_trl.run.run_lock import hold_output_dir, releases_run_locks


@dataclass
class BuiltRun:
    """A trainer ready to train, and the checkpoint it resumes from (``None``: from the start)."""

    trainer: object  # GDPOTrainer (imported lazily: TRL takes seconds to import)
    resume_from_checkpoint: str | None


def build_trainer(script_args, training_args, model_args, reward_funcs: list | None = None) -> BuiltRun:
    """Check the recipe, prepare ``output_dir``, load the data and tokenizer, and build the ``GDPOTrainer``.

    ``reward_funcs`` replaces the recipe's (a comparison's method may change them); default: the recipe's, built
    from the registry with ``reward_kwargs``. Raises :class:`~gdpo_trl.core.errors.InputError` for a user mistake.
    """
    from transformers import AutoTokenizer, set_seed
    from trl import get_peft_config, get_quantization_config

    from gdpo_trl.trainer import GDPOTrainer

    # 1. Rewards and the output folder first: a misspelled name or an earlier run in the way fails in a second.
    check_recipe(script_args, training_args, model_args)  # ranges, JSON fields, weight counts, vLLM installed
    fit_to_machine(training_args, model_args)  # a GPU recipe on a CPU: sdpa for flash-attn, absent trackers left out
    set_seed(training_args.seed)
    reward_funcs = build_reward_funcs(script_args) if reward_funcs is None else reward_funcs
    environments = environment_factory(script_args.dataset_name)  # an agent source's environment, else None
    with_environments = {"environment_factory": environments} if environments is not None else {}
    rewards = check_rewards(reward_funcs, training_args, **with_environments)  # prepared once, for the trainer
    check_agent_recipe(script_args, training_args, environments)  # agent rewards without one, empty conditions
    hold_output_dir(training_args)  # one run per output_dir: a second run into it is refused, naming this one
    checkpoint = prepare_run(training_args)  # refuses to overwrite a run; the newest complete checkpoint to resume
    applied = check_resume_settings(checkpoint, script_args, training_args, model_args)  # finished run, changes
    recipe = recipe_record(script_args, training_args, model_args)  # before the trainer sets fields of its own

    # 2. Model and data. The main process goes first: it builds or caches them, and the other ranks read its files.
    with (
        input_stage("model or dataset", OSError),
        training_args.main_process_first(local=False, desc="model and dataset"),
    ):
        model_path = resolve_model(model_args.model_name_or_path or "")
        check_model_available_offline(model_path)
        train_dataset, data_line = load_source_described(script_args.dataset_name, **source_options(script_args))
    if data_line and training_args.process_index == 0:  # which kind of rows, and what reaches the rewards
        print(data_line, flush=True)
    check_free_space(training_args.output_dir, model_path)  # again, with the resolved model's real size
    tokenizer = AutoTokenizer.from_pretrained(
        model_path, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
    )
    if tokenizer.pad_token is None:  # GRPO pads prompts and completions
        tokenizer.pad_token = tokenizer.eos_token
    check_chat_template(train_dataset, tokenizer, model_path, script_args.dataset_name)
    check_prompt_lengths(train_dataset, tokenizer, model_path, training_args.max_completion_length)
    check_data(train_dataset, rewards, training_args)  # each reward fits the rows; enough rows for one step
    check_environments(environments, train_dataset, tokenizer, model_path)  # made, reset once; template renders tools
    # The trainer loads the model from its path (so ZeRO-3 can shard it while loading) with ModelConfig's dtype and
    # attention; `model_init_kwargs` set in the recipe win.
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision,
        "dtype": model_args.dtype,
        "attn_implementation": model_args.attn_implementation,
        **(training_args.model_init_kwargs or {}),
    }
    if training_args.cpu_dtype is not None and trains_on_cpu(training_args):
        if training_args.process_index == 0:  # GDPOConfig set bf16 and model_init_kwargs' dtype from this choice
            print(f"dtype {cpu_dtype_choice(training_args.cpu_dtype)[1]}", flush=True)

    # 3. The trainer; with `use_peft`, LoRA adapters (`lora_*` fields) wrap the model. Every checkpoint records the
    # recipe (gdpo_trl.run.recipe_record), so that a resume can compare it before loading the model. An agent
    # source brings its environment (TRL's multi-turn tool loop; its `get_reward`, if any, becomes one more reward of
    # weight 1).
    from gdpo_trl.run.recipe_record import NewRunLength, RecipeRecord

    callbacks = [RecipeRecord(recipe)] + ([NewRunLength()] if set(applied) & set(LENGTH) else [])

    trainer = GDPOTrainer(
        model_path,
        reward_funcs=rewards,  # prepared and checked against the rows above: the trainer takes them as they are
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
        callbacks=callbacks,
        **with_environments,
    )
    check_loaded_weights(trainer.model, model_path)  # NaN/inf in a model too big to scan before it loaded
    return BuiltRun(trainer, checkpoint)


@releases_run_locks  # the output_dir lock build_trainer takes is given back when the run ends, however it ends
def train_run(
    script_args, training_args, model_args, reward_funcs: list | None = None, on_built=None, save_model: bool = True
):
    """Build (:func:`build_trainer`), train, and save the model (or adapter), tokenizer and ``trainer_state.json``
    into ``output_dir`` (only the state without ``save_model``). ``on_built(trainer)`` runs before training
    (console hooks). Returns the trainer."""
    run = build_trainer(script_args, training_args, model_args, reward_funcs)
    trainer = run.trainer
    if on_built is not None:
        on_built(trainer)
    try:
        trainer.train(resume_from_checkpoint=run.resume_from_checkpoint)
        if save_model:  # under a temporary name, renamed and recorded when whole (gdpo_trl.trainer.safe_saves)
            from gdpo_trl.trainer.safe_saves import save_final_model

            save_final_model(trainer, training_args.output_dir)  # under ZeRO-3 this gathers the shards
        trainer.save_state()
    except (OSError, RuntimeError) as error:  # a save that filled the disk: one line naming what is left
        if is_disk_full(error):
            raise disk_full_error(training_args, error) from error
        raise
    return trainer
