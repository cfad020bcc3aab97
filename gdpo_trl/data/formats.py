"""Which kind of rows a dataset named by path or Hub id holds, told from its columns: a ``prompt`` dataset (used as it
is, every other column reaching the rewards by name, as TRL's ``trl grpo`` reads one) or GSM8K's ``question`` and
``answer`` (turned into a chat prompt and a gold number by :mod:`gdpo_trl.data.gsm8k`).

``dataset_format`` picks: ``auto`` (the columns decide), ``prompt`` or ``gsm8k``. A dataset with neither kind of
column is refused in one line naming the columns it has. :func:`peek_columns` reads a local file's columns without
``datasets`` (a line of JSON, a CSV header, a Parquet schema), so ``gdpo train`` answers that before torch loads.
"""

from __future__ import annotations

import csv
import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.files import jsonl_lines, load_local_file, load_local_folder
from gdpo_trl.data.prompt_shapes import argument_column_problem, local_prompts, prompt_shape_problem
from gdpo_trl.storage.local_paths import nearest_existing

if TYPE_CHECKING:
    import datasets

DATASET_FORMATS = ("auto", "prompt", "gsm8k")
GSM8K_COLUMNS = ("question", "answer")
# A .json file is read whole to see its columns only below this size; a bigger one is left to the loader.
PEEK_JSON_BYTES = 50_000_000
# Rows of a .jsonl whose keys make its columns (datasets takes the union over every row; a column missing from
# the first hundred rows is rare enough that the loader's own check stays the last word).
PEEK_ROWS = 100
# Suffixes that mark a dataset name as a local file even when it does not exist (a typo), never a Hub id.
FILE_LIKE_SUFFIXES = (".json", ".jsonl", ".parquet", ".csv", ".tsv", ".txt", ".arrow", ".gz", ".zip")


def looks_local(source: str) -> bool:
    """Whether ``source`` names a local file or folder (it exists, has a data file's suffix, or starts with ``.``,
    ``/`` or ``~``) rather than a Hub id."""
    path = Path(source).expanduser()
    return path.exists() or path.suffix.lower() in FILE_LIKE_SUFFIXES or source.startswith((".", "/", "~"))


def read_raw(source: str, split: str, config: str | None, what: str = "data") -> datasets.Dataset:
    """The rows of ``source`` as stored: a local folder (split ``split``), a local file (read whole) or a Hub id
    (``config`` where the dataset has such a configuration, e.g. GSM8K's ``main``; else its default)."""
    import datasets

    path = Path(source).expanduser()
    if path.is_dir():  # a folder of data files, a save_to_disk folder or a Hub clone
        return load_local_folder(path, split, config, what)
    if looks_local(source):
        return load_local_file(path, what)
    try:
        names = datasets.get_dataset_config_names(source)
    except Exception:  # offline without a cached copy, or no such dataset: load_dataset names the problem
        names = [config]
    return datasets.load_dataset(source, config if config in names else None, split=split)


def check_gsm8k_columns(columns: list[str], source: str) -> None:
    """GSM8K's rows have its ``question`` and ``answer`` (read from the file by :func:`choose_format`, checked again
    on the loaded rows by :func:`gdpo_trl.data.gsm8k.gsm8k_rows`: one rule, one message)."""
    if missing := [column for column in GSM8K_COLUMNS if column not in columns]:
        raise InputError(f"GSM8K source {source!r} is missing required column(s) {missing}; found columns {columns}")


def choose_format(columns: list[str], requested: str, source: str) -> str:
    """``"prompt"`` or ``"gsm8k"`` for a dataset with ``columns``, as ``requested`` (``auto``: by the columns);
    an :class:`InputError` naming the columns found where they do not fit."""
    if requested not in DATASET_FORMATS:
        raise InputError(f"dataset_format {requested!r}: use one of {', '.join(DATASET_FORMATS)}.")
    has_prompt = "prompt" in columns
    has_gsm8k = all(column in columns for column in GSM8K_COLUMNS)
    if requested == "prompt" and not has_prompt:
        raise InputError(
            f"dataset {source!r} has no 'prompt' column, which dataset_format: prompt needs (text or a list of "
            f"chat messages per row); found columns {columns}: rename the column holding the prompts to 'prompt'."
        )
    if requested == "gsm8k":
        check_gsm8k_columns(columns, source)
    if requested != "auto":
        return requested
    if has_prompt and has_gsm8k:
        # Refused, not guessed: the file's author wrote those prompts on purpose, and GSM8K rows would replace them
        # with ones built from 'question' and the system prompt.
        raise InputError(
            f"dataset {source!r} has a 'prompt' column of its own beside GSM8K's 'question' and 'answer': set "
            "dataset_format: prompt to train on its prompts as they are, or drop or rename the 'prompt' column to "
            "build GSM8K prompts from 'question' (a ToolRL-format file is read with dataset_name: toolrl and "
            "dataset_path)."
        )
    if has_prompt:
        return "prompt"
    if has_gsm8k:
        return "gsm8k"
    raise InputError(
        f"dataset {source!r} has neither a 'prompt' column (text or chat messages, used as it is, every other column "
        f"passed to the rewards) nor GSM8K's 'question' and 'answer'; found columns {columns}: rename the column "
        "holding the prompts to 'prompt'."
    )


def peek_columns(source: str) -> list[str] | None:
    """The columns of a local data file or folder, read without ``datasets``; None where that cannot be told cheaply
    (a Hub id, a missing or unreadable file: the loader names those)."""
    path = Path(source).expanduser()
    try:
        if path.is_dir():
            return _folder_columns(path)
        if path.is_file():
            return _file_columns(path)
    except (OSError, ValueError, UnicodeDecodeError, ImportError):
        return None
    return None


def _file_columns(path: Path) -> list[str] | None:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        keys: dict[str, None] = {}
        read = 0
        for _, line in jsonl_lines(path):  # a block at a time: a line over the limit is refused, never read whole
            if line.strip():
                row = json.loads(line.decode("utf-8"))
                if not isinstance(row, dict):
                    return None
                keys.update(dict.fromkeys(row))
                read += 1
                if read == PEEK_ROWS:
                    break
        return list(keys) or None
    if suffix == ".csv":
        # utf-8-sig: a byte-order mark (Excel writes one) is not part of the first column's name; pandas, which
        # datasets reads CSV with, drops it too
        with path.open(encoding="utf-8-sig", newline="") as text:
            return next(csv.reader(text), None)
    if suffix == ".parquet":
        import pyarrow.parquet  # no torch: a schema read of the file's footer

        return list(pyarrow.parquet.read_schema(path).names)
    if suffix == ".json" and path.stat().st_size < PEEK_JSON_BYTES:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return list(dict.fromkeys(key for row in data[:PEEK_ROWS] if isinstance(row, dict) for key in row))
        if isinstance(data, dict) and data and all(isinstance(value, list) for value in data.values()):
            return list(data)
    return None


def _folder_columns(folder: Path) -> list[str] | None:
    """A ``save_to_disk`` folder's features, else the columns of its first data file (a training split first)."""
    for info in (folder / "dataset_info.json", *sorted(folder.glob("*/dataset_info.json"))):
        if info.is_file():
            features = json.loads(info.read_text(encoding="utf-8")).get("features")
            return list(features) if isinstance(features, dict) else None
    files = sorted(
        (p for p in folder.rglob("*") if p.suffix.lower() in (".jsonl", ".json", ".csv", ".parquet") and p.is_file()),
        key=lambda p: ("train" not in p.as_posix().lower(), p.as_posix()),
    )
    return _file_columns(files[0]) if files else None


def missing_data_line(source: str) -> str | None:
    """The one line for a local-looking dataset name that does not exist (with the closest name beside it), else
    None."""
    path = Path(source).expanduser()
    if path.exists() or not looks_local(source):
        return None
    base = nearest_existing(path)
    names = sorted(p.name for p in base.iterdir() if not p.name.startswith("."))
    missing = path.relative_to(base).parts[0] if path.is_relative_to(base) else path.name
    close = difflib.get_close_matches(missing, names, n=1, cutoff=0.6)
    hint = f"did you mean {str(base / close[0])!r}?" if close else f"{str(base).rstrip('/')}/ has no {missing!r}."
    return f"data file not found: {source} ({hint})"


def check_local_dataset(source: str, requested: str = "auto") -> None:
    """Refuse, before torch loads, a local dataset that does not exist, whose columns fit no format (see
    :func:`choose_format`), or whose prompts mix kinds or hold messages no chat template renders
    (:mod:`gdpo_trl.data.prompt_shapes`)."""
    if line := missing_data_line(source):
        raise InputError(line)
    columns = peek_columns(source)
    if columns is None or choose_format(columns, requested, source) != "prompt":
        return  # GSM8K rows keep question and answer only
    if problem := argument_column_problem(columns, source):
        raise InputError(problem)
    prompts = local_prompts(source)
    if prompts is not None and (problem := prompt_shape_problem(prompts, source)):
        raise InputError(problem)


def format_line(
    source: str, kind: str, raw_columns: list[str], rows: datasets.Dataset, system_prompt: bool = False
) -> str:
    """The line ``gdpo train`` prints first about its data: which path was taken, and what reaches the rewards."""
    count = f"{len(rows)} row{'s' * (len(rows) != 1)}"
    if kind == "prompt":
        others = [column for column in rows.column_names if column != "prompt"]
        style = "chat messages" if len(rows) and not isinstance(rows[0]["prompt"], str) else "text"
        how = "with the recipe's system_prompt" if system_prompt else "used as they are"
        passed = f"the rewards also receive {', '.join(others)}" if others else "no other column"
        return f"data: {source}: {count} with a 'prompt' column ({style}), {how}; {passed}"
    dropped = [column for column in raw_columns if column not in GSM8K_COLUMNS]
    note = f"; dropped columns {', '.join(dropped)} (a 'prompt' column keeps every column)" if dropped else ""
    return (
        f"data: {source}: {count} of GSM8K (question/answer): a chat prompt with the system prompt, the gold "
        f"number in 'answer'{note}"
    )
