"""Refuse in one line, before anything loads, when the Hub is switched off and a Hub model is not cached locally."""

from __future__ import annotations

import os
from pathlib import Path

_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set now (the recipe's ``env:`` block sets it after huggingface_hub read it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def check_model_available_offline(model: str) -> None:
    """With the Hub off, a Hub id must be in the local Hugging Face cache: else a ``ValueError`` saying what to do.

    Local folders (and built-in models, already resolved to folders) pass; so does everything when the Hub is on.
    """
    if not hub_offline() or not model or Path(model).expanduser().exists():
        return
    from huggingface_hub import try_to_load_from_cache

    # The cache folder from the environment as it is now (huggingface_hub read it once, at import).
    cached = try_to_load_from_cache(model, "config.json", cache_dir=os.environ.get("HF_HUB_CACHE"))
    if not isinstance(cached, str):
        raise ValueError(
            f"model {model!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1: download it first "
            f"(`hf download {model}`), unset HF_HUB_OFFLINE, or use a local folder or builtin:tiny."
        )
