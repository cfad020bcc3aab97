"""Recipes by name: ``cpu/gdpo`` is ``recipes/cpu/gdpo/config.yaml`` as shipped in the package.

``gdpo train --config NAME``, ``gdpo compare --recipe NAME`` and ``gdpo recipes copy NAME DEST`` take a name or a
file. A file that exists always wins; otherwise the name is looked up among the shipped recipes, which also accepts
the repository path the docs use (``recipes/cpu/gdpo/config.yaml``), so documented commands work from any folder.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.core.shipped import shipped_folder

RECIPE_FILE = "config.yaml"


def recipe_names() -> list[str]:
    """Every shipped recipe's name (``cpu/gdpo``, ``Qwen2.5-1.5B-Instruct/gdpo``, ...), sorted."""
    root = shipped_folder("recipes")
    return sorted(path.parent.relative_to(root).as_posix() for path in root.rglob(RECIPE_FILE))


def recipe_path(name: str) -> Path:
    """The shipped recipe file for ``name``; an :class:`InputError` naming close names when there is none."""
    key = name.strip("/").removeprefix("recipes/").removesuffix(RECIPE_FILE).strip("/")
    path = shipped_folder("recipes") / key / RECIPE_FILE
    if key and path.is_file():
        return path
    names = recipe_names()
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise InputError(
        f"Recipe {name!r} not found: it is neither a file nor a shipped recipe name ({hint}`gdpo recipes list` "
        f"names all {len(names)})."
    )


def resolve_recipe(value: str) -> str:
    """A recipe argument as a path: the file (or folder) if it exists, else the shipped recipe of that name."""
    return value if Path(value).exists() else str(recipe_path(value))


def is_recipe(value: str) -> bool:
    """Whether ``value`` is a file or a shipped recipe's name."""
    try:
        return Path(resolve_recipe(value)).is_file()
    except InputError:
        return False


def resolve_config_flag(argv: list[str]) -> list[str]:
    """``argv`` with ``--config NAME`` turned into the recipe's file path (TrlParser reads ``--config FILE`` only)."""
    argv = list(argv)
    if "--config" in argv[:-1] and not argv[(i := argv.index("--config")) + 1].startswith("--"):
        argv[i + 1] = resolve_recipe(argv[i + 1])
    return argv


def config_file(argv: list[str]) -> str | None:
    """The recipe file ``--config`` names in ``argv`` (resolved as :func:`resolve_config_flag` does), or ``None``."""
    argv = resolve_config_flag(argv)
    return argv[argv.index("--config") + 1] if "--config" in argv[:-1] else None
