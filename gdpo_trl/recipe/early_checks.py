"""The checks of a ``gdpo train`` run that need only its command line and recipe, run before TRL is imported.

Each answers in one line, with the message the full parser's dataclasses give for the same mistake where they give
one: field ranges (:mod:`gdpo_trl.core.config_checks`), reward names (with the closest registry names), one weight
per reward, a split a generated source cannot have, the generation batch over all the processes a launch starts, a
``bf16`` recipe on a machine without a GPU, a local dataset that is missing or has neither a ``prompt`` column nor
GSM8K's ``question``/``answer`` (read from the file, :mod:`gdpo_trl.data.formats`), and a local model path that is
not a folder or a model folder without tokenizer files. They read :class:`~gdpo_trl.recipe.early_parse.EarlyArgs`' values; the
dataclasses check the same values again once built.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import sys
from types import SimpleNamespace

from gdpo_trl.core.config_checks import (
    check_generation_batch,
    check_num_generations,
    check_ranges,
    check_weight_counts,
)
from gdpo_trl.core.errors import InputError

# Device files of the accelerators torch can train on: NVIDIA, AMD (ROCm), Intel (and any other DRM GPU), Ascend,
# Gaudi and other /dev/accel devices, AWS Neuron, and WSL's GPU bridge.
ACCELERATOR_DEVICES = (
    "/dev/nvidia[0-9]*", "/dev/kfd", "/dev/dri/renderD*", "/dev/davinci[0-9]*", "/dev/accel/*", "/dev/hl[0-9]*",
    "/dev/neuron*", "/dev/dxg",
)  # fmt: skip


def surely_no_accelerator() -> bool:
    """True only where no accelerator can be there, judged without importing torch: a Linux machine with none of
    the device files above and no torch_xla. Elsewhere (macOS's MPS, Windows) it says False and leaves the answer
    to transformers' own check, after the import."""
    if not sys.platform.startswith("linux"):
        return False
    if any(glob.glob(pattern) for pattern in ACCELERATOR_DEVICES):
        return False
    return importlib.util.find_spec("torch_xla") is None


def check_precision(values: dict) -> None:
    """``bf16: true`` without ``use_cpu`` on a machine with no accelerator: transformers refuses it only once the
    recipe's classes are built."""
    if (values.get("bf16") or values.get("bf16_full_eval")) and not values.get("use_cpu") and surely_no_accelerator():
        raise InputError(
            "bf16: true needs a GPU, and this machine has none: to train on the CPU set use_cpu: true and bf16: "
            "false (--use_cpu true --bf16 false), or run on a machine with a GPU."
        )


def check_script_ranges(script_args) -> None:
    """``GDPOScriptArguments``' counts that must be at least 1 (also run by its ``__post_init__``)."""
    for name in ("max_train_samples", "cpu_threads", "synthetic_size"):
        value = getattr(script_args, name, None)
        if isinstance(value, (int, float)) and value < 1:
            hint = {
                "max_train_samples": "leave it unset to use every example",
                "cpu_threads": "leave it unset for torch's choice",
                "synthetic_size": "the number of generated problems",
            }[name]
            raise InputError(f"{name}={value}: must be at least 1 ({hint}).")


def check_reward_names(names: list) -> None:
    """Registry names that are not registered, modules and files that are not there, functions they do not define,
    each with the closest names (:func:`gdpo_trl.rewards.check_reward_spec`: the files are read, not run)."""
    from gdpo_trl.rewards import check_reward_spec

    for name in names or []:
        if isinstance(name, str):
            check_reward_spec(name)


# Files that make a folder's tokenizer (a fast tokenizer's JSON, its config, a sentencepiece or BPE vocabulary).
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model",
    "sentencepiece.bpe.model",
)  # fmt: skip


def check_local_dataset_early(values: dict) -> None:
    """A dataset file or folder that is not there, or whose columns fit neither a `prompt` dataset nor GSM8K's:
    read from the file itself (a line of JSON, a CSV header, a Parquet schema), not by loading it."""
    from gdpo_trl.data.formats import check_local_dataset
    from gdpo_trl.data.sources import find_source

    name, requested = values.get("dataset_name"), values.get("dataset_format") or "auto"
    if isinstance(name, str) and find_source(name) is None:
        check_local_dataset(name, requested)


def check_model_folder_early(values: dict) -> None:
    """A local model path that is not a folder (named with the nearest one), or a model folder without tokenizer
    files (transformers then fails loading the tokenizer, after the data, or a chat-template check misnames it)."""
    from pathlib import Path

    from gdpo_trl.storage.local_paths import missing_folder_line

    name = values.get("model_name_or_path")
    if not isinstance(name, str) or not name or name.startswith("builtin:") or name.lower().endswith(".gguf"):
        return
    if line := missing_folder_line(name):
        raise InputError(line)
    folder = Path(name).expanduser()
    if not (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file():
        return  # not a full model folder here: an adapter's tokenizer may come from its base; the loader judges
    if not any((folder / file).is_file() for file in TOKENIZER_FILES):
        raise InputError(
            f"no tokenizer files in {name} (none of tokenizer.json, tokenizer_config.json, tokenizer.model, "
            "vocab.json): save the tokenizer beside the model (tokenizer.save_pretrained(folder)), or give the "
            "folder of a run, which saves both."
        )


def config_view(rows: list[dict], values: dict):
    """The training fields as a dataclass instance, for :func:`~gdpo_trl.core.config_checks.check_ranges` (which
    tells a number field by its default)."""
    specs = [
        (row["dest"], object, dataclasses.field(default=None if isinstance(row["default"], list) else row["default"]))
        for row in rows
        if row["group"] == "GDPOConfig" and row["action"] == "store"
    ]
    view = dataclasses.make_dataclass("GDPOConfigValues", specs)
    return view(**{name: values[name] for name, _, _ in specs if name in values})


def check_early(rows: list[dict], values: dict, num_processes: int | None) -> None:
    """Every check above on the parsed ``values`` (``num_processes`` None: the count is not known, no batch check)."""
    check_script_ranges(SimpleNamespace(**values))
    config = config_view(rows, values)
    check_num_generations(config)
    check_ranges(config)
    if num_processes is not None:
        check_generation_batch(config, num_processes)
    check_reward_names(values.get("reward_funcs"))
    check_weight_counts(values.get("reward_funcs"), values)
    split = values.get("dataset_train_split")
    if isinstance(values.get("dataset_name"), str) and isinstance(split, str) and split != "train":
        from gdpo_trl.data.sources import check_generated_split

        check_generated_split(values["dataset_name"], split)
    check_precision(values)
    check_local_dataset_early(values)
    check_model_folder_early(values)
