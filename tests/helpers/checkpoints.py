"""Checkpoint folders for tests: small but real (every file transformers writes)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file


def make_checkpoint(folder: Path, step: int, skip: tuple[str, ...] = (), truncate: tuple[str, ...] = ()) -> Path:
    """A small but real checkpoint folder (every file transformers writes), less ``skip``, with ``truncate`` cut."""
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    save_file({"w": torch.zeros(64)}, str(path / "model.safetensors"))
    (path / "config.json").write_text("{}")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch.save({"state": torch.zeros(64)}, path / name)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    for name in skip:
        (path / name).unlink()
    for name in truncate:
        data = (path / name).read_bytes()
        (path / name).write_bytes(data[: len(data) // 2])
    return path
