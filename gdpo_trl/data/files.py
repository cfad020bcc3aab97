"""Reading one local data file (``.json``, ``.jsonl``, ``.parquet``) for any loader, with errors that name the file.

``datasets`` reports an empty file with a ``StopIteration``, a line that is not JSON without its number, and text
that is not UTF-8 without the file: each becomes one :class:`~gdpo_trl.core.errors.InputError` naming the file
(and the line where there is one) before anything trains.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError

if TYPE_CHECKING:
    import datasets

BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def check_jsonl(path: Path, what: str = "data") -> None:
    """Fail naming the file and line for an empty file, text that is not UTF-8, or a line that is not a JSON
    object (``datasets`` names neither)."""
    rows = 0
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise InputError(
                        f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno})"
                    ) from None
                if not isinstance(row, dict):
                    raise InputError(f"{path}:{number}: each line must be a JSON object, got {type(row).__name__}")
                rows += 1
    except UnicodeDecodeError as error:
        raise InputError(
            f"{what} file {path} is not UTF-8 text (byte {error.start}: {error.reason}); save it as UTF-8."
        ) from None
    if rows == 0:
        raise InputError(f"{what} file {path} is empty: it needs one JSON object per line.")


def load_local_file(path: Path, what: str = "data") -> datasets.Dataset:
    """All rows of a local ``.json``/``.jsonl``/``.parquet`` file (a single file has no splits)."""
    import datasets

    if not path.exists():
        raise FileNotFoundError(f"{what} file not found: {path}")
    builder = BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise InputError(f"unsupported {what} file type {path.suffix!r} for {path}; use one of {sorted(BUILDERS)}")
    if path.suffix.lower() == ".jsonl":
        check_jsonl(path, what)
    elif path.stat().st_size == 0:
        raise InputError(f"{what} file {path} is empty.")
    try:
        return datasets.load_dataset(builder, data_files=str(path), split="train")
    except datasets.exceptions.DatasetGenerationError as error:
        cause = error.__cause__ or error
        raise InputError(f"cannot read {what} file {path}: {type(cause).__name__}: {cause}") from error
