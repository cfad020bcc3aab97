"""``gdpo``: one command for gdpo-trl, with a subcommand per job.

    gdpo train   --config recipes/cpu/gdpo/config.yaml [--num_processes 2 | --accelerate_config zero3 ...]
    gdpo eval    --model outputs/cpu-gdpo --dataset warmstart
    gdpo compare --config recipes/cpu/gdpo/config.yaml --seeds 0 1 2
    gdpo plot    outputs/cpu-gdpo outputs/cpu-grpo
    gdpo recipes list | copy cpu/gdpo my.yaml

``gdpo <subcommand> --help`` shows each one's options. Input errors print one line and exit 2 (``--debug`` or
``GDPO_TRL_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys

from gdpo_trl.cli.errors import cli_errors

# name -> (module with `main(argv)`, one line of help)
SUBCOMMANDS = {
    "train": ("gdpo_trl.cli.main", "train with GDPO or GRPO from a YAML recipe (starts accelerate when asked to)"),
    "eval": ("gdpo_trl.cli.evaluate", "score a model's completions with reward functions, or on BFCL"),
    "compare": ("gdpo_trl.cli.compare", "train several methods from one recipe over seeds and compare them"),
    "plot": ("gdpo_trl.cli.plot", "plot the reward curves of training runs"),
    "recipes": ("gdpo_trl.cli.recipes", "list the shipped recipes, or copy one out to edit"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gdpo",
        description="GDPO (multi-reward RL) on Hugging Face TRL.",
        epilog="Run `gdpo <subcommand> --help` for a subcommand's options.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="<subcommand>")
    for name, (_, help_text) in SUBCOMMANDS.items():
        subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return run_subcommand(argv)
    except BrokenPipeError:
        # `gdpo recipes list | head`: the reader closed the pipe, and nothing is wrong. Python would print a traceback,
        # then fail again flushing stdout at exit; point stdout at /dev/null and end as a command killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def run_subcommand(argv: list[str] | None = None) -> int:
    from gdpo_trl.cli.console import quiet_known_warnings

    quiet_known_warnings()  # here too: `gdpo train` parses the recipe in this process before accelerate starts
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    if argv[0] not in SUBCOMMANDS:
        parser.error(f"unknown subcommand {argv[0]!r}: choose from {', '.join(SUBCOMMANDS)}")
    name, rest = argv[0], argv[1:]
    if name == "train":
        return train(rest) or 0
    return importlib.import_module(SUBCOMMANDS[name][0]).main(rest) or 0


@cli_errors("gdpo train")
def train(argv: list[str]) -> None:
    """In this process, or, given accelerate options, under ``accelerate launch`` once the recipe has parsed.

    Help, a recipe path given without ``--config``, a recipe file that cannot be read and every mistake the command
    line and recipe show (:mod:`gdpo_trl.cli.first_checks`) are answered before torch and TRL are imported (they take
    seconds); the rest needs the recipe's dataclasses, hence TRL.
    """
    from gdpo_trl.cli.first_checks import check_first
    from gdpo_trl.cli.train_help import answer_help
    from gdpo_trl.recipe.recipe_file import check_bare_recipe, check_recipe_yaml

    if answer_help(argv):
        return
    check_bare_recipe(argv)
    processes = check_first(argv, check_recipe_yaml(argv))
    from gdpo_trl.cli import train as train_command
    from gdpo_trl.cli.launch import check_launch_options, launch_training, recipe_precision, split_launch_args
    from gdpo_trl.cli.model_card import COMMAND_ENV
    from gdpo_trl.recipe.field_table import remember_table

    remember_table()  # TRL is imported now: where the committed table does not fit this machine, keep one that does
    recipe_argv, launch = split_launch_args(argv)
    if not launch:
        return train_command.main(recipe_argv)
    check_launch_options(launch)  # a bad count, port or accelerate config: one line before anything starts
    # One error line here, rather than one traceback per process.
    training_args = check_before_launch(recipe_argv, processes or accelerator_count())
    os.environ[COMMAND_ENV] = shlex.join(["gdpo", "train", *argv])  # for the model card the processes write
    try:
        launch_training(recipe_argv, recipe_precision(launch, training_args), training_args.output_dir)
    finally:
        os.environ.pop(COMMAND_ENV, None)


def accelerator_count() -> int:
    """The processes accelerate starts when no count is given: one per GPU it finds, else one."""
    import torch

    return torch.cuda.device_count() or 1


def check_before_launch(recipe_argv: list[str], num_processes: int = 1):
    """Parse and check the recipe as each of the ``num_processes`` processes will, so a mistake fails once, before
    any process starts; returns its training arguments."""
    from gdpo_trl.core.errors import input_stage
    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.checks import check_recipe

    with input_stage("recipe"):
        script_args, training_args, model_args = parse_args(recipe_argv, num_processes)
    check_recipe(script_args, training_args, model_args)
    return training_args


if __name__ == "__main__":
    raise SystemExit(main())
