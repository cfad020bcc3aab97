"""One registry of data sources, shared by ``gdpo train``, ``gdpo eval`` and the method comparison.

A source is a name; everything else is a parameter::

    load_source("gsm8k", split="test")                       # openai/gsm8k from the Hub
    load_source("sample")                                    # the GSM8K-style sample shipped with the package
    load_source("synthetic", size=200, seed=3)               # generated word problems (gdpo_trl.tasks.synthetic)
    load_source("warmstart", size=64, split="test")          # problems of the kind builtin:warmstart was trained on
    load_source("data/train.jsonl")                          # a local .json/.jsonl/.parquet/.csv file or folder
    load_source("my-org/my-gsm8k", split="train")            # any other name: a Hub dataset id
    load_source("data/prompts.jsonl", dataset_format="prompt")  # rows with their own prompt, every column kept
    load_source("sample", system_prompt="Think, then answer.")  # GSM8K-style rows with another system message
    load_source("toolcall", size=200, seed=3)                # generated tool-calling requests (gdpo_trl.models)
    load_source("toolrl_sample")                             # the ToolRL-format sample shipped with the package
    load_source("toolrl", path="data/rlla_4k/train.parquet") # ToolRL-format rows: a local file, folder or Hub id

A file, folder or Hub id holds one of two kinds of rows (:mod:`gdpo_trl.data.formats`): its own ``prompt`` (text or
chat messages), used as it is with every other column kept for the rewards, as TRL's ``trl grpo`` does; or GSM8K's
``question`` and ``answer``, made into the rows below. Its columns decide, or ``dataset_format``.

Every named source gives a ``datasets.Dataset`` with a conversational ``prompt`` and a gold ``answer`` column. The
generated sources (``synthetic``, ``warmstart``, ``toolcall``) draw their problems from ``seed``; when it is not
given, the training split uses seed 0 and every other split :data:`EVAL_SEED`, so an evaluation does not see the exact
problems of a training run with default settings. ``warmstart`` and ``toolcall`` problems are always ones their warm
start's SFT never saw.

The named sources give two kinds of rows: GSM8K-style (a question and an integer answer; every source that is not a
tool source), whose system message ``system_prompt`` replaces, and tool-calling rows (:func:`is_tool_source`), whose
system message lists the tools a request may use and so is never replaced. A file in ToolRL's own format is named
explicitly (``toolrl`` with ``path``), never guessed from its columns.

The demo's generated sources are plugins (entry points, see :mod:`gdpo_trl.core.plugins`): nothing here imports
:mod:`gdpo_trl.models`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError
from gdpo_trl.core.plugins import SOURCES, load_plugin, registered

if TYPE_CHECKING:
    import datasets

# Generator seed for any split but "train" when none is given: fixed, so every evaluation sees the same problems,
# and unlike 0 or 42 (the usual training seeds).
EVAL_SEED = 1234
# Problems generated when a generated source is given no size.
DEFAULT_GENERATED_SIZE = 1000
GSM8K_HUB_ID = "openai/gsm8k"
# Split names accepted where the data has no splits (a single file, a generated source); see check_split.
USUAL_SPLITS = ("train", "validation", "test")
# Suffixes of a single data file (which has no splits), also when it does not exist yet (then: file not found).
FILE_SUFFIXES = (".json", ".jsonl", ".parquet", ".csv", ".txt")


def generated_seed(seed: int | None, split: str) -> int:
    """The seed of a generated source: as given, else 0 for the training split and EVAL_SEED for any other."""
    return seed if seed is not None else (0 if split == "train" else EVAL_SEED)


def generated_size(size: int | None) -> int:
    """How many problems a generated source makes: as given, else DEFAULT_GENERATED_SIZE."""
    return DEFAULT_GENERATED_SIZE if size is None else size


def _gsm8k(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k(GSM8K_HUB_ID, split, config=config, limit=size)


def _sample(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k("sample", split, limit=size)


def _toolrl_sample(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.toolrl import load_toolrl

    return load_toolrl("sample", split, limit=size)


def _toolrl(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.toolrl import load_toolrl

    return load_toolrl(path, split, limit=size)


@dataclass(frozen=True)
class Source:
    """A named data source: ``load(split, size, seed, config, path)`` returns ``prompt``/``answer`` rows.

    ``generated``: ``size`` is how many problems to generate (and ``seed`` applies), not a cap on rows read.
    ``tools``: a tool-calling source, whose system message lists the tools (so ``system_prompt`` does not apply).
    ``needs_path``: read from ``path`` (a local file or folder, or a Hub id), and only such a source takes one.
    ``environment``: a multi-turn agent source's ``environment_factory`` for TRL's ``GRPOTrainer`` (a class made once
    per rollout, or ``{name: class}`` for rows that each name theirs in an ``environment`` column).
    """

    load: Callable[..., datasets.Dataset]
    generated: bool = False
    tools: bool = False
    needs_path: bool = False
    environment: Callable | dict[str, Callable] | None = None


# The sources of gdpo-trl itself. Others (the demo's generated ones) come from the `gdpo_trl.sources` entry points
# (gdpo_trl.core.plugins). Any other name is a local path or a Hub id (see load_source).
BUILTIN_SOURCES = {
    "gsm8k": Source(_gsm8k),
    "sample": Source(_sample),
    "toolrl_sample": Source(_toolrl_sample, tools=True),
    "toolrl": Source(_toolrl, tools=True, needs_path=True),
}


def source_names() -> list[str]:
    """Every named source: gdpo-trl's and the plugins'."""
    return sorted({*BUILTIN_SOURCES, *registered(SOURCES)})


def find_source(name: str) -> Source | None:
    """The named source ``name``, or ``None`` when ``name`` is a path or Hub id."""
    if name in BUILTIN_SOURCES:
        return BUILTIN_SOURCES[name]
    return load_plugin(SOURCES, name) if name in registered(SOURCES) else None


def is_generated(name: str) -> bool:
    return bool((source := find_source(name)) and source.generated)


def check_generated_split(name: str, split: str) -> None:
    """A generated source has one training split: another name would be ignored without a word (checked early by
    ``gdpo train``, before torch loads, and where the source's options are made)."""
    if split != "train" and is_generated(name):
        raise InputError(
            f"dataset_train_split {split!r} does not apply to the generated source {name!r}, whose training "
            "problems come from synthetic_seed: leave it 'train'."
        )


def environment_factory(name: str) -> Callable | dict[str, Callable] | None:
    """The ``environment_factory`` of an agent source (see :class:`Source`), else ``None``."""
    source = find_source(name)
    return source.environment if source else None


def is_tool_source(name: str) -> bool:
    return bool((source := find_source(name)) and source.tools)


def has_splits(name: str, source: Source | None, path: str | None) -> bool:
    """Whether the data behind ``name`` has named splits (a Hub dataset, a dataset folder); a single file and a
    generated source have none."""
    if source is not None and not source.needs_path:
        return source.load is _gsm8k  # the Hub dataset; the shipped samples are single files, the rest generated
    where = Path(path if source is not None else name).expanduser()
    return not (where.is_file() or where.suffix.lower() in FILE_SUFFIXES)


def check_split(name: str, source: Source | None, split: str, path: str | None) -> None:
    """A split name where there are no splits is read whole (a file) or only picks the seed (a generated source):
    a typo such as ``tset`` would pass unseen, so only the usual names are accepted there. Where there are splits,
    ``datasets`` names the ones that exist."""
    if split not in USUAL_SPLITS and not has_splits(name, source, path):
        kind = (
            "a generated source, whose split only picks its seed" if source and source.generated else "a single file"
        )
        raise ValueError(
            f"split {split!r} does not exist: {name!r} is {kind}; use one of {list(USUAL_SPLITS)} "
            "(dataset_train_split in a recipe, --split for gdpo eval)"
        )


def load_source(name: str, **options) -> datasets.Dataset:
    """Load data source ``name``: :func:`load_source_described`'s rows (the options are its)."""
    return load_source_described(name, **options)[0]


def load_source_described(
    name: str,
    *,
    split: str = "train",
    size: int | None = None,
    seed: int | None = None,
    config: str = "main",
    path: str | None = None,
    system_prompt: str | None = None,
    dataset_format: str = "auto",
) -> tuple[datasets.Dataset, str | None]:
    """Load data source ``name`` (a key of :data:`SOURCES`, a local path or a Hub id); returns the rows and, for a
    path or Hub id, the line that says which kind of rows they are and what reaches the rewards (``gdpo train``
    prints it first; a named source's rows are always of its one kind: None).

    Args:
        split: the split to read (Hub datasets and folders; a single local file is read whole). For generated
            sources it only picks the default seed (see the module docstring).
        size: the number of rows: the first ``size`` rows of read data (default: all), or how many problems to
            generate (default :data:`DEFAULT_GENERATED_SIZE`).
        seed: the generator seed of a generated source; an error for any other source.
        config: the Hub dataset configuration (GSM8K has ``"main"`` and ``"socratic"``).
        path: where a source of :data:`NEEDS_PATH` reads its rows (``toolrl``: a ``.parquet``/``.jsonl``/``.json``
            file, a dataset folder or a Hub id); an error for any other source.
        system_prompt: replaces the system message of GSM8K-style rows
            (:func:`gdpo_trl.data.gsm8k.with_system_prompt`); ``None`` keeps the loader's. An error for
            :data:`TOOL_SOURCES`, whose system message lists the tools.
        dataset_format: for a file, folder or Hub id: ``auto`` (its columns decide), ``prompt`` (rows with their
            own prompt, every column kept) or ``gsm8k`` (``question``/``answer``); named sources have their own.
    """
    if size is not None and size < 1:
        raise ValueError(f"size must be >= 1 or None, got {size}")
    source = find_source(name)
    if seed is not None and not (source and source.generated):
        generated = [n for n in source_names() if is_generated(n)]
        raise ValueError(f"seed only applies to generated sources {generated}, not to {name!r}")
    if source and source.needs_path and path is None:
        raise ValueError(
            f"data source {name!r} needs a path (dataset_path in a recipe, --dataset_path for gdpo eval): a "
            ".parquet/.jsonl/.json file, a dataset folder or a Hub id"
        )
    if path is not None and not (source and source.needs_path):
        needs_path = [n for n in source_names() if find_source(n).needs_path]
        raise ValueError(
            f"a path only applies to the sources {needs_path}, not to {name!r}; a local GSM8K-style file is "
            "named as the source itself"
        )
    if system_prompt is not None and source and source.tools:
        raise ValueError(
            f"system_prompt does not apply to the tool-calling source {name!r}: its system message lists the tools "
            "a request may use; leave system_prompt unset"
        )
    if dataset_format != "auto" and source is not None:
        raise InputError(
            f"dataset_format {dataset_format!r} applies to a data file, folder or Hub id; {name!r} is a named source "
            "with rows of its own kind: leave dataset_format at auto."
        )
    check_split(name, source, split, path)
    if source is None:
        return load_rows(name, split, size, config, system_prompt, dataset_format)
    rows = source.load(split, size, seed, config, path)
    if system_prompt is None:
        return rows, None
    from gdpo_trl.data.gsm8k import with_system_prompt

    return with_system_prompt(rows, system_prompt), None


def load_rows(
    name: str, split: str, size: int | None, config: str, system_prompt: str | None, dataset_format: str
) -> tuple[datasets.Dataset, str]:
    """A file, folder or Hub id's rows, of the kind its columns (or ``dataset_format``) say, with their line."""
    from gdpo_trl.data.formats import choose_format, format_line, read_raw

    raw = read_raw(name, split, config)
    kind = choose_format(raw.column_names, dataset_format, name)
    if kind == "prompt":
        from gdpo_trl.data.prompt_rows import prompt_rows

        rows = prompt_rows(raw, name, size, system_prompt)
    else:
        from gdpo_trl.data.gsm8k import gsm8k_rows, with_system_prompt

        rows = with_system_prompt(gsm8k_rows(raw, name, size), system_prompt)
    return rows, format_line(name, kind, raw.column_names, rows, system_prompt is not None)


def source_options(script_args) -> dict:
    """``load_source`` options from a recipe's data fields (its script arguments, or any object with their names:
    ``gdpo pilot`` reads them from the field table): generated sources take a size and a seed; the recipe's
    ``system_prompt`` and ``dataset_path`` go through as given (``load_source`` refuses them where they do not apply)."""
    limit = script_args.max_train_samples
    common = {"system_prompt": script_args.system_prompt, "path": script_args.dataset_path}
    if script_args.dataset_format != "auto":  # named sources refuse it (load_source)
        common["dataset_format"] = script_args.dataset_format
    if is_generated(script_args.dataset_name):
        check_generated_split(script_args.dataset_name, script_args.dataset_train_split)
        size = script_args.synthetic_size if limit is None else min(limit, script_args.synthetic_size)
        return {"split": "train", "size": size, "seed": script_args.synthetic_seed, **common}
    split, config = script_args.dataset_train_split, script_args.dataset_config or "main"
    return {"split": split, "size": limit, "config": config, **common}
