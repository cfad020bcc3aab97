"""``gdpo train``'s first answer: the mistakes its command line and recipe show, found before TRL is imported.

Importing torch and TRL takes seconds (more on a busy machine); a misspelt flag, a value of the wrong type, an
unknown reward, a batch that does not divide over the processes or a ``bf16`` recipe on a CPU-only machine is
answered in a fraction of one, from the field table (:mod:`gdpo_trl.recipe.field_table`,
:mod:`gdpo_trl.recipe.early_parse`, :mod:`gdpo_trl.recipe.early_checks`). The full parser runs afterwards as before
and checks everything again; where the table does not match the installed libraries, it alone answers.
"""

from __future__ import annotations

from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.early_checks import check_early
from gdpo_trl.recipe.early_parse import early_parse
from gdpo_trl.recipe.field_table import load_table
from gdpo_trl.recipe.recipe_file import recipe_argument


def split_launch(argv: list[str], table: dict) -> tuple[list[str], list[str]]:
    """``(recipe flags, accelerate options)`` by the rule of :func:`gdpo_trl.cli.launch.split_launch_args`, from the
    table: a training field's flag goes to the recipe, any other option ``accelerate launch`` knows to accelerate."""
    training = {option for row in table["fields"] for option in row["options"]}
    accelerate = {**table["accelerate_options"], "--accelerate_config": True}
    recipe, launch, i = [], [], 0
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name in accelerate and name not in training:
            takes_value = accelerate[name] and "=" not in argv[i]
            if takes_value and (i + 1 == len(argv) or argv[i + 1].startswith("--")):
                raise InputError(f"{name} needs a value, e.g. {name} 2.")
            launch += argv[i : i + 1 + takes_value]
            i += 1 + takes_value
        else:
            recipe.append(argv[i])
            i += 1
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
