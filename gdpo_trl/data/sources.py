"""One registry of data sources, shared by ``gdpo-train``, ``gdpo-eval`` and the method comparison.

A source is a name; everything else is a parameter::

    load_source("gsm8k", split="test")                       # openai/gsm8k from the Hub
    load_source("sample")                                    # the GSM8K-style sample shipped with the package
    load_source("synthetic", size=200, seed=3)               # generated word problems (gdpo_trl.demo.synthetic)
    load_source("warmstart", size=64, split="test")          # problems of the kind builtin:warmstart was trained on
    load_source("data/train.jsonl")                          # a local .json/.jsonl/.parquet file or dataset folder
    load_source("my-org/my-gsm8k", split="train")            # any other name: a Hub dataset id

Every source gives a ``datasets.Dataset`` with a conversational ``prompt`` and a gold ``answer`` column. The
generated sources (``synthetic``, ``warmstart``) draw their problems from ``seed``; when it is not given, the
training split uses seed 0 and every other split :data:`EVAL_SEED`, so an evaluation does not see the exact problems
of a training run with default settings. ``warmstart`` problems are always ones the warm start's SFT never saw.

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


def _gsm8k(split: str, size: int | None, seed: int | None, config: str) -> datasets.Dataset:
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k(GSM8K_HUB_ID, split, config=config, limit=size)


def _sample(split: str, size: int | None, seed: int | None, config: str) -> datasets.Dataset:
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k("sample", split, limit=size)


def _synthetic(split: str, size: int | None, seed: int | None, config: str) -> datasets.Dataset:
    from gdpo_trl.demo.synthetic import load_synthetic

    return load_synthetic(DEFAULT_GENERATED_SIZE if size is None else size, _seed(seed, split))


def _warmstart(split: str, size: int | None, seed: int | None, config: str) -> datasets.Dataset:
    from gdpo_trl.demo.warmstart import load_warmstart_dataset

    # The warm start's held-out problems (its "eval" split) for RL and evaluation alike: none was an SFT example.
    return load_warmstart_dataset(DEFAULT_GENERATED_SIZE if size is None else size, _seed(seed, split), split="eval")


# name -> loader(split, size, seed, config). Any other name is a local path or a Hub id (see load_source).
SOURCES: dict[str, Callable[..., datasets.Dataset]] = {
    "gsm8k": _gsm8k,
    "sample": _sample,
    "synthetic": _synthetic,
    "warmstart": _warmstart,
}
# Sources whose size is how many problems to generate rather than a cap on rows read.
GENERATED = frozenset({"synthetic", "warmstart"})


def load_source(
    name: str,
    *,
    split: str = "train",
    size: int | None = None,
    seed: int | None = None,
    config: str = "main",
) -> datasets.Dataset:
    """Load data source ``name`` (a key of :data:`SOURCES`, a local path or a Hub id) as ``prompt``/``answer`` rows.

    Args:
        split: the split to read (Hub datasets and folders; a single local file is read whole). For generated
            sources it only picks the default seed (see the module docstring).
        size: the number of rows: the first ``size`` rows of read data (default: all), or how many problems to
            generate (default :data:`DEFAULT_GENERATED_SIZE`).
        seed: the generator seed of a generated source; an error for any other source.
        config: the Hub dataset configuration (GSM8K has ``"main"`` and ``"socratic"``).
    """
    if size is not None and size < 1:
        raise ValueError(f"size must be >= 1 or None, got {size}")
    if seed is not None and name not in GENERATED:
        raise ValueError(f"seed only applies to generated sources {sorted(GENERATED)}, not to {name!r}")
    loader = SOURCES.get(name)
    if loader is not None:
        return loader(split, size, seed, config)
    from gdpo_trl.data.gsm8k import load_gsm8k

    return load_gsm8k(name, split, config=config, limit=size)
