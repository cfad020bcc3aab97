"""The folders the wheel ships beside the code: ``recipes`` and ``accelerate_configs``.

In the repository they sit at the top (where a cloner looks for them); setup.py maps them into the package as
``gdpo_trl.recipes`` and ``gdpo_trl.accelerate_configs``, so an installed wheel and an editable install both reach
them by import name, from any folder. There is one copy of each file: the repository's.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from gdpo_trl.core.errors import InputError

FOLDERS = ("recipes", "accelerate_configs")


def shipped_folder(name: str) -> Path:
    """The installed folder ``name`` (one of :data:`FOLDERS`) as a path on disk."""
    if name not in FOLDERS:
        raise ValueError(f"no shipped folder {name!r}: choose from {FOLDERS}")
    # A regular package (it has an __init__.py) installed from a wheel or in editable mode is a real folder on disk,
    # which accelerate and PyYAML need: not a zip member.
    try:
        return Path(str(importlib.resources.files(f"gdpo_trl.{name}")))
    except ModuleNotFoundError:  # an editable install made before setup.py mapped the folders
        raise InputError(
            f"gdpo_trl.{name} is not installed: reinstall gdpo-trl (`make install`, or `pip install -e .` again)."
        ) from None
