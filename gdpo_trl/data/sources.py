"""One registry of data sources, shared by ``gdpo-train``, ``gdpo-eval`` and the method comparison.

A source is a name; everything else is a parameter::

    load_source("gsm8k", split="test")                       # openai/gsm8k from the Hub
    load_source("sample")                                    # the GSM8K-style sample shipped with the package
    load_source("synthetic", size=200, seed=3)               # generated word problems (gdpo_trl.demo.synthetic)
    load_source("warmstart", size=64, split="test")          # problems of the kind builtin:warmstart was trained on
    load_source("data/train.jsonl")                          # a local .json/.jsonl/.parquet file or dataset folder
    load_source("my-org/my-gsm8k", split="train")            # any other name: a Hub dataset id
    load_source("sample", system_prompt="Think, then answer.")  # GSM8K-style rows with another system message
    load_source("toolcall", size=200, seed=3)                # generated tool-calling requests (gdpo_trl.demo)
    load_source("toolrl_sample")                             # the ToolRL-format sample shipped with the package
    load_source("toolrl", path="data/rlla_4k/train.parquet") # ToolRL-format rows: a local file, folder or Hub id

Every source gives a ``datasets.Dataset`` with a conversational ``prompt`` and a gold ``answer`` column. The
generated sources (``synthetic``, ``warmstart``, ``toolcall``) draw their problems from ``seed``; when it is not
given, the training split uses seed 0 and every other split :data:`EVAL_SEED`, so an evaluation does not see the exact
problems of a training run with default settings. ``warmstart`` and ``toolcall`` problems are always ones their warm
start's SFT never saw.

Two kinds of rows: GSM8K-style (a question and an integer answer; every source not in :data:`TOOL_SOURCES`), whose
system message ``system_prompt`` replaces, and tool-calling rows (:data:`TOOL_SOURCES`), whose system message lists
the tools a request may use and so is never replaced. A ToolRL file is named explicitly (``toolrl`` with ``path``),
never told apart from a GSM8K file by sniffing its columns: a file in the wrong shape then fails naming the column it
lacks.

The demo's generators are imported only when asked for, so the core never imports :mod:`gdpo_trl.demo` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datasets

# Generator seed for any split but "train" when none is given: fixed, so every evaluation sees the same problems,
# and unlike 0 or 42 (the usual training seeds).
EVAL_SEED = 1234
# Problems generated when a generated source is given no size.
DEFAULT_GENERATED_SIZE = 1000
GSM8K_HUB_ID = "openai/gsm8k"


def _seed(seed: int | None, split: str) -> int:
    return seed if seed is not None else (0 if split == "train" else EVAL_SEED)


def _size(size: int | None) -> int:
    return DEFAULT_GENERATED_SIZE if size is None else size


def _gsm8k(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k(GSM8K_HUB_ID, split, config=config, limit=size)


def _sample(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k("sample", split, limit=size)


def _synthetic(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.demo.synthetic import load_synthetic

    return load_synthetic(_size(size), _seed(seed, split))


def _warmstart(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.demo.warmstart import load_warmstart_dataset

    # The warm start's held-out problems (its "eval" split) for RL and evaluation alike: none was an SFT example.
    return load_warmstart_dataset(_size(size), _seed(seed, split), split="eval")


def _toolcall(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.demo.toolcall_task import load_toolcall_task

    # As for `warmstart`: the requests builtin:toolcall_warmstart's SFT never saw, for RL and evaluation alike.
    return load_toolcall_task(_size(size), _seed(seed, split), split="eval")


def _toolrl_sample(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.toolrl import load_toolrl

    return load_toolrl("sample", split, limit=size)


def _toolrl(split: str, size: int | None, seed: int | None, config: str, path: str | None) -> datasets.Dataset:
    from gdpo_trl.data.toolrl import load_toolrl

    return load_toolrl(path, split, limit=size)


# name -> loader(split, size, seed, config, path). Any other name is a local path or a Hub id (see load_source).
SOURCES: dict[str, Callable[..., datasets.Dataset]] = {
    "gsm8k": _gsm8k,
    "sample": _sample,
    "synthetic": _synthetic,
    "warmstart": _warmstart,
    "toolcall": _toolcall,
    "toolrl_sample": _toolrl_sample,
    "toolrl": _toolrl,
}
# Sources whose size is how many problems to generate rather than a cap on rows read.
GENERATED = frozenset({"synthetic", "warmstart", "toolcall"})
# Tool-calling sources: their system message lists the tools, so `system_prompt` does not apply.
TOOL_SOURCES = frozenset({"toolcall", "toolrl_sample", "toolrl"})
# Sources read from `path` (a local file or folder, or a Hub id), and only they take it.
NEEDS_PATH = frozenset({"toolrl"})


def load_source(
    name: str,
    *,
    split: str = "train",
    size: int | None = None,
    seed: int | None = None,
    config: str = "main",
    path: str | None = None,
    system_prompt: str | None = None,
) -> datasets.Dataset:
    """Load data source ``name`` (a key of :data:`SOURCES`, a local path or a Hub id) as ``prompt``/``answer`` rows.

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
    """
    if size is not None and size < 1:
        raise ValueError(f"size must be >= 1 or None, got {size}")
    if seed is not None and name not in GENERATED:
        raise ValueError(f"seed only applies to generated sources {sorted(GENERATED)}, not to {name!r}")
    if name in NEEDS_PATH and path is None:
        raise ValueError(
            f"data source {name!r} needs a path (dataset_path in a recipe, --dataset_path for gdpo-eval): a "
            ".parquet/.jsonl/.json file, a dataset folder or a Hub id"
        )
    if path is not None and name not in NEEDS_PATH:
        raise ValueError(
            f"a path only applies to the sources {sorted(NEEDS_PATH)}, not to {name!r}; a local GSM8K-style file is "
            "named as the source itself"
        )
    if system_prompt is not None and name in TOOL_SOURCES:
        raise ValueError(
            f"system_prompt does not apply to the tool-calling source {name!r}: its system message lists the tools "
            "a request may use; leave system_prompt unset"
        )
    loader = SOURCES.get(name)
    if loader is not None:
        rows = loader(split, size, seed, config, path)
    else:
        from gdpo_trl.data.gsm8k import load_gsm8k

        rows = load_gsm8k(name, split, config=config, limit=size)
    if system_prompt is None:
        return rows
    from gdpo_trl.data.gsm8k import with_system_prompt

    return with_system_prompt(rows, system_prompt)
