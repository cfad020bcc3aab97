"""One way to build a run from a parsed recipe: checks, output folder, rewards, data, model, trainer.

Parsing is apart (:func:`gdpo_trl.recipe.arguments.parse_args`), as in TRL's scripts and open-r1's
``main(script_args, training_args, model_args)``, so every path builds the same way: ``gdpo train``, each run of
``gdpo compare``, the tests and Python users::

    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.build import train_run

    script_args, training_args, model_args = parse_args(["--config", "recipes/cpu/gdpo/config.yaml"])
    trainer = train_run(script_args, training_args, model_args)

Everything that can be checked without the model is checked first, so a mistake fails in seconds: the run's inputs
(:mod:`gdpo_trl.run.inputs`), then its output folder (:func:`gdpo_trl.run.checkpoints.prepare_output`), then the model's
files and the rows (:mod:`gdpo_trl.run.inputs` again), then the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdpo_trl.run.checkpoints import prepare_output
from gdpo_trl.run.checks import check_loaded_weights
from gdpo_trl.run.inputs import check_inputs, load_inputs
from gdpo_trl.run.output_checks import disk_full_error, is_disk_full
from gdpo_trl.run.run_lock import releases_run_locks


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
    from transformers import set_seed
    from trl import get_peft_config, get_quantization_config

    from gdpo_trl.trainer import GDPOTrainer

    # 1. What needs neither the model nor the rows, then the output folder: a misspelled name or an earlier run in
    # the way fails in a second. 2. The model's files, the rows and the tokenizer, checked against each other.
    set_seed(training_args.seed)
    checked = check_inputs(script_args, training_args, model_args, reward_funcs)  # the rewards prepared once
    checkpoint, callbacks = prepare_output(script_args, training_args, model_args)  # held; resumed as recorded
    model_path, train_dataset, tokenizer = load_inputs(script_args, training_args, model_args, checked)

    # 3. The trainer; with `use_peft`, LoRA adapters (`lora_*` fields) wrap the model. Every checkpoint records the
    # recipe (the callbacks), so that a resume can compare it before loading the model. An agent source brings its
    # environment (TRL's multi-turn tool loop; its `get_reward`, if any, becomes one more reward of weight 1).
    trainer = GDPOTrainer(
        model_path,
        reward_funcs=checked.rewards,  # prepared and checked against the rows: the trainer takes them as they are
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
        callbacks=callbacks,
        **checked.environment_kwargs,
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
