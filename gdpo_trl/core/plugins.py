"""Plugins: ``builtin:`` model names and named data sources that other packages register with entry points.

gdpo-trl's own built-in models (:mod:`gdpo_trl.models`) and study tasks (:mod:`gdpo_trl.tasks`) are registered this
way: ``builtin:tiny``, ``builtin:warmstart`` and the ``synthetic``/``warmstart``/``toolcall`` data sources, in
gdpo-trl's own ``pyproject.toml``. Nothing below them imports them: a name is looked up here and its entry point loaded when first asked for. A third-party package
adds its own the same way, in its ``pyproject.toml``::

    [project.entry-points."gdpo_trl.models"]
    my-model = "my_pkg.models:build"        # build(name: str, seed: int) -> path that from_pretrained loads

    [project.entry-points."gdpo_trl.sources"]
    my-data = "my_pkg.data:SOURCE"          # a gdpo_trl.data.sources.Source

Reward functions need no entry point: a recipe names them by dotted path (see :mod:`gdpo_trl.rewards`).
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points

from gdpo_trl.core.errors import InputError

MODELS = "gdpo_trl.models"
SOURCES = "gdpo_trl.sources"
FORMATS = "gdpo_trl.model_formats"  # checkpoint files converted to a folder on first use: .gguf
BUILTIN_PREFIX = "builtin:"


@functools.cache
def registered(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group``, by name (read once per process)."""
    return {point.name: point for point in entry_points(group=group)}


def load_plugin(group: str, name: str):
    """The object entry point ``name`` of ``group`` refers to; ``KeyError`` when there is none. A plugin that fails
    to import (a missing dependency, a typo in its module) is named in one line with its entry point and package: it
    was a 55-line traceback from inside importlib."""
    point = registered(group)[name]
    try:
        return point.load()
    except Exception as error:  # noqa: BLE001 - any failure inside the plugin's own import
        package = f" of package {point.dist.name!r}" if getattr(point, "dist", None) else ""
        first_line = (str(error).strip().splitlines() or [""])[0]
        raise InputError(
            f"plugin {name!r} (entry point {group}: {point.value}{package}) failed to import: "
            f"{type(error).__name__}: {first_line}; fix or reinstall that package, or uninstall it."
        ) from error


def builtin_model_names() -> list[str]:
    return sorted(BUILTIN_PREFIX + name for name in registered(MODELS))


def resolve_model(name_or_path: str) -> str:
    """A loadable path for ``name_or_path``: ``builtin:NAME`` or ``builtin:NAME@SEED`` is built (or found in the cache)
    by the entry point that registered it; a file in a format of ``gdpo_trl.model_formats`` (a ``.gguf``) is converted
    by its entry point (a function of the path returning a folder, or None when the path is not in its format);
    anything else (a Hub id or a local path) is returned unchanged."""
    if not name_or_path.startswith(BUILTIN_PREFIX):
        for name in sorted(registered(FORMATS)):
            converted = load_plugin(FORMATS, name)(name_or_path)
            if converted is not None:
                return converted
        return name_or_path
    name, _, seed = name_or_path[len(BUILTIN_PREFIX) :].partition("@")
    if name not in registered(MODELS):
        choices = builtin_model_names() or ["none: is gdpo-trl installed (pip install -e .)?"]
        raise InputError(f"Unknown built-in model {name_or_path!r}: use one of {choices}, optionally with '@<seed>'.")
    if seed and not seed.isdigit():
        raise InputError(f"Built-in model {name_or_path!r}: the part after '@' is a seed, a whole number >= 0.")
    return str(load_plugin(MODELS, name)(name, int(seed or 0)))
