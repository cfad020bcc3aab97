"""``gdpo``: one command for gdpo-trl, with a subcommand per job.

    gdpo train   --config recipes/cpu/gdpo/config.yaml [--num_processes 2 | --accelerate_config zero3 ...]
    gdpo eval    --model outputs/cpu-gdpo --dataset warmstart
    gdpo pilot   --config recipes/cpu/gdpo/config.yaml
    gdpo compare --config recipes/cpu/gdpo/config.yaml --seeds 0 1 2
    gdpo plot    outputs/cpu-gdpo outputs/cpu-grpo
    gdpo gaming  outputs/cpu-gdpo
    gdpo recipes list | copy cpu/gdpo my.yaml

``gdpo <subcommand> --help`` shows each one's options. Input errors print one line and exit 2 (``--debug`` or
``GDPO_TRL_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module with `main(argv)`, one line of help)
SUBCOMMANDS = {
    "train": ("gdpo_trl.cli.train", "train with GDPO or GRPO from a YAML recipe (starts accelerate when asked to)"),
    "eval": ("gdpo_trl.cli.evaluate", "score a model's completions with reward functions, or on BFCL"),
    "pilot": ("gdpo_trl.cli.pilot", "before training: will GDPO (or another rule) train differently from GRPO here?"),
    "compare": ("gdpo_trl.cli.compare", "train several methods from one recipe over seeds and compare them"),
    "plot": ("gdpo_trl.cli.plot", "plot the reward curves of training runs"),
    "gaming": ("gdpo_trl.cli.gaming", "where the gaming watch fires on saved runs (docs/gaming.md)"),
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
    from gdpo_trl.core.cpu_speed import quiet_thread_waits

    quiet_thread_waits()  # before anything imports torch: idle OpenMP threads sleep, so a busy CPU does not stall a run
    quiet_known_warnings()  # here too: `gdpo train` parses the recipe in this process before accelerate starts
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    if argv[0] not in SUBCOMMANDS:
        parser.error(f"unknown subcommand {argv[0]!r}: choose from {', '.join(SUBCOMMANDS)}")
    return importlib.import_module(SUBCOMMANDS[argv[0]][0]).main(argv[1:]) or 0


if __name__ == "__main__":
    raise SystemExit(main())
