"""``gdpo train --help``: what the command takes (the recipe, accelerate's options, ``--debug``) and two examples
first, as ``trl grpo --help`` would put them, then every recipe field grouped by the dataclass that holds it."""

from __future__ import annotations

import argparse
import os
import sys

USAGE = "gdpo train --config RECIPE [--FIELD VALUE ...] [ACCELERATE OPTIONS] [--debug]"
INTRO = """\
Train a model with GDPO (or GRPO) from a TRL-style YAML recipe. Flags set the recipe's fields and win over the file.

  --config RECIPE       the recipe: a YAML file of `field: value` lines, or a shipped recipe's name (cpu/gdpo,
                        Qwen2.5-1.5B-Instruct/gdpo, ...: `gdpo recipes list`; `gdpo recipes copy` to edit one)
  ACCELERATE OPTIONS    --accelerate_config NAME_OR_FILE (ddp, zero2, zero3, fsdp2, single_gpu, or a file),
                        --num_processes N, --num_machines N, --machine_rank R, --main_process_ip IP,
                        --main_process_port PORT, or any other `accelerate launch` option: gdpo train checks the
                        recipe, then starts the processes itself
  --debug               show the traceback of an input error too (or set GDPO_TRL_DEBUG=1)
  -h, --help            show this message and exit

examples:
  gdpo train --config recipes/cpu/gdpo/config.yaml --max_steps 2 --output_dir outputs/cpu-gdpo-2steps
  gdpo train --config recipes/cpu/gdpo/config.yaml --num_processes 2 --output_dir outputs/cpu-gdpo-2proc

An input error prints one line `gdpo train: error: ...` and exits with status 2. The fields follow, by group."""

# Group titles by the dataclasses of gdpo_trl.recipe.arguments.DATACLASSES, in that order.
GROUP_TITLES = (
    "data and rewards (GDPOScriptArguments)",
    "training (GDPOConfig: TRL's GRPOConfig and transformers' TrainingArguments, plus GDPO's fields)",
    "model and LoRA (TRL's ModelConfig)",
)


def train_help() -> str:
    """The help text. Builds a parser of the recipe's dataclasses (imports TRL: seconds), used for help only."""
    from transformers import HfArgumentParser

    from gdpo_trl.recipe.arguments import DATACLASSES

    # HfArgumentParser puts a dataclass's fields in a group named by its `_argument_group_name` (its documented
    # way). A subclass per dataclass carries the name, so the real classes stay untouched.
    grouped = [
        type(cls.__name__, (cls,), {"_argument_group_name": title})
        for cls, title in zip(DATACLASSES, GROUP_TITLES, strict=True)
    ]
    parser = HfArgumentParser(
        grouped,
        prog="gdpo train",
        usage=USAGE,
        description=INTRO,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    return parser.format_help()


def answer_help(argv: list[str]) -> bool:
    """Print the help and say so when ``argv`` asks for it (``-h`` or ``--help``)."""
    if "-h" not in argv and "--help" not in argv:
        return False
    try:
        print(train_help(), flush=True)
    except BrokenPipeError:  # `gdpo train --help | head`: the reader has seen enough (Python's documented remedy)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True
