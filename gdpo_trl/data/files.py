"""Reading one local data file (``.json``, ``.jsonl``, ``.parquet``) for any loader, with errors that name the file.

``datasets`` reports an empty file with a ``StopIteration``, a line that is not JSON without its number, and text
that is not UTF-8 without the file: each becomes one :class:`~gdpo_trl.core.errors.InputError` naming the file
(and the line where there is one) before anything trains.

Before a file is read whole it is checked for size (:data:`MAX_FILE_ENV`, default :data:`DEFAULT_MAX_FILE_MB` MB)
and a ``.jsonl`` for line length (:data:`MAX_LINE_ENV`, default :data:`DEFAULT_MAX_LINE_MB` MB), reading a block at a
time: a 5 GB junk file, or one without a newline, grew ``gdpo train`` to 8.8 GB until the OOM killer took it (and
the other jobs of a shared node). A folder mixing formats (``.jsonl`` beside ``.parquet``) is refused: ``datasets``
reads only the files of its most common format and drops the rest without a word.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError

if TYPE_CHECKING:
    import datasets

BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}
# The limits on what is read whole, in MB (10^6 bytes), and the variables that raise them.
MAX_FILE_ENV = "GDPO_TRL_MAX_DATA_MB"
MAX_LINE_ENV = "GDPO_TRL_MAX_LINE_MB"
DEFAULT_MAX_FILE_MB = 1000  # 250 times GSM8K's train file; the rows end up in memory as Python strings
DEFAULT_MAX_LINE_MB = 4  # a row of a million tokens or so: far past any model's positions
BLOCK = 1 << 20  # bytes read at a time while a .jsonl is checked


def limit_mb(variable: str, default: float) -> float:
    """The limit ``variable`` sets (a positive number of MB; ``inf`` for none), else ``default``."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise InputError(f"{variable}={text!r} is not a positive number of MB.")
    return value


def check_file_size(path: Path, what: str = "data", files: list[Path] | None = None) -> None:
    """Refuse a file (or a folder's ``files`` together) larger than :data:`MAX_FILE_ENV` MB before anything reads
    it."""
    limit = limit_mb(MAX_FILE_ENV, DEFAULT_MAX_FILE_MB)
    size = sum(p.stat().st_size for p in files) if files is not None else path.stat().st_size
    if size > limit * 1e6:
        kind = f"folder {path} holds {len(files)} data files of" if files is not None else f"file {path} is"
        raise InputError(
            f"{what} {kind} {size / 1e6:,.0f} MB, more than the {limit:g} MB read at most: check it is the "
            f"data you meant, or set {MAX_FILE_ENV} higher (reading it takes several times its size in memory)."
        )


def jsonl_lines(path: Path):
    """``(number, bytes)`` for each line of ``path``, read a block at a time; a line longer than
    :data:`MAX_LINE_ENV` MB is refused as soon as that many bytes are read, so memory stays bounded."""
    limit = limit_mb(MAX_LINE_ENV, DEFAULT_MAX_LINE_MB)
    most = limit * 1e6  # a float: GDPO_TRL_MAX_LINE_MB=inf (no limit) compares as well as any number of bytes
    number, pending, pending_size = 0, [], 0
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            *complete, rest = block.split(b"\n")
            for piece in complete:
                number += 1
                if pending_size + len(piece) > most:
                    break
                yield number, b"".join([*pending, piece])
                pending, pending_size = [], 0
            else:
                pending.append(rest)
                pending_size += len(rest)
                if pending_size <= most:
                    continue
                number += 1
            raise InputError(
                f"{path}:{number}: a line longer than {limit:g} MB (a file without newlines, or not JSON lines?): "
                f"one row is one line; set {MAX_LINE_ENV} higher if the rows really are this long."
            )
    if pending_size:
        yield number + 1, b"".join(pending)


def check_jsonl(path: Path, what: str = "data") -> None:
    """Fail naming the file and line for an empty file, text that is not UTF-8, a line that is not a JSON
    object (``datasets`` names neither), a file or line over the limits."""
    check_file_size(path, what)
    rows = 0
    for number, raw in jsonl_lines(path):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"{what} file {path} is not UTF-8 text (line {number}, byte {error.start}: {error.reason}); save it "
                "as UTF-8."
            ) from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number}: each line must be a JSON object, got {type(row).__name__}")
        rows += 1
    if rows == 0:
        raise InputError(f"{what} file {path} is empty: it needs one JSON object per line.")


def check_data_file(path: Path, what: str = "data") -> None:
    """The checks of one file before ``datasets`` reads it: :func:`check_jsonl` for a ``.jsonl``, the size of any,
    the length of a ``.csv``'s lines (pyarrow grows its block to hold the longest)."""
    if path.suffix.lower() == ".jsonl":
        check_jsonl(path, what)
        return
    check_file_size(path, what)
    if path.suffix.lower() == ".csv":
        for _ in jsonl_lines(path):  # a block at a time: the first line over the limit is refused
            pass


def check_one_format(files: list[Path], folder: Path, what: str = "data") -> None:
    """Refuse a folder whose data files are of several formats: ``datasets`` reads the most common one's only."""
    kinds: dict[str, list[Path]] = {}
    for path in files:
        kinds.setdefault(BUILDERS[path.suffix.lower()], []).append(path)
    if len(kinds) > 1:
        found = ", ".join(
            f"{len(paths)} {kind} file{'s' * (len(paths) > 1)} ({paths[0].relative_to(folder)}"
            f"{', ...' * (len(paths) > 1)})"
            for kind, paths in sorted(kinds.items())
        )
        raise InputError(
            f"{what} folder {folder} mixes formats: {found}; datasets would read one format and drop the rest. Keep "
            "one format per folder (convert the others, or move them out)."
        )


def load_local_file(path: Path, what: str = "data") -> datasets.Dataset:
    """All rows of a local ``.json``/``.jsonl``/``.parquet``/``.csv`` file (a single file has no splits)."""
    import datasets

    if not path.exists():
        raise FileNotFoundError(f"{what} file not found: {path}")
    builder = BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise InputError(f"unsupported {what} file type {path.suffix!r} for {path}; use one of {sorted(BUILDERS)}")
    check_data_file(path, what)
    if path.stat().st_size == 0:
        raise InputError(f"{what} file {path} is empty.")
    try:
        rows = datasets.load_dataset(builder, data_files=str(path), split="train")
    except datasets.exceptions.DatasetGenerationError as error:
        cause = error.__cause__ or error
        raise InputError(f"cannot read {what} file {path}: {type(cause).__name__}: {cause}") from error
    except ValueError as error:  # a .csv with a header and no row: 'Instruction "train" corresponds to no data!'
        if "corresponds to no data" not in str(error):
            raise
        raise InputError(f"{what} file {path} has no rows (a header only?).") from error
    return rows


def load_local_folder(folder: Path, split: str, config: str | None = None, what: str = "data") -> datasets.Dataset:
    """Split ``split`` of a local dataset folder: one saved with ``save_to_disk``, a clone of a Hub dataset (its
    ``config``, e.g. GSM8K's ``main``, where the folder declares it), or a plain folder of ``.json``/``.jsonl``/
    ``.parquet`` files, with split names in the file or folder names (``train.jsonl``, ``test/``) or without (then
    read whole, as a single file is). ``load_dataset(folder, "main")`` failed on a plain folder with "BuilderConfig
    'main' not found. Available: ['default']"."""
    import datasets

    if (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file():
        saved = datasets.load_from_disk(str(folder))
        return _pick_split(saved, split, folder, what) if isinstance(saved, datasets.DatasetDict) else saved
    from datasets.data_files import FILES_TO_IGNORE  # a Hub clone's README, dataset_infos.json, ...: not data

    files = sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in BUILDERS and p.is_file() and p.name not in FILES_TO_IGNORE
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)  # hidden: datasets skips them too
    )  # fmt: skip
    if not files:
        raise InputError(f"{what} folder {folder} holds no .json, .jsonl or .parquet file.")
    check_one_format(files, folder, what)
    check_file_size(folder, what, files)
    for path in files:
        check_data_file(path, what)
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
