"""gdpo eval: score a model, checkpoint or LoRA adapter with the training prompt and rewards (GSM8K by default), or
on BFCL's tool-calling categories (--task bfcl).

Examples:
  # a training output_dir or checkpoint-N folder (full model), greedy on the GSM8K test split
  gdpo eval --model outputs/Qwen2.5-1.5B-Instruct-gdpo
  # the paper's sampling settings, pass@1 averaged over 4 samples per problem
  gdpo eval --model outputs/Qwen2.5-1.5B-Instruct-gdpo --temperature 0.6 --top_p 0.95 --n 4
  # a LoRA adapter, as --model (base read from adapter_config.json) or on an explicit base
  gdpo eval --model outputs/Qwen2.5-0.5B-Instruct-lora-smoke
  gdpo eval --model Qwen/Qwen2.5-0.5B-Instruct --adapter outputs/Qwen2.5-0.5B-Instruct-lora-smoke
  # offline smoke test
  gdpo eval --model builtin:tiny --dataset sample --limit 8 --max_new_tokens 32
  # the CPU demo before and after training, on its held-out problems, sampled as in training
  gdpo eval --model builtin:warmstart --dataset warmstart --temperature 1 --n 8 --max_new_tokens 48
  gdpo eval --model outputs/cpu-gdpo --dataset warmstart --temperature 1 --n 8 --max_new_tokens 48
  # the system prompt a paper-parity recipe trained with (its `system_prompt` field)
  gdpo eval --model outputs/Qwen2.5-1.5B-Instruct-gdpo --system_prompt "$(cat my_prompt.txt)"
  # tool calling: the offline task's held-out requests, or ToolRL-format rows (scored with tool_format and
  # tool_correctness unless --rewards says otherwise)
  gdpo eval --model outputs/cpu-toolcall-gdpo --dataset toolcall --temperature 1 --n 4 --max_new_tokens 160
  gdpo eval --model outputs/Qwen2.5-1.5B-Instruct-toolcall-gdpo --dataset toolrl --dataset_path rows.parquet
  # tool calling on BFCL's AST categories, judged by bfcl-eval's own checker (greedy, transformers)
  gdpo eval --task bfcl --model outputs/Qwen2.5-1.5B-Instruct-toolcall-gdpo
  gdpo eval --task bfcl --model builtin:tiny --categories simple parallel --limit 2 --max_new_tokens 16

Writes summary.json (metrics and settings) and completions.jsonl (every completion with its rewards) to
--output_dir, by default <model or adapter folder>/eval-<dataset>-<split> for local weights, else
outputs/eval/<model>-<dataset>-<split> (a single data file has no split: eval-<file name>), plus every setting that
is not its default (sampling, max_new_tokens, rewards, ...). A folder that already holds a result is refused unless --overwrite is given. --task bfcl writes
bfcl_summary.json and bfcl_completions.jsonl, only when --output_dir is given; it needs bfcl-eval, installed without its
pins into a folder of its own (make install does): pip install --no-deps --target .venv/bfcl-eval "bfcl-eval==2026.3.23".

A mistake in the arguments or the data stops with one line `gdpo eval: error: ...` and exit status 2; add --debug
(or set GDPO_TRL_DEBUG=1) to see its traceback too.
"""

from __future__ import annotations

import argparse
import sys

from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.cli.output_files import check_outside_runs
from gdpo_trl.core.argparsing import OneLineErrors, read_negative_numbers
from gdpo_trl.eval import BACKENDS, DEFAULT_REWARDS, DTYPES, evaluate, format_summary
from gdpo_trl.eval.bfcl import CATEGORIES, evaluate_bfcl, format_report
from gdpo_trl.eval.report import BFCL_RESULT_FILES, plan_output_dir, refuse_earlier_result, replacing_results
from gdpo_trl.eval.scoring import TOOL_REWARDS

TASKS = ("dataset", "bfcl")
# gdpo eval's flags that only --task dataset reads: --task bfcl refuses them rather than silently ignoring them.
DATASET_ONLY = (
    "dataset",
    "dataset_seed",
    "dataset_path",
    "system_prompt",
    "no_system_prompt",
    "rewards",
    "split",
    "n",
    "temperature",
    "top_p",
    "backend",
    "seed",
)
MAX_NEW_TOKENS = {"dataset": 1024, "bfcl": 512}


class EvalParser(OneLineErrors, argparse.ArgumentParser):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = EvalParser(prog="gdpo eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    read_negative_numbers(parser)
    parser.add_argument(
        "--model",
        required=True,
        help="Hub id, local checkpoint or output_dir, LoRA adapter folder (its base model is loaded from "
        "adapter_config.json), or builtin:tiny",
    )
    parser.add_argument("--adapter", help="LoRA adapter folder to apply on top of --model")
    parser.add_argument(
        "--task",
        choices=TASKS,
        default="dataset",
        help="dataset (default): score --dataset's problems with --rewards; bfcl: one greedy completion per entry "
        "of BFCL's AST categories (--categories), prompted in the tool-calling training format and judged by "
        "bfcl-eval's own checker",
    )
    parser.add_argument(
        "--categories",
        nargs="+",
        choices=list(CATEGORIES),
        help=f"--task bfcl only: the BFCL categories to score (default: all of {' '.join(CATEGORIES)})",
    )
    parser.add_argument(
        "--dataset",
        default="openai/gsm8k",
        help="a data source (gdpo_trl.data.sources): 'gsm8k', 'sample' (shipped with the package), 'synthetic' "
        "(generated problems), 'warmstart' (the demo's held-out problems), a .json/.jsonl/.parquet file with "
        "question and answer columns, or a Hub id (default: openai/gsm8k); tool calling: 'toolcall' (the offline "
        "task's held-out requests), 'toolrl_sample' or 'toolrl' (with --dataset_path)",
    )
    parser.add_argument(
        "--dataset_path",
        help="where --dataset toolrl reads its rows: a .parquet/.jsonl/.json file, a dataset folder or a Hub id",
    )
    parser.add_argument(
        "--system_prompt",
        help="system message replacing the data source's in every prompt (GSM8K-style sources only): pass the "
        "recipe's system_prompt so the model is evaluated with the prompt it was trained on",
    )
    parser.add_argument(
        "--no_system_prompt",
        action="store_true",
        help="drop the data source's system message, so the model's chat template applies its own default (as a "
        "released instruct model is used out of the box)",
    )
    parser.add_argument(
        "--dataset_seed",
        type=int,
        help="generator seed of 'synthetic', 'warmstart' and 'toolcall' (default: 1234 for any split but train, 0 for "
        "train)",
    )
    parser.add_argument(
        "--rewards",
        nargs="+",
        help="reward functions to score with: registry names or dotted paths, as gdpo train's reward_funcs "
        f"(default: {' '.join(DEFAULT_REWARDS)}; {' '.join(TOOL_REWARDS)} for the tool-calling sources)",
    )
    parser.add_argument("--split", default="test", help="dataset split (default: test; ignored for single files)")
    parser.add_argument("--limit", type=int, help="evaluate only the first N problems")
    parser.add_argument("--n", type=int, default=1, help="completions per problem; pass@1 averages them (default: 1)")
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sampling temperature; 0 (default) is greedy decoding, which needs --n 1. The GDPO paper evaluates "
        "with --temperature 0.6 --top_p 0.95",
    )
    parser.add_argument("--top_p", type=float, default=1.0, help="nucleus sampling top-p (default: 1.0)")
    parser.add_argument(
        "--max_new_tokens", type=int, help="completion length limit (default: 1024; 512 for --task bfcl)"
    )
    parser.add_argument("--batch_size", type=int, default=16, help="prompts per generate call (default: 16)")
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="auto (default) uses vLLM when it is installed and a GPU is present, else transformers",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    parser.add_argument("--output_dir", help="where to write summary.json and completions.jsonl")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier result in --output_dir (refused without it)"
    )
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default="auto",
        help="model dtype; auto (default) keeps the checkpoint's on GPU and uses float32 on CPU",
    )
    return parser


@cli_errors("gdpo eval")
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    task = args.task
    if args.max_new_tokens is None:
        args.max_new_tokens = MAX_NEW_TOKENS[task]
    if task == "bfcl":
        print(format_report(evaluate_bfcl_from_args(parser, args)))
        return 0
    if args.categories is not None:
        parser.error("--categories only applies to --task bfcl")
    options = {key: value for key, value in vars(args).items() if key not in ("task", "categories", "overwrite")}
    options["output_dir"] = plan_output_dir(options, args.overwrite)  # names every setting; keeps earlier results
    check_outside_runs(options["output_dir"], "gdpo eval --output_dir")  # its own folder, never a run's
    # An EvaluationInputError (a mistake in the arguments, or an unreachable Hub) becomes one line via @cli_errors.
    with replacing_results(args.overwrite):
        print(format_summary(evaluate(**options)))
    return 0


def evaluate_bfcl_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """Run :func:`gdpo_trl.eval.bfcl.evaluate_bfcl` with gdpo eval's arguments, refusing the ones it does not read."""
    given = [name for name in DATASET_ONLY if getattr(args, name) != parser.get_default(name)]
    if given:
        flags = ", ".join(f"--{name}" for name in given)
        parser.error(f"{flags} only appl{'ies' if len(given) == 1 else 'y'} to --task dataset, not to --task bfcl")
    if args.limit is not None and args.limit < 1:
        parser.error(f"limit must be >= 1, got {args.limit}")
    if args.output_dir is not None:
        refuse_earlier_result(args.output_dir, args.overwrite, BFCL_RESULT_FILES)
        check_outside_runs(args.output_dir, "gdpo eval --output_dir")
    return evaluate_bfcl(
        args.model,
        categories=args.categories or list(CATEGORIES),
        limit=args.limit,
        adapter=args.adapter,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        dtype=args.dtype,
        output_dir=args.output_dir,
    )


if __name__ == "__main__":
    sys.exit(main())
