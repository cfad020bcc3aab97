"""A model path that looks local but is not there is named as a missing folder, with the nearest one that exists:
``outputs/cpu-gpdo`` (for ``outputs/cpu-gdpo``) was read as a Hub id, and 23 s later the line suggested
``hf download outputs/cpu-gpdo`` and unsetting ``HF_HUB_OFFLINE``, which the recipe itself sets.

A name looks local when it starts with ``/``, ``./``, ``../`` or ``~``, has more than one ``/`` (a Hub id has one),
or its first part is a folder here (``outputs/``). Checked before any Hub lookup.
"""

from __future__ import annotations

import difflib
from pathlib import Path


def looks_local(name: str) -> bool:
    if name.startswith(("/", "./", "../", "~")) or name.count("/") > 1:
        return True
    first = name.split("/", 1)[0]
    return "/" in name and Path(first).is_dir()


def nearest_existing(path: Path) -> Path:
    """The deepest folder of ``path``'s parents that exists (the current folder at worst)."""
    for parent in path.parents:
        if parent.is_dir():
            return parent
    return Path(".")


def missing_folder_line(name: str, field: str = "model_name_or_path") -> str | None:
    """The one line for a local-looking ``name`` that is not a folder, else None."""
    path = Path(name).expanduser()
    if path.is_dir() or not looks_local(name):
        return None
    base = nearest_existing(path)
    missing = path.relative_to(base).parts[0] if path.is_relative_to(base) else path.name
    folders = sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    close = difflib.get_close_matches(missing, folders, n=1, cutoff=0.6)
    shown = str(base).rstrip("/") + "/"
    if close:
        hint = f"did you mean {str(base / close[0])!r}?"
    elif folders:
        more = f" and {len(folders) - 5} more" if len(folders) > 5 else ""
        hint = f"it holds {', '.join(folders[:5])}{more}."
    else:
        hint = "it holds no folder."
    return (
        f"{field} {name!r} is not a folder: {shown} has no {missing!r}; {hint} Give a saved model's folder "
        "(an output_dir or checkpoint-N) or a Hub id."
    )
