"""The recipe file of ``--config``, read and checked before torch and TRL are imported (seconds sooner).

Every problem is an :class:`~gdpo_trl.core.errors.InputError` naming the file (and the line where there is one) and the
fix: ``--config`` without a file, a file that is missing, a folder, unreadable, binary or not UTF-8, YAML that does
not parse, a document that is not a mapping, and a key written twice (PyYAML keeps the last one without a word).
Only PyYAML is imported here. ``gdpo train`` reads its recipe once (:func:`load_recipe`): the early checks, the full
parser and the model card all take the :class:`Recipe` read here.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.names import is_recipe, resolve_recipe

CONFIG_FLAG = "--config"
EXAMPLE = "gdpo train --config recipes/cpu/gdpo/config.yaml"
RECIPE_SUFFIXES = (".yaml", ".yml")


def recipe_argument(argv: list[str]) -> str | None:
    """The value of ``--config`` in ``argv`` (None when there is no ``--config``); an error when it has none."""
    if CONFIG_FLAG not in argv:
        return None
    i = argv.index(CONFIG_FLAG)
    if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
        raise InputError(f"--config needs a recipe file: {EXAMPLE}")
    return resolve_recipe(argv[i + 1])  # a file (or folder: read_recipe says so), else a shipped recipe's name


def check_bare_recipe(argv: list[str]) -> None:
    """``gdpo train recipe.yaml``: a recipe given without ``--config`` (argparse would call it an unknown argument)."""
    if argv and not argv[0].startswith("-") and (argv[0].endswith(RECIPE_SUFFIXES) or is_recipe(argv[0])):
        raise InputError(f"{argv[0]!r} is not an option: did you mean `--config {argv[0]}`?")


@dataclass(frozen=True)
class Recipe:
    """A recipe file as read once: where it is, its text (the model card quotes it) and its values."""

    path: str
    text: str
    values: dict


def read_recipe(path: str | Path) -> dict:
    """The recipe at ``path`` as a dict (``{}`` for an empty file), or an InputError naming the file and the fix."""
    return load_recipe(path).values


def load_recipe(path: str | Path) -> Recipe:
    """The recipe at ``path``, read and checked (see the module's docstring); the file is opened once, here."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise InputError(f"Recipe {str(path)!r} not found: pass --config with a YAML file, e.g. {EXAMPLE}.")
    if path.is_dir():
        raise InputError(f"recipe {path} is a folder: pass --config with the YAML file inside it (config.yaml).")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"recipe {path}: cannot be read ({error.strerror}): check its permissions.") from None
    if b"\0" in data:
        raise InputError(f"recipe {path}: is a binary file, not YAML text: pass --config with a .yaml recipe.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(
            f"recipe {path}:{line}: is not UTF-8 text (byte 0x{data[error.start]:02x}): save it as UTF-8."
        ) from None
    try:
        config = yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader subclass
    except _DuplicateKey as error:
        raise InputError(
            f"recipe {path}:{error.line}: key {error.key!r} appears twice (first on line {error.first}): keep one."
        ) from None
    except yaml.YAMLError as error:
        raise InputError(f"recipe {yaml_problem(path, error)}") from None
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise InputError(f"recipe {path}: must be a mapping of field: value, got a {type(config).__name__}.")
    check_env_block(config.get("env"), path)
    return Recipe(str(path), text, config)


def check_env_block(env, path: Path) -> None:
    """TRL's parser exports ``env:`` with ``str(value)``: a list or mapping became a variable such as ``"[1, 2]"``
    without a word, and ``env:`` written as a list fails there without naming the file."""
    if env is None:
        return
    if not isinstance(env, dict):
        raise InputError(
            f'recipe {path}: env: must be a mapping of VARIABLE: value (e.g. `HF_HUB_OFFLINE: "1"`), got a '
            f"{type(env).__name__}."
        )
    for key, value in env.items():
        if value is None or isinstance(value, (list, dict)):
            raise InputError(
                f"recipe {path}: env: {key}: {value!r} is not one value; an environment variable holds a string or "
                f'a number, e.g. {key}: "1".'
            )


def yaml_problem(path: str | Path, error) -> str:
    """``<path>:<line>:<column>: YAML syntax error: <problem>`` for a PyYAML error (which names no file)."""
    mark = getattr(error, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: YAML syntax error: {getattr(error, 'problem', None) or error}"


def recipe_of(argv: list[str]) -> Recipe | None:
    """The ``--config`` recipe of ``argv``, read and checked (:func:`load_recipe`); None without ``--config``."""
    recipe = recipe_argument(argv)
    return None if recipe is None else load_recipe(recipe)


class _DuplicateKey(Exception):
    def __init__(self, key, line: int, first: int):
        super().__init__(key)
        self.key, self.line, self.first = key, line, first


def _unique_key_loader():
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        """PyYAML's safe loader, refusing a mapping key written twice instead of keeping the last value."""

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if not isinstance(key, Hashable):
                    continue  # SafeLoader refuses it itself, with its line
                if key in seen:
                    raise _DuplicateKey(key, line, seen[key])
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader
