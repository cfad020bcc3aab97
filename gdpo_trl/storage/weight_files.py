"""Is a saved file readable? Safetensors weights (header and size), ``torch.save`` archives (directory and every
record's checksum), and a model folder's weights as a whole. Shared by the checkpoint checks of a resume
(:mod:`gdpo_trl.run.checkpoints`), the model-folder checks of ``gdpo train`` and ``gdpo eval``'s loading, so a
damaged file is named in one line before a library fails inside it.

A safetensors file is an 8-byte little-endian header length, that many bytes of JSON (each tensor's
``data_offsets``), then the data: the file's size must be exactly 8 + header + the largest end offset.
"""

from __future__ import annotations

import contextlib
import json
import struct
import zipfile
from pathlib import Path


def safetensors_problem(path: Path) -> str | None:
    """Why the safetensors file ``path`` is unreadable (truncated, bad header), or None when its size adds up."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            if header_len > size:
                return f"{path.name} is truncated"
            header = json.loads(f.read(header_len))
    except (OSError, struct.error, ValueError):
        return f"{path.name} is unreadable"
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    return (
        None if size == 8 + header_len + end else f"{path.name} is truncated ({size} of {8 + header_len + end} bytes)"
    )


def torch_file_problem(path: Path) -> str | None:
    """Why the ``torch.save`` file ``path`` is unreadable; its zip directory is written last, so truncation shows.

    Every record is also read against the CRC-32 the zip stores for it: a damaged region inside the file (a bad
    sector, a zeroed block) otherwise passes the directory check, and ``torch.load`` then fails on the pickle or,
    inside a tensor's bytes, loads wrong numbers without a word. Reading costs one pass over the file.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            if not archive.namelist():
                return f"{path.name} is empty"
            damaged = archive.testzip()
    except (OSError, zipfile.BadZipFile, EOFError):
        return f"{path.name} is truncated or unreadable"
    return f"{path.name} is damaged ({damaged.split('/')[-1]} fails its checksum)" if damaged else None


def weights_problem(folder: Path) -> str | None:
    """Why ``folder`` has no readable weights (full model, sharded model, LoRA adapter or a DeepSpeed/FSDP state)."""
    for name in ("model.safetensors", "adapter_model.safetensors"):
        if (folder / name).is_file():
            return safetensors_problem(folder / name)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError):
            return f"{index.name} is unreadable"
        problems = [safetensors_problem(folder / s) if (folder / s).is_file() else f"{s} is missing" for s in shards]
        return next((p for p in problems if p), None)
    if (folder / "pytorch_model.bin").is_file():
        return torch_file_problem(folder / "pytorch_model.bin")
    if any(folder.glob("global_step*")) or any(folder.glob("pytorch_model_fsdp*")):
        return None  # DeepSpeed / FSDP write their own sharded state; its presence is what we can check cheaply
    return "no model weights (model.safetensors)"


def model_folder_problem(folder: Path) -> str | None:
    """Why the model (or LoRA adapter) folder ``folder`` cannot load, ending with the fix; None when its config
    parses and its weights add up. transformers would otherwise fail inside loading with a long traceback."""
    config = folder / ("adapter_config.json" if (folder / "adapter_config.json").is_file() else "config.json")
    if not config.is_file():
        return "holds weights but no config.json: copy the config.json saved with these weights into it"
    try:
        parsed = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"{config.name} is not valid JSON ({str(error)[:80]}): the folder is damaged; copy or save it again"
    if not isinstance(parsed, dict):
        return f"{config.name} holds a {type(parsed).__name__}, not a config: copy or save the folder again"
    problem = weights_problem(folder)
    if problem and problem.startswith("no model weights"):
        return f"has a {config.name} but {problem}: copy the weights saved with it into the folder"
    if problem:
        return (
            f"{problem}: the weights are damaged or cut short (an interrupted copy or save?); copy or save them again"
        )
    return None


# Safetensors bytes read tensor by tensor before loading (the builtin models, a fine-tuned tiny one: well under a
# second); a larger model is checked once loaded, where its weights are in memory anyway.
SCAN_LIMIT = 64 << 20


def safetensors_files(folder: Path) -> list[Path]:
    """The safetensors files of a model or adapter folder: one file, or the shards its index names."""
    single = [folder / n for n in ("model.safetensors", "adapter_model.safetensors") if (folder / n).is_file()]
    if single:
        return single[:1]
    try:
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        return [folder / name for name in sorted(set(index["weight_map"].values()))]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def scannable(folder: Path) -> bool:
    """Whether ``folder``'s safetensors weights are small enough (:data:`SCAN_LIMIT`) to scan before loading."""
    files = safetensors_files(folder)
    return bool(files) and sum(f.stat().st_size for f in files if f.is_file()) <= SCAN_LIMIT


def nonfinite(tensor) -> str | None:
    """``NaN``, ``inf`` or ``NaN and inf`` with their counts when a floating ``tensor`` holds any, else None."""
    import torch

    if not tensor.is_floating_point() or tensor.numel() == 0:
        return None
    # One reduction, no mask: a NaN or inf makes the sum non-finite (a sum that overflows is checked exactly).
    if bool(torch.isfinite(tensor.sum(dtype=torch.float32))) or bool(torch.isfinite(tensor).all()):
        return None
    nan, inf = int(torch.isnan(tensor).sum()), int(torch.isinf(tensor).sum())
    found = [f"{count} {what}" for what, count in (("NaN", nan), ("inf", inf)) if count]
    return f"{' and '.join(found)} of {tensor.numel()} values"


def nonfinite_weights(folder: Path) -> str | None:
    """The first tensor of ``folder``'s safetensors files that holds NaN or inf, named with its file (one pass)."""
    from safetensors import safe_open

    for path in safetensors_files(folder):
        with safe_open(str(path), framework="pt") as weights:
            for key in weights.keys():
                if found := nonfinite(weights.get_tensor(key)):
                    return f"{path.name} holds non-finite weights: tensor {key!r} has {found}"
    return None


def nonfinite_parameter(model, folder: Path | None = None) -> str | None:
    """The first parameter of a loaded ``model`` that holds NaN or inf (with its file, where an index names it)."""
    where = {}
    if folder is not None and (folder / "model.safetensors.index.json").is_file():
        with contextlib.suppress(OSError, ValueError, KeyError):
            where = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    for name, parameter in model.named_parameters():
        if found := nonfinite(parameter.detach()):
            fallback = "one of its shards" if where else "model.safetensors" if folder else "the model"
            file = where.get(name) or fallback
            return f"{file} holds non-finite weights: tensor {name!r} has {found}"
    return None
