"""gdpo gaming: where the gaming watch would have fired on saved runs (docs/gaming.md).

Examples:
    gdpo gaming outputs/cpu-qwen-gdpo
    gdpo gaming docs/results/logs/qwen_gdpo_grpo.json.gz --json

Each RUN is an output_dir, a checkpoint folder, a trainer_state.json, or a study's log of runs (.json or .json.gz,
one log_history per run). One line per run: the steps where the rule fires, or never, and at the first firing the
rewards and lengths that made it fire. The rule's thresholds default to those every run's watch uses.
"""

from __future__ import annotations

import argparse
import json

from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.core.argparsing import OneLineErrors
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.gaming import GamingRule
from gdpo_trl.results.gaming import judge


class GamingParser(OneLineErrors, argparse.ArgumentParser):
    pass


def build_parser() -> argparse.ArgumentParser:
    rule = GamingRule()
    parser = GamingParser(
        prog="gdpo gaming", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="output_dir, checkpoint, trainer_state.json or log")
    parser.add_argument(
        "--window", type=int, default=rule.window, help=f"logged steps compared (default: {rule.window})"
    )
    parser.add_argument(
        "--rise", type=float, default=rule.rise, help=f"an easier reward's rise (default: {rule.rise})"
    )
    parser.add_argument(
        "--hard_rise", type=float, default=rule.hard_rise, help=f"the hardest rises less (default: {rule.hard_rise})"
    )
    parser.add_argument(
        "--hard_ceiling",
        type=float,
        default=rule.hard_ceiling,
        help=f"the hardest stays below this (default: {rule.hard_ceiling})",
    )
    parser.add_argument(
        "--length_drop",
        type=float,
        default=rule.length_drop,
        help=f"the mean length falls by this fraction (default: {rule.length_drop})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (every judged step of every run) instead")
    return parser


@cli_errors("gdpo gaming")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    rule = GamingRule(args.window, args.rise, args.hard_rise, args.hard_ceiling, args.length_drop)
    try:
        verdicts = judge(args.runs, rule)
    except (FileNotFoundError, ValueError) as error:
        raise InputError(str(error)) from None
    if args.json:
        print(json.dumps({"rule": vars(rule), "runs": [v.as_dict() for v in verdicts]}, indent=1))
    else:
        for verdict in verdicts:
            print(verdict.line())
    return 0
