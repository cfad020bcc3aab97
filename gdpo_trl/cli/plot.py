"""gdpo plot: compare GRPO/GDPO training runs: print a Markdown summary table and write a PNG, one panel per reward.

Example:
    gdpo plot outputs/grpo outputs/gdpo --names GRPO GDPO --window 5 --output_file outputs/runs.png --table outputs/runs.md

Each RUN is an output_dir, a checkpoint folder or a trainer_state.json file. --out, the old spelling of --output_file,
still works with a warning. An existing --output_file or --table is refused unless --overwrite is given, and neither
may be in a run's folder (only gdpo train writes there).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.cli.output_files import check_new_files
from gdpo_trl.cli.spellings import renamed
from gdpo_trl.core.argparsing import OneLineErrors
from gdpo_trl.core.errors import InputError
from gdpo_trl.results.plots import plot_runs, png_path
from gdpo_trl.results.runs import load_runs, summary_table
from gdpo_trl.storage.safe_write import check_file_target, write_text_whole

OLD_SPELLINGS = {"--out": "--output_file"}


class PlotParser(OneLineErrors, argparse.ArgumentParser):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = PlotParser(prog="gdpo plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN", help="output_dir, checkpoint folder or trainer_state.json")
    parser.add_argument("--names", nargs="+", help="legend names, one per RUN (default: the output_dir names)")
    parser.add_argument("--window", type=int, default=1, help="moving-average window in logged points (default: 1)")
    parser.add_argument(
        "--output_file",
        type=Path,
        default=Path("outputs/runs.png"),
        help="image to write (default: outputs/runs.png; a name without a suffix gets .png, a folder runs.png)",
    )
    parser.add_argument("--table", type=Path, help="also write the Markdown table to this file")
    parser.add_argument("--title", help="figure title")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace --output_file and --table if they exist (refused without it)"
    )
    return parser


@cli_errors("gdpo plot")
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(renamed(argv, OLD_SPELLINGS, "gdpo plot"))
    if args.window < 1:
        parser.error(f"--window must be >= 1, got {args.window}")
    if args.names is not None and len(args.names) != len(args.runs):
        parser.error(f"--names has {len(args.names)} names for {len(args.runs)} runs")
    if args.table:
        check_file_target(args.table, "gdpo plot --table", "runs.md")  # before the runs are read
    outputs = {"gdpo plot --output_file": png_path(args.output_file)}
    if args.table:
        outputs["gdpo plot --table"] = args.table
    check_new_files(outputs, args.overwrite, reads=[Path(run) for run in args.runs])  # nothing a user made is lost
    try:
        runs = load_runs(args.runs, args.names)
    except (FileNotFoundError, ValueError) as err:  # ValueError covers unreadable JSON too
        raise InputError(str(err)) from None  # one line, exit 2 (cli_errors)

    table = summary_table(runs)
    print(table, end="")
    # Status lines go to stderr so that stdout stays pure Markdown when redirected to a file.
    if args.table:  # whole or not at all: a folder, read-only or full disk is named in one line (exit 2)
        write_text_whole(args.table, table, "gdpo plot --table")
        print(f"wrote table to {args.table}", file=sys.stderr)
    try:
        out = plot_runs(runs, args.output_file, window=args.window, title=args.title)
    except ValueError as err:  # no run has anything to plot, or a format matplotlib cannot write
        raise InputError(str(err)) from None
    print(f"wrote plot to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
