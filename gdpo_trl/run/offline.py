"""Refuse in one line, before anything loads, a Hub model that is not cached locally when the Hub is switched off
(``HF_HUB_OFFLINE``) or cannot be reached (no network: a 90-line traceback from inside transformers before)."""

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
    if not model or Path(model).expanduser().exists():
        return
    from huggingface_hub import try_to_load_from_cache

    # The cache folder from the environment as it is now (huggingface_hub read it once, at import).
    cached = try_to_load_from_cache(model, "config.json", cache_dir=os.environ.get("HF_HUB_CACHE"))
    if isinstance(cached, str):
        return
    if hub_offline():
        raise ValueError(
            f"model {model!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1: download it first "
            f"(`hf download {model}`), unset HF_HUB_OFFLINE, or use a local folder or builtin:tiny."
        )
    if problem := hub_unreachable(model):
        raise ValueError(
            f"model {model!r} is not in the local Hugging Face cache and the Hub cannot be reached ({problem}): "
            "without a network, set HF_HUB_OFFLINE=1 and give a local model folder or a builtin: model "
            f"(builtin:tiny, builtin:smollm2-135m-instruct), or download it where there is one (`hf download {model}`)."
        )


def hub_unreachable(model: str) -> str | None:
    """Why the Hub cannot be asked for ``model``'s config (no route, no name resolution, a timeout), or None when it
    answers, whatever the answer (a missing or gated repository is transformers' to name). One request, 10 s at most:
    only made for a Hub id that is not cached."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError

    try:
        get_hf_file_metadata(hf_hub_url(model, "config.json"), timeout=10)
    except HfHubHTTPError:
        return None
    except Exception as error:  # noqa: BLE001 - the HTTP client's transport errors (httpx) share no base with OSError
        return f"{type(error).__name__}: {str(error)[:80]}"
    return None
