"""The command line every warm-start builder shares: ``python -m MODULE PATH [--seed N] [--steps N] [--threads N]
[--no-measure]``, the form in which the demo's ``builtin:`` names build a warm start in a child process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gdpo_trl.cli.console import quiet_known_warnings


def build_parser(description: str) -> argparse.ArgumentParser:
    """The arguments every warm-start builder takes (this one and the tool-call task's): PATH, seed, steps, threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("path", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's SFT steps (for quick checks)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    return parser


def start_build(args: argparse.Namespace, banner: str) -> None:
    """Say what comes (TRL's import is silent for seconds), silence known noise, apply ``--threads``."""
    print(banner, file=sys.stderr, flush=True)
    quiet_known_warnings()
    if args.threads is not None:
        __import__("torch").set_num_threads(args.threads)


def builder_main(argv: list[str] | None, doc: str, banner: str, recipe_type, build) -> None:
    """The command line of a warm-start builder: ``python -m MODULE PATH [--seed N] [--steps N] [--no-measure]``
    (how the demo's ``builtin:`` names build it, in a child process) runs ``build(PATH, seed, recipe, measure=...)``."""
    parser = build_parser(doc.splitlines()[0])
    parser.add_argument("--no-measure", dest="measure", action="store_false", help="skip measuring rewards")
    args = parser.parse_args(argv)
    start_build(args, banner)
    recipe = recipe_type() if args.steps is None else recipe_type(steps=args.steps)
    build(args.path, args.seed, recipe, measure=args.measure)
