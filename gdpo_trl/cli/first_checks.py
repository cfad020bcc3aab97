"""``gdpo train``'s arguments, read once: the recipe file, the split between recipe flags and accelerate options, and
the mistakes both show, found before TRL is imported.

Importing torch and TRL takes seconds (more on a busy machine); a misspelt flag, a value of the wrong type, an
unknown reward, a batch that does not divide over the processes or a ``bf16`` recipe on a CPU-only machine is
answered in a fraction of one, from the field table (:mod:`gdpo_trl.recipe.field_table`,
:mod:`gdpo_trl.recipe.early_parse`, :mod:`gdpo_trl.recipe.early_checks`). What :func:`read_request` returns is all
the rest of ``gdpo train`` works from: the full parser takes the recipe read here instead of opening the file again,
and the launcher the options split here. Where the table does not match the installed libraries, the split uses
the live dataclasses and the full parser alone judges the values.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdpo_trl.cli.launch_args import partition_args
from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.early_checks import check_early
from gdpo_trl.recipe.early_parse import early_parse
from gdpo_trl.recipe.field_table import load_table
from gdpo_trl.recipe.recipe_file import Recipe, check_bare_recipe, recipe_of


@dataclass
class TrainRequest:
    """``gdpo train``'s arguments as read once: the command line as typed, the recipe's flags as typed, the
    accelerate options (``--accelerate_config`` resolved; empty: train in this process), the recipe
    file read and the number of processes (None when accelerate picks it)."""

    argv: list[str]
    recipe_argv: list[str]
    launch: list[str]
    recipe: Recipe | None
    processes: int | None


def split_launch(argv: list[str], table: dict | None) -> tuple[list[str], list[str]]:
    """``(recipe flags, accelerate options)`` by the launcher's rule (:func:`gdpo_trl.cli.launch_args.partition_args`),
    with the option sets read from the table, or from TRL's dataclasses and accelerate's parser without one."""
    if table is None:
        from gdpo_trl.cli.launch import live_option_sets  # imports TRL: only where the table does not fit

        training, accelerate = live_option_sets()
    else:
        training = {option for row in table["fields"] for option in row["options"]}
        accelerate = table["accelerate_options"]
    recipe, launch = partition_args(argv, training, accelerate)
    if not launch:
        return recipe, launch
    from gdpo_trl.cli.launch import resolve_accelerate_config  # sockets, subprocesses: only for a launch

    return recipe, resolve_accelerate_config(launch)


def launch_processes(launch: list[str]) -> int | None:
    """How many processes ``launch`` starts in all (``--num_processes``, else its accelerate config's), 1 without
    launch options; None where accelerate picks (one per GPU it finds) or the value is not a count."""
    if not launch:
        return 1
    from gdpo_trl.cli.launch import option_value, read_accelerate_config

    value = option_value(launch, "--num_processes")
    if value is None:
        value = read_accelerate_config(launch).get("num_processes")
    try:
        count = int(str(value))
    except ValueError:
        return None  # None, or not a number: check_launch_options names it
    return count if count >= 1 else None


def check_first(recipe_argv: list[str], recipe: Recipe | None, processes: int | None, table: dict) -> None:
    """Raise the first mistake the recipe flags and the recipe's contents show, for a run of ``processes``."""
    values, path = (None, None) if recipe is None else (recipe.values, recipe.path)
    try:
        early = early_parse(recipe_argv, values, path, table)
        check_early(table["fields"], early.values, processes)
    except InputError:
        raise
    except Exception:  # a value of a shape these checks do not expect: the full parser judges it
        pass


def no_recipe_error() -> InputError:
    """A run without ``--config``: refused as the usage says. Flags alone leave every other field at TRL's defaults
    (a learning rate of 1e-6, LoRA on the model type's default modules), which are no recipe's, without a word."""
    return InputError(
        "--config RECIPE is required (usage: gdpo train --config RECIPE [--FIELD VALUE ...]): a YAML file or a "
        "shipped recipe's name (gdpo recipes list), which flags then override; without one every field not given "
        "would take TRL's defaults (learning_rate 1e-06, LoRA on the model's default modules). Start from one: "
        "gdpo recipes copy cpu/gdpo my.yaml"
    )


def read_request(argv: list[str]) -> TrainRequest:
    """Read ``gdpo train``'s arguments once, raising the first mistake they show (help is answered before)."""
    check_bare_recipe(argv)
    recipe = recipe_of(argv)  # the one read of the recipe file
    if recipe is None:
        raise no_recipe_error()
    table = load_table()
    recipe_argv, launch = split_launch(argv, table)
    processes = launch_processes(launch)
    if table is not None:
        check_first(recipe_argv, recipe, processes, table)
    return TrainRequest(argv, recipe_argv, launch, recipe, processes)
