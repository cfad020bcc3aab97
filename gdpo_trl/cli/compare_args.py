"""gdpo compare: GRPO, GRPO without std and GDPO (or other methods) from one recipe's warm start, over seeds.

Every run is the recipe (--config; default recipes/cpu/gdpo/config.yaml: the SFT warm start ``builtin:warmstart``
with the format, correctness and integer rewards on generated problems it never saw in SFT) with the comparison's
steps and batch, one method's fields and one seed: the model, data, rewards and every other setting are the
recipe's. A method is a named set of recipe fields (gdpo_trl.results.compare.METHODS: grpo, grpo_no_std, gdpo, gdpo_no_bn,
and gdpo_outcome_only, which keeps the recipe's process rewards only as logged scores of weight 0). Each run sees
every prompt once, logs every step and uses the machine's accelerator if it has one. Writes, under --output_dir: one
folder per run (with its ``trainer_state.json``), ``comparison.md`` (the table) and ``comparison.png``.

The table opens with what its seeds can show: below the seeds per arm that --difference needs on every reward (80%
power, Welch's test at Holm's strictest level across the rewards, at the spread between the seeds' finals), it says
so first. Differences from the first method are read by Welch's t 95% interval (a percentile bootstrap as a second
reading from 8 seeds per arm up). Where every run was evaluated on one shared set (--save_models, then gdpo eval of
each run into --output_dir/eval-<method>-seed<N>/, then --skip_training), per-problem paired tests follow: McNemar's
exact test for 0/1 rewards, a paired t-test otherwise.

    gdpo compare                                   # CPU default: 3 methods x 3 seeds
    gdpo compare --scale 4 --seeds 0 1 2 3 4       # longer, larger batches (for a GPU)
    gdpo compare --config recipes/cpu/toolcall_gdpo/config.yaml --output_dir outputs/compare-toolcall
    gdpo compare --config recipes/cpu/gdpo_process/config.yaml --methods gdpo_outcome_only gdpo \\
        --output_dir outputs/compare-process       # with vs without the `equations` process reward

The flags' old spellings (--recipe, --out-dir, --learning-rate, --prompts-per-step, --num-generations,
--max-completion-length, --threads, --skip-training) still work, with a warning naming the new one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gdpo_trl.cli.output_files import check_new_file
from gdpo_trl.cli.spellings import renamed
from gdpo_trl.core.argparsing import OneLineErrors, read_negative_numbers
from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.names import resolve_recipe

DEFAULT_RECIPE = "cpu/gdpo"  # shipped in the package: the default works from any folder
# The spellings of gdpo compare's flags before they followed gdpo train's (TRL's snake_case): still read, with a warning.
OLD_SPELLINGS = {
    "--recipe": "--config",
    "--out-dir": "--output_dir",
    "--learning-rate": "--learning_rate",
    "--prompts-per-step": "--prompts_per_step",
    "--num-generations": "--num_generations",
    "--max-completion-length": "--max_completion_length",
    "--threads": "--cpu_threads",
    "--skip-training": "--skip_training",
}


class CompareParser(OneLineErrors, argparse.ArgumentParser):
    pass


def build_parser() -> CompareParser:
    from gdpo_trl.results.compare import METHODS

    parser = CompareParser(
        prog="gdpo compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    read_negative_numbers(parser)
    recipe = "(default: the recipe's)"
    parser.add_argument(
        "--config", default=DEFAULT_RECIPE, help="gdpo train recipe (file or name) every run starts from"
    )
    parser.add_argument("--methods", nargs="+", default=["grpo", "grpo_no_std", "gdpo"], choices=sorted(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help=f"optimizer steps per run, times --scale {recipe}")
    parser.add_argument("--prompts_per_step", type=int, help=f"prompts per step, times --scale {recipe}")
    parser.add_argument("--num_generations", type=int, help=recipe)
    parser.add_argument("--max_completion_length", type=int, help=recipe)
    parser.add_argument("--learning_rate", type=float, help=recipe)
    parser.add_argument("--cpu_threads", type=int, help=f"torch CPU threads {recipe}")
    parser.add_argument("--scale", type=int, default=1, help="multiply steps and prompts per step (GPU runs)")
    parser.add_argument("--model", help=f"model name or path {recipe}: model_name_or_path")
    parser.add_argument(
        "--gain", type=float, default=0.1, help="'steps to reach' target: start + gain x the reward's range seen"
    )
    parser.add_argument(
        "--difference",
        type=float,
        default=0.03,
        help="the difference of interest on each reward: the seeds per arm it needs open the table (80%% power, "
        "Holm across the rewards)",
    )
    parser.add_argument("--window", type=int, default=5, help="smoothing window (steps) for the plot and targets")
    parser.add_argument("--output_dir", default="outputs/compare")
    parser.add_argument("--skip_training", action="store_true", help="only rebuild table and plot from --output_dir")
    parser.add_argument(
        "--save_models",
        action="store_true",
        help="save each run's final model in its folder, to evaluate it with gdpo eval (for the paired tests)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier comparison.md and .png (refused without it)"
    )
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(renamed(list(sys.argv[1:] if argv is None else argv), OLD_SPELLINGS, "gdpo compare"))
    check_flags(args)
    return args


def check_flags(args) -> None:
    """Counts below their least, named by the flag (the recipe's checks would name the field it sets instead)."""
    least = {"--steps": 1, "--prompts_per_step": 1, "--num_generations": 2, "--max_completion_length": 1}
    least.update({"--cpu_threads": 1, "--scale": 1, "--window": 1})
    for flag, minimum in least.items():
        value = getattr(args, flag[2:])
        if value is not None and value < minimum:
            raise InputError(f"{flag} {value}: must be at least {minimum}.")
    for flag in ("--gain", "--difference"):
        if not getattr(args, flag[2:]) > 0:
            raise InputError(f"{flag} {getattr(args, flag[2:])}: must be a number > 0.")
    if args.learning_rate is not None and not args.learning_rate >= 0:
        raise InputError(f"--learning_rate {args.learning_rate}: must be a number >= 0.")
    if not args.seeds:
        raise InputError("--seeds needs at least one seed, e.g. --seeds 0 1 2.")
    for flag, values in (("--methods", args.methods), ("--seeds", args.seeds)):
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:  # the second run of a pair would find the first one's folder, after it trained: say it now
            raise InputError(
                f"{flag} names {', '.join(twice)} twice: each method and seed is one run; name each once."
            )
    out = Path(args.output_dir)
    for name in ("comparison.md", "comparison.png"):  # before any run trains, not after an hour of them
        check_new_file(out / name, "gdpo compare --output_dir", args.overwrite, instead="choose another --output_dir")


def find_recipe(path: str) -> str:
    """``path`` as given if it is a file, else the shipped recipe of that name (``cpu/gdpo``)."""
    return resolve_recipe(path)
