"""gdpo recipes: the training recipes shipped in the package, by name.

    gdpo recipes list                       # every recipe's name and what it runs
    gdpo recipes copy cpu/gdpo my.yaml      # a copy to edit; then: gdpo train --config my.yaml

``gdpo train --config NAME`` trains a shipped recipe as it is; copy one out to change it. A name is the recipe's
folder under the repository's ``recipes/`` (``recipes/cpu/gdpo/config.yaml`` is ``cpu/gdpo``).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.names import recipe_names, recipe_path
from gdpo_trl.storage.safe_write import whole_file


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gdpo recipes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    actions.add_parser("list", help="name every shipped recipe, with the first line of its comment")
    copy = actions.add_parser("copy", help="copy a shipped recipe to a file you can edit")
    copy.add_argument("name", help="recipe name, e.g. cpu/gdpo (see `gdpo recipes list`)")
    copy.add_argument("dest", type=Path, help="file to write (an existing folder gets DEST/config.yaml)")
    copy.add_argument("--force", action="store_true", help="overwrite DEST if it exists")
    return parser


def summary(path: Path) -> str:
    """What a recipe runs: its first comment line, up to the first colon, parenthesis or full stop."""
    first = next((line for line in path.read_text().splitlines() if line.strip()), "")
    return first.lstrip("# ").split(":")[0].split(" (")[0].split(". ")[0].strip() if first.startswith("#") else ""


def list_recipes() -> str:
    names = recipe_names()
    if not names:  # a broken install, not an empty catalogue: say so rather than print nothing
        raise InputError("no recipes found in the installed package gdpo_trl.recipes: reinstall gdpo-trl.")
    width = max(map(len, names))
    return "\n".join(f"{name:<{width}}  {summary(recipe_path(name))}" for name in names)


def copy_recipe(name: str, dest: Path, force: bool = False) -> Path:
    """Copy recipe ``name`` to ``dest`` (a file, or ``dest/config.yaml`` for a folder); returns the file written."""
    source = recipe_path(name)
    target = dest / source.name if dest.is_dir() else dest
    if target.exists() and not force:
        raise InputError(f"{target} already exists: choose another destination, or pass --force to overwrite it.")
    # Whole or not at all; a read-only or full target is one line naming it (was a 22-line OSError traceback).
    with whole_file(target, "gdpo recipes copy") as partial:
        shutil.copyfile(source, partial)
    return target


@cli_errors("gdpo recipes")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.action == "list":
        print(list_recipes())
    else:
        target = copy_recipe(args.name, args.dest, args.force)
        print(f"Copied {args.name} to {target}. Edit it, then: gdpo train --config {target}")
    return 0
