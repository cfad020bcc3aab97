"""``gdpo train``'s flags and recipe read from the field table, before torch, transformers and TRL are imported.

The full parser (:func:`gdpo_trl.recipe.arguments.parse_args`, TrlParser over three dataclasses) needs TRL, whose
import takes seconds; a misspelt flag or a value of the wrong type should not wait for it. This reads the command
line and the recipe as that parser does, from :mod:`gdpo_trl.recipe.field_table`, and raises the same one-line
errors: an unknown key or flag with the closest field names, a flag without its value, a value its field's type does
not read (``--max_steps two``), a choice that is not one. It only refuses what the full parser refuses; anything it
cannot judge (a field of another type, an unusual spelling) it leaves to that parser, which runs afterwards anyway.
"""

from __future__ import annotations

import difflib
from argparse import Action, ArgumentTypeError
from dataclasses import dataclass, field

from gdpo_trl.core.argparsing import NEGATIVE_NUMBER, reword
from gdpo_trl.core.errors import InputError, input_stage
from gdpo_trl.recipe.recipe_file import RECIPE_SUFFIXES
from gdpo_trl.recipe.recipe_values import read_values

PROG = "gdpo train"


def string_to_bool(value):
    """transformers' reading of a boolean flag (``hf_argparser.string_to_bool``), same words and message."""
    if isinstance(value, bool):
        return value
    if value.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if value.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise ArgumentTypeError(
        f"Truthy value expected: got {value} but expected one of yes/no, true/false, t/f, y/n, 1/0 (case insensitive)."
    )


TYPES = {"int": int, "float": float, "bool": string_to_bool}


@dataclass
class EarlyArgs:
    """What the command line and recipe set: every field's value (defaults, then the recipe, then flags) and the
    fields the user gave."""

    values: dict
    given: set = field(default_factory=set)


def is_option(token: str) -> bool:
    """Whether argparse reads ``token`` as an option (``-1e-3`` is a value: see :mod:`gdpo_trl.core.argparsing`)."""
    return token.startswith("-") and len(token) > 1 and not NEGATIVE_NUMBER.match(token)


def check_unknown(yaml_keys: list[str], cli_args: list[str], known) -> None:
    """Raise a ``ValueError`` naming unknown YAML keys and command-line arguments, with close field names."""
    if not yaml_keys and not cli_args:
        return
    known = sorted(known)
    problems = []
    for label, names in (("YAML key", yaml_keys), ("command-line argument", cli_args)):
        for name in names:
            close = difflib.get_close_matches(name.lstrip("-").replace("-", "_"), known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            if name.endswith(RECIPE_SUFFIXES) and not name.startswith("-"):
                hint = f" (did you mean `--config {name}`?)"
            problems.append(f"unknown {label} {name.lstrip('-') if label == 'YAML key' else name!r}{hint}")
    raise ValueError("; ".join(problems) + ". Run `gdpo train --help-all` for every field.")


def usage_error(row: dict, message: str) -> InputError:
    """argparse's message for the field of ``row``, as the full parser words it (:class:`OneLineErrors`)."""
    options = "/".join(row["options"])
    return InputError(f"{reword(f'argument {options}: {message}')} (see {PROG} --help)")


def convert(row: dict, value: str):
    """``value`` read as the flag of ``row`` reads it, or argparse's error for it."""
    kind = row["kind"]
    if kind in ("int", "float"):
        try:
            value = TYPES[kind](value)
        except ValueError:
            raise usage_error(row, f"invalid {kind} value: {value!r}") from None
    elif kind == "bool":
        try:
            value = string_to_bool(value)
        except ArgumentTypeError as error:
            raise usage_error(row, str(error)) from None
    if row["choices"] is not None and kind in ("choice", "str") and str(value) not in row["choices"]:
        choices = ", ".join(map(repr, row["choices"]))
        raise usage_error(row, f"invalid choice: {value!r} (choose from {choices})")
    return value


def parse_flags(argv: list[str], rows: list[dict]) -> tuple[dict, list[str]]:
    """``{field: value}`` of the flags in ``argv`` (no ``--config``), and the unknown arguments (as the full parser
    reports them: the unknown options, else the stray values)."""
    by_option = {option: row for row in rows for option in row["options"]}
    values, unknown, strays, i = {}, [], [], 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not is_option(token):
            strays.append(token)
            continue
        name, equals, inline = token.partition("=")
        row = by_option.get(name if equals else token)
        if row is None:
            unknown.append(token)
            continue
        if row["action"] == "store_false":
            values[row["dest"]] = False
            continue
        following = []
        while i < len(argv) and not is_option(argv[i]):
            following.append(argv[i])
            i += 1
        items = [inline] if equals else following
        nargs = row["nargs"]
        if nargs in ("+", "*"):
            if not items and nargs == "+":
                raise usage_error(row, "expected at least one argument")
            values[row["dest"]] = [convert(row, item) for item in items]
            strays += following if equals else []
            continue
        if not items:
            if nargs != "?":
                raise usage_error(row, "expected one argument")
            values[row["dest"]] = row["const"]
            continue
        values[row["dest"]] = convert(row, items[0])
        strays += following[1:] if not equals else following
    return values, [a for a in unknown if a.startswith("-")] or unknown or strays


def table_actions(rows: list[dict]) -> list[Action]:
    """Stand-ins for the full parser's actions, for :func:`gdpo_trl.recipe.recipe_values.read_values`."""
    types = {**TYPES, "str": str}
    return [
        Action(
            row["options"], row["dest"], nargs=0 if row["action"] == "store_false" else row["nargs"],
            default=row["default"], type=None if row["action"] == "store_false" else types.get(row["kind"], None),
            choices=row["choices"],
        )
        for row in rows
    ]  # fmt: skip


def early_parse(argv: list[str], config: dict | None, recipe: str | None, table: dict) -> EarlyArgs:
    """Read ``argv`` (the recipe flags, ``--config`` included) and the recipe's contents ``config`` as the full parser
    would, raising its errors for unknown names and unreadable values."""
    rows = table["fields"]
    argv = list(argv)
    if "--config" in argv:
        i = argv.index("--config")
        del argv[i : i + 2]
    config = {key: value for key, value in (config or {}).items() if key != "env"}
    dests = {row["dest"] for row in rows}
    read = read_values(table_actions(rows), config, recipe) if config else {}
    flags, cli_unknown = parse_flags(argv, rows)
    with input_stage("recipe"):
        check_unknown([key for key in config if key not in dests], cli_unknown, dests)
    values = {row["dest"]: row["default"] for row in rows if row["action"] == "store"}
    values.update({key: value for key, value in read.items() if key in dests})
    values.update(flags)
    return EarlyArgs(values, given=set(read) & dests | set(flags))
