"""``gdpo train --help``: the usage, the fields GDPO adds and the most used ones, then the recipe and accelerate
options, ``--debug`` and two examples, read from the field table (:mod:`gdpo_trl.recipe.field_table`) so that it
answers at once. ``gdpo train --help-all``: the same options and examples, then every recipe field grouped by the
dataclass that holds it (TRL's parser: seconds)."""

from __future__ import annotations

import argparse
import os
import re
import sys

USAGE = "gdpo train --config RECIPE [--FIELD VALUE ...] [ACCELERATE OPTIONS] [--debug]"
SUMMARY = """\
Train a model with GDPO (or GRPO) from a TRL-style YAML recipe. Flags set the recipe's fields and win over the file.
The fields GDPO adds and the most used ones follow; `gdpo train --help-all` lists every field."""
# The most used fields of the recipe's three dataclasses, in the order a recipe gives them.
MOST_USED = (
    "model_name_or_path", "dataset_name", "reward_funcs", "reward_weights", "num_generations",
    "per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length", "temperature", "beta",
    "learning_rate", "max_steps", "use_peft", "use_vllm", "use_cpu", "bf16", "output_dir", "logging_steps",
    "save_steps", "report_to", "seed", "resume_from_checkpoint", "push_to_hub",
)  # fmt: skip
TAIL = """\
recipe, launch and help:
  --config RECIPE       the recipe: a YAML file of `field: value` lines, or a shipped recipe's name (cpu/gdpo,
                        Qwen2.5-1.5B-Instruct/gdpo, ...: `gdpo recipes list`; `gdpo recipes copy` to edit one)
  ACCELERATE OPTIONS    --accelerate_config NAME_OR_FILE (ddp, zero2, zero3, fsdp2, single_gpu, or a file),
                        --num_processes N, --num_machines N, --machine_rank R, --main_process_ip IP,
                        --main_process_port PORT, or any other `accelerate launch` option: gdpo train checks the
                        recipe, then starts the processes itself
  --debug               show the traceback of an input error too (or set GDPO_TRL_DEBUG=1)
  -h, --help            show this message and exit
  --help-all            every field: TRL's GRPOConfig, transformers' TrainingArguments and TRL's ModelConfig

examples:
  gdpo train --config recipes/cpu/gdpo/config.yaml --max_steps 2 --output_dir outputs/cpu-gdpo-2steps
  gdpo train --config recipes/cpu/gdpo/config.yaml --num_processes 2 --output_dir outputs/cpu-gdpo-2proc

An input error prints one line `gdpo train: error: ...` and exits with status 2."""
INTRO = f"{SUMMARY.splitlines()[0]}\n\n{TAIL} Every field follows, by group."

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


def metavar(row: dict) -> str:
    """What the flag of ``row`` takes, in a word (repeated for a list)."""
    if row["choices"]:
        return "{" + ",".join(row["choices"]) + "}"
    word = {"int": "INT", "float": "FLOAT", "bool": "true|false"}.get(row["kind"], "VALUE")
    return f"{word} [{word} ...]" if row["nargs"] in ("+", "*") else word


def first_sentence(text: str | None) -> str:
    """The first sentence of a field's help (``--help-all`` has the rest)."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z\[`(])", (text or "").strip(), maxsplit=1)[0]


def short_help(table: dict) -> str:
    """``gdpo train --help``: usage, the fields GDPO adds, the most used fields, then the recipe and launch options
    and a pointer to ``--help-all``. From the field table: no TRL import, so it answers at once."""
    rows = {row["dest"]: row for row in table["fields"] if row["action"] == "store"}
    parser = argparse.ArgumentParser(
        prog="gdpo train", usage=USAGE, description=SUMMARY, epilog=TAIL, add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    gdpo_fields = ["multi_objective_aggregation", *table["gdpo_fields"]]
    for title, names in (
        ("GDPO's fields (GDPOConfig)", gdpo_fields),
        ("most used fields", [name for name in MOST_USED if name not in gdpo_fields]),
    ):
        group = parser.add_argument_group(title)
        for name in names:
            if name in rows:
                group.add_argument(f"--{name}", metavar=metavar(rows[name]), help=first_sentence(rows[name]["help"]))
    return parser.format_help()


def answer_help(argv: list[str]) -> bool:
    """Print the help and say so when ``argv`` asks for it: ``-h``/``--help`` the short one (the full one where the
    field table does not fit the installed libraries), ``--help-all`` every field."""
    from gdpo_trl.recipe.field_table import load_table

    asks = {"-h", "--help", "--help-all"} & set(argv)
    if not asks:
        return False
    table = None if "--help-all" in asks else load_table()
    try:
        print(train_help() if table is None else short_help(table), flush=True)
    except BrokenPipeError:  # `gdpo train --help | head`: the reader has seen enough (Python's documented remedy)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True
