"""gdpo-eval's tool-calling mode: score a model on BFCL's AST categories with the training prompt format.

Examples:
  python -m gdpo_trl.cli.eval_bfcl --model outputs/Qwen2.5-1.5B-Instruct-toolcall-gdpo
  python -m gdpo_trl.cli.eval_bfcl --model builtin:tiny --categories simple parallel --limit 4 --max_new_tokens 16

Needs bfcl-eval, installed without its pins: pip install --no-deps "bfcl-eval==2026.3.23".
Writes bfcl_summary.json and bfcl_completions.jsonl to --output_dir when given.
"""

from __future__ import annotations

import argparse
import sys

from gdpo_trl.eval.bfcl import CATEGORIES, evaluate_bfcl, format_report


def add_bfcl_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The BFCL flags, for this module's parser or for gdpo-eval's."""
    parser.add_argument(
        "--categories",
        nargs="+",
        choices=list(CATEGORIES),
        default=list(CATEGORIES),
        help="BFCL AST categories to score (default: all four)",
    )
    parser.add_argument("--limit", type=int, help="score only the first N entries of each category")
    parser.add_argument("--max_new_tokens", type=int, default=512, help="completion length limit (default: 512)")
    parser.add_argument("--batch_size", type=int, default=16, help="prompts per generate call (default: 16)")
    parser.add_argument("--output_dir", help="where to write bfcl_summary.json and bfcl_completions.jsonl")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gdpo-eval-bfcl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="Hub id, local checkpoint, LoRA adapter folder or builtin:tiny")
    args = add_bfcl_arguments(parser).parse_args(argv)
    try:
        summary = evaluate_bfcl(**vars(args))
    except ImportError as err:
        parser.error(str(err))
    print(format_report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
