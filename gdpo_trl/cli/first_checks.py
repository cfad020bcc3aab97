"""``gdpo train``'s first answer: the mistakes its command line and recipe show, found before TRL is imported.

Importing torch and TRL takes seconds (more on a busy machine); a misspelt flag, a value of the wrong type, an
unknown reward, a batch that does not divide over the processes or a ``bf16`` recipe on a CPU-only machine is
answered in a fraction of one, from the field table (:mod:`gdpo_trl.recipe.field_table`,
:mod:`gdpo_trl.recipe.early_parse`, :mod:`gdpo_trl.recipe.early_checks`). The full parser runs afterwards as before
and checks everything again; where the table does not match the installed libraries, it alone answers.
"""

from __future__ import annotations

from gdpo_trl.cli.launch_args import partition_args
from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.early_checks import check_early
from gdpo_trl.recipe.early_parse import early_parse
from gdpo_trl.recipe.field_table import load_table
from gdpo_trl.recipe.recipe_file import recipe_argument


def split_launch(argv: list[str], table: dict) -> tuple[list[str], list[str]]:
    """``(recipe flags, accelerate options)`` by the launcher's rule (:func:`gdpo_trl.cli.launch.partition_args`),
    with the option sets read from the table instead of TRL's dataclasses and accelerate's parser."""
    training = {option for row in table["fields"] for option in row["options"]}
    recipe, launch = partition_args(argv, training, table["accelerate_options"])
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


def check_first(argv: list[str], config: dict | None) -> int | None:
    """Raise the first mistake ``argv`` and the recipe's contents ``config`` show; return the run's process count
    (None when not known before accelerate starts)."""
    table = load_table()
    if table is None:
        return None
    recipe_argv, launch = split_launch(argv, table)
    processes = launch_processes(launch)
    try:
        early = early_parse(recipe_argv, config, recipe_argument(recipe_argv), table)
        check_early(table["fields"], early.values, processes)
    except InputError:
        raise
    except Exception:  # a value of a shape these checks do not expect: the full parser judges it
        pass
    return processes
