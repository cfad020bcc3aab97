"""``gdpo train``: GDPO (or GRPO) fine-tuning from a TRL-style YAML recipe.

Usage::

    gdpo train --config recipes/cpu/gdpo/config.yaml                       # one process
    gdpo train --config recipes/cpu/gdpo/config.yaml --max_steps 2         # flags override the YAML
    gdpo train --config recipes/cpu/gdpo/config.yaml --num_processes 2     # accelerate starts 2 processes
    gdpo train --config recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml --accelerate_config zero3   # 8 GPUs

With an accelerate option (``--accelerate_config NAME_OR_FILE``, ``--num_processes``, ``--num_machines``, ...; see
:mod:`gdpo_trl.cli.launch`) ``gdpo train`` checks the recipe, then starts ``accelerate launch -m gdpo_trl.cli.train``
itself; that command also works typed by hand. The YAML holds flat keys of three dataclasses:
:class:`~gdpo_trl.recipe.arguments.GDPOScriptArguments` (data and rewards), ``GDPOConfig`` (training) and TRL's
``ModelConfig`` (model and LoRA), plus an optional ``env:`` block. ``gdpo train --help`` lists every field.
"""

from __future__ import annotations

from gdpo_trl.cli.console import (
    bound_completions_logging,
    package_warnings_as_lines,
    quiet_known_warnings,
    setup_logging,
    use_compact_progress,
)
from gdpo_trl.cli.engines import check_fsdp_engaged, end_process, shutdown_distributed
from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.cli.model_card import attach_run_card, write_card
from gdpo_trl.cli.orphans import follow_launcher, quiet_interrupt
from gdpo_trl.cli.run_records import mark_saved
from gdpo_trl.cli.train_help import answer_help
from gdpo_trl.core.errors import input_stage
from gdpo_trl.recipe.arguments import parse_args
from gdpo_trl.recipe.names import config_file
from gdpo_trl.recipe.recipe_file import check_bare_recipe
from gdpo_trl.run.build import train_run
from gdpo_trl.run.resume_settings import RunFinished


@cli_errors("gdpo train")
def main(argv: list[str] | None = None) -> None:
    """Parse the recipe and flags, then build, train and save (:func:`gdpo_trl.run.build.train_run`)."""
    if answer_help(argv):
        return
    quiet_known_warnings()
    package_warnings_as_lines("gdpo train")
    check_bare_recipe(argv)
    with input_stage("recipe"):  # parse_args checks the recipe file first
        script_args, training_args, model_args = parse_args(argv)
    check_fsdp_engaged()  # an FSDP config on a CPU-only machine would silently run DDP
    setup_logging(training_args.get_process_log_level())
    bound_completions_logging(training_args, argv)
    recipe = config_file(argv)

    def on_built(trainer) -> None:
        use_compact_progress(trainer)
        attach_run_card(trainer, script_args, training_args, model_args, recipe, argv)

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


if __name__ == "__main__":  # accelerate launch -m gdpo_trl.cli.train ...
    follow_launcher()  # started by gdpo train: end with it, however it ends (gdpo_trl.cli.orphans)
    end_process(quiet_interrupt(main))  # main's status, without the interpreter teardown a ZeRO-3 rank could abort in
