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


def load_local_folder(folder: Path, split: str, config: str | None = None, what: str = "data") -> datasets.Dataset:
    """Split ``split`` of a local dataset folder: one saved with ``save_to_disk``, a clone of a Hub dataset (its
    ``config``, e.g. GSM8K's ``main``, where the folder declares it), or a plain folder of ``.json``/``.jsonl``/
    ``.parquet`` files, with split names in the file or folder names (``train.jsonl``, ``test/``) or without (then
    read whole, as a single file is). ``load_dataset(folder, "main")`` failed on a plain folder with "BuilderConfig
    'main' not found. Available: ['default']" (issue 40)."""
    import datasets

    if (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file():
        saved = datasets.load_from_disk(str(folder))
        return _pick_split(saved, split, folder, what) if isinstance(saved, datasets.DatasetDict) else saved
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in BUILDERS and p.is_file())
    if not files:
        raise InputError(f"{what} folder {folder} holds no .json, .jsonl or .parquet file.")
    for path in files:
        if path.suffix.lower() == ".jsonl":
            check_jsonl(path, what)
    names = datasets.get_dataset_config_names(str(folder))
    try:
        built = datasets.load_dataset(str(folder), config if config in names else None)
    except (ValueError, datasets.exceptions.DatasetGenerationError) as error:
        cause = error.__cause__ or error
        raise InputError(f"cannot read {what} folder {folder}: {type(cause).__name__}: {cause}") from error
    return _pick_split(built, split, folder, what)


def _pick_split(splits, split: str, folder: Path, what: str):
    if split in splits:
        return splits[split]
    if list(splits) == ["train"]:  # no file or folder is named by a split: the folder is one set of rows
        return splits["train"]
    raise InputError(f"{what} folder {folder} has no split {split!r}: it has {sorted(splits)}.")
