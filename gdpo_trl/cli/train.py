"""``gdpo train``: GDPO (or GRPO) fine-tuning from a TRL-style YAML recipe.

Usage::

    gdpo train --config recipes/cpu/gdpo/config.yaml                       # one process
    gdpo train --config recipes/cpu/gdpo/config.yaml --max_steps 2         # flags override the YAML
    gdpo train --config recipes/cpu/gdpo/config.yaml --num_processes 2     # accelerate starts 2 processes
    gdpo train --config recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml --accelerate_config zero3   # 8 GPUs

The way in, top to bottom: :func:`main` answers ``--help``, then reads the arguments once
(:func:`gdpo_trl.cli.first_checks.read_request`: the recipe file, the split between recipe flags and accelerate
options, every mistake found before TRL is imported). Without accelerate options the run trains in this process
(:func:`train`, given the recipe already read); with them (``--accelerate_config NAME_OR_FILE``,
``--num_processes``, ``--num_machines``, ...; see :mod:`gdpo_trl.cli.launch`) the recipe is parsed once as each
process will parse it, then ``accelerate launch -m gdpo_trl.cli.train`` starts the processes, each of which runs
:func:`train` (that command also works typed by hand). The YAML holds flat keys of three dataclasses:
:class:`~gdpo_trl.recipe.arguments.GDPOScriptArguments` (data and rewards), ``GDPOConfig`` (training) and TRL's
``ModelConfig`` (model and LoRA), plus an optional ``env:`` block. ``gdpo train --help`` lists the fields.
"""

from __future__ import annotations

import os
import shlex
import sys

from gdpo_trl.cli.console import command_console, process_console, use_compact_progress
from gdpo_trl.cli.engines import check_fsdp_engaged, end_process, shutdown_distributed
from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.cli.first_checks import TrainRequest, read_request
from gdpo_trl.cli.model_card import attach_run_card, write_card
from gdpo_trl.cli.orphans import follow_launcher, quiet_interrupt
from gdpo_trl.cli.run_records import mark_saved
from gdpo_trl.cli.train_help import answer_help
from gdpo_trl.core.errors import input_stage
from gdpo_trl.recipe.recipe_file import Recipe


@cli_errors("gdpo train")
def main(argv: list[str] | None = None) -> None:
    """``gdpo train``: help, or the arguments read once, then trained here or launched."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if answer_help(argv):
        return
    request = read_request(argv)
    from gdpo_trl.recipe.field_table import remember_table

    remember_table()  # where the committed field table does not fit this machine, keep one that does (imports TRL)
    if request.launch:
        launch(request)
    else:
        train(request.recipe_argv, request.recipe)


def launch(request: TrainRequest) -> None:
    """Check the launch options and the recipe as each process will parse it (so a mistake fails once, in one
    line, before any process starts), then start them under ``accelerate launch``."""
    from gdpo_trl.cli.launch import check_engine_settings, check_launch_options, launch_training, recipe_precision
    from gdpo_trl.cli.model_card import COMMAND_ENV

    check_launch_options(request.launch)  # a bad count, port or accelerate config: one line before anything starts
    training_args = check_before_launch(request.recipe_argv, request.recipe, request.processes or accelerator_count())
    check_engine_settings(request.launch, training_args)  # e.g. merge_lora_for_generation under DeepSpeed
    os.environ[COMMAND_ENV] = shlex.join(["gdpo", "train", *request.argv])  # for the model card the processes write
    try:
        launch_training(request.recipe_argv, recipe_precision(request.launch, training_args), training_args.output_dir)
    finally:
        os.environ.pop(COMMAND_ENV, None)


def accelerator_count() -> int:
    """The processes accelerate starts when no count is given: one per GPU it finds, else one."""
    import torch

    return torch.cuda.device_count() or 1


def check_before_launch(recipe_argv: list[str], recipe: Recipe | None, num_processes: int = 1):
    """Parse and check the recipe as each of the ``num_processes`` processes will; returns its training arguments."""
    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.checks import check_recipe

    script_args, training_args, model_args = parse_args(recipe_argv, num_processes, recipe)
    check_recipe(script_args, training_args, model_args)
    return training_args


def train(recipe_argv: list[str], recipe: Recipe | None) -> None:
    """Parse the recipe flags with the recipe as read (``recipe_argv``'s ``--config`` file), then build, train and
    save (:func:`gdpo_trl.run.build.train_run`). One process: ``gdpo train``'s own, or one accelerate started."""
    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.build import train_run
    from gdpo_trl.run.resume_settings import RunFinished

    command_console("gdpo train")  # known library warnings silenced, the package's own as one line
    script_args, training_args, model_args = parse_args(recipe_argv, recipe=recipe)
    check_fsdp_engaged()  # an FSDP config on a CPU-only machine would silently run DDP
    process_console(training_args, recipe_argv)  # this process's log level, TRL's completions table bounded
    from gdpo_trl.run.fingerprints import check_same_rewards

    check_same_rewards(script_args)  # under several processes: each runs rank 0's reward code, or the run stops

    def on_built(trainer) -> None:
        use_compact_progress(trainer)
        attach_run_card(trainer, script_args, training_args, model_args, recipe and recipe.text, recipe_argv)

    try:
        trainer = train_run(script_args, training_args, model_args, on_built=on_built)
    except RunFinished as finished:  # resuming a finished run: one line, nothing written, exit 0
        if training_args.process_index == 0:
            print(f"gdpo train: {finished}", flush=True)
        shutdown_distributed()
        return
    write_card(trainer, training_args)  # README.md in output_dir (with push_to_hub, saving pushed it already)
    mark_saved()  # for gdpo train's launcher: a process that dies from here on died after everything was written
    if trainer.accelerator.is_main_process:
        print(final_summary(trainer, training_args.output_dir), flush=True)
    shutdown_distributed()  # before the interpreter exits: a ZeRO-3 rank could abort otherwise (gdpo_trl.cli.engines)


def final_summary(trainer, output_dir: str) -> str:
    """The rewards (and the conflict shares) at the start and end of training (from :mod:`gdpo_trl.results.runs`),
    and where the model is."""
    from gdpo_trl.results.runs import conflict_ends, format_ends, reward_ends

    state, processes = trainer.state, trainer.accelerator.num_processes
    rows, window = reward_ends(state.log_history, trainer.reward_func_names)
    rows += conflict_ends(state.log_history, window)  # multi-reward runs: how often the rewards disagreed
    return "\n".join(
        [
            f"Training finished after {state.global_step} steps on {processes} process{'es' * (processes > 1)}.",
            format_ends(rows, window),
            f"Model saved to {output_dir}",
        ]
    )


@cli_errors("gdpo train")
def process_main(argv: list[str] | None = None) -> None:
    """One process of a launched run (``accelerate launch -m gdpo_trl.cli.train``): the launcher read and checked
    the arguments already, so this process reads its recipe file once, parses it with the flags and trains."""
    from gdpo_trl.recipe.names import resolve_config_flag
    from gdpo_trl.recipe.recipe_file import recipe_of

    recipe_argv = resolve_config_flag(sys.argv[1:] if argv is None else argv)
    with input_stage("recipe"):
        recipe = recipe_of(recipe_argv)
    train(recipe_argv, recipe)


if __name__ == "__main__":  # accelerate launch -m gdpo_trl.cli.train ...
    follow_launcher()  # started by gdpo train: end with it, however it ends (gdpo_trl.cli.orphans)
    end_process(quiet_interrupt(process_main))  # its status, without the teardown a ZeRO-3 rank could abort in
