"""Where a model folder's weights came from, recorded next to them: a checkpoint converted from a GGUF file
(:mod:`gdpo_trl.models.gguf`) or trained from one, for the model cards of runs trained from it
(:mod:`gdpo_trl.cli.model_card`)."""

from __future__ import annotations

import json
from pathlib import Path

SOURCE_RECORD = "gguf_source.json"  # written next to a converted checkpoint: the GGUF file it came from


def source_record(folder: Path) -> dict | None:
    """The GGUF origin recorded in a converted (or derived) checkpoint ``folder``, or None."""
    try:
        return json.loads((Path(folder) / SOURCE_RECORD).read_text())
    except (OSError, ValueError):
        return None


def describe_source(record: dict) -> str:
    """One phrase for a model card: the model's name (when known) and the GGUF file it was converted from."""
    name = f"{record['model']}, " if record.get("model") else ""
    package = f" of {record['package']}" if record.get("package") else ""
    return f"{name}converted from the GGUF file `{record['gguf_file']}`{package}"
