"""The recipe's fields and ``accelerate launch``'s options as a table, read without importing torch, transformers or TRL.

``gdpo train`` needs the names, types, choices and defaults of its three dataclasses (and of accelerate's options) to
answer a misspelt flag, a value of the wrong type or a batch that does not divide, but the dataclasses live in TRL,
whose import takes seconds. So the parser's own view of them is written once to ``fields.json`` beside this file,
and :func:`load_table` reads that in milliseconds. ``tests/recipe/test_first_checks.py`` rebuilds the table from the
live classes and fails when the two differ; after changing a field, write it again with::

    python -m gdpo_trl.recipe.field_table

Each recipe field is a row: ``dest``, its ``options`` (``--max_steps``, ``--max-steps``), ``kind`` (``int``,
``float``, ``bool``, ``str``, ``choice`` or ``other``: a type checked only by the full parser), ``nargs``,
``const`` (a bare ``--bf16`` reads as true), ``choices``, ``default``, ``help``, ``group`` (the dataclass), and
``action`` (``store``, or ``store_false``: the ``--no_<field>`` flag of a boolean field that defaults to true).

The table holds the ``fingerprint`` of what it was built from (TRL's, transformers' and accelerate's versions and
the source of ``GDPOConfig`` and ``GDPOScriptArguments``). Where that differs, as with another transformers version,
the committed table is not used: :func:`load_table` returns one built here before (the full parser writes it, see
:func:`remember_table`) or None, and ``gdpo train`` then leaves every check to the full parser.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path

TABLE = Path(__file__).with_name("fields.json")
PACKAGE = Path(__file__).resolve().parents[1]
SOURCES = ("core/config.py", "recipe/arguments.py")  # where gdpo-trl declares its fields
LIBRARIES = ("trl", "transformers", "accelerate")
KINDS = {"int": "int", "float": "float", "str": "str", "string_to_bool": "bool", "<lambda>": "choice"}


def plain(value):
    """``value`` as JSON holds it: enums by value, tuples as lists, anything else JSON cannot hold as its ``str``."""
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def library_version(name: str) -> str:
    """The installed version of ``name`` from its ``.dist-info`` folder name, without importing it (importlib.metadata
    takes tens of milliseconds to scan every distribution)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = sorted(site.glob(f"{name}-*.dist-info"))
    return found[-1].name[len(name) + 1 : -len(".dist-info")] if found else "unknown"


def fingerprint() -> str:
    """What the table depends on, hashed: the libraries' versions and gdpo-trl's field declarations."""
    digest = hashlib.sha256()
    for name in LIBRARIES:
        digest.update(f"{name}={library_version(name)};".encode())
    for source in SOURCES:
        digest.update((PACKAGE / source).read_bytes())
    return digest.hexdigest()[:16]


def build_table() -> dict:
    """The table from the live dataclasses and accelerate's parser (imports TRL and accelerate: seconds)."""
    from dataclasses import fields

    from accelerate.commands.launch import launch_command_parser
    from trl import GRPOConfig, ScriptArguments

    from gdpo_trl.recipe.arguments import DATACLASSES, RecipeParser

    group = {f.name: cls.__name__ for cls in reversed(DATACLASSES) for f in fields(cls)}
    rows = []
    for action in RecipeParser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        kind = "bool" if action.nargs == 0 else KINDS.get(getattr(action.type, "__name__", "str"), "other")
        rows.append(
            {
                "dest": action.dest,
                "options": list(action.option_strings),
                "kind": "choice" if action.choices is not None and kind == "str" else kind,
                "nargs": action.nargs,
                "const": plain(action.const),
                "choices": None if action.choices is None else [str(c) for c in action.choices],
                "default": plain(action.default),
                "help": action.help,
                "group": group[action.dest],
                "action": "store_false" if type(action).__name__ == "_StoreFalseAction" else "store",
            }
        )
    gdpo_config, script_arguments = DATACLASSES[1], DATACLASSES[0]
    launch = launch_command_parser()._option_string_actions  # argparse keeps no public list of them
    return {
        "fingerprint": fingerprint(),
        "fields": rows,
        "gdpo_fields": [f.name for f in fields(gdpo_config) if f.name not in {g.name for g in fields(GRPOConfig)}],
        "script_fields": [
            f.name for f in fields(script_arguments) if f.name not in {g.name for g in fields(ScriptArguments)}
        ],
        "accelerate_options": {
            name: action.nargs != 0 for name, action in sorted(launch.items()) if name not in ("-h", "--help", "-m")
        },
    }


def cached_table(key: str) -> Path:
    """Where a table built on this machine for fingerprint ``key`` is kept."""
    cache = os.environ.get("GDPO_TRL_CACHE") or Path.home() / ".cache" / "gdpo_trl"
    return Path(cache) / f"fields-{key}.json"


@functools.cache
def load_table() -> dict | None:
    """The committed table when its fingerprint matches, else one built here before, else None (milliseconds)."""
    key = fingerprint()
    for path in (TABLE, cached_table(key)):
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if table.get("fingerprint") == key:
            return table
    return None


def remember_table() -> None:
    """Build and keep the table for this machine when neither the committed nor a kept one matches; called where
    TRL is imported already (the build then takes a fraction of a second). Best effort: a cache that cannot be
    written only means the next run is checked by the full parser again."""
    if load_table() is not None:
        return
    try:
        path = cached_table(fingerprint())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(build_table(), ensure_ascii=False), encoding="utf-8")
    except OSError:
        pass


def write_table() -> None:
    """Write the committed table (``python -m gdpo_trl.recipe.field_table``)."""
    TABLE.write_text(json.dumps(build_table(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_table()
    print(f"wrote {TABLE}")
