"""The warm starts that ship with the package, so ``builtin:warmstart`` is the same weights on every machine.

Why: an SFT run is deterministic on one machine but not across machines. Two CPUs whose math kernels round
differently (AVX-512 against AVX2, another BLAS) train the same recipe from the same seed into different weights, so
every study row and demo figure measured from a local build would come out different elsewhere. The default warm
starts (seed 0) are small (155k parameters, about 0.6 MB each), so they are committed under ``shipped/`` with the
record of their build and the SHA-256 of their weights in ``shipped/manifest.json``. :func:`shipped_warm_start`
returns such a folder when the asked name, seed and recipe match what was shipped; any other seed or recipe is built
locally as before (:mod:`gdpo_trl.tasks.warm_starts`).

Rebuilding stays one command, and says whether this machine builds the shipped weights
(:mod:`gdpo_trl.tasks.rebuild`)::

    python -m gdpo_trl.tasks.rebuild warmstart outputs/warmstart-rebuilt   # then compares SHA-256 with the shipped
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

from gdpo_trl.core.errors import InputError

SHIPPED_DIR = Path(__file__).with_name("shipped")
MANIFEST = SHIPPED_DIR / "manifest.json"
WEIGHTS = "model.safetensors"


def weights_sha256(model_dir: str | Path) -> str:
    """SHA-256 of a model folder's weights (:func:`tensors_sha256` of its ``model.safetensors``)."""
    return tensors_sha256(Path(model_dir) / WEIGHTS)


def tensors_sha256(path: str | Path) -> str:
    """SHA-256 of the tensors of a safetensors file themselves: names, dtypes, shapes and bytes in name order.

    Not the file's bytes: the safetensors header may change with the library's version while the weights do not.
    """
    from safetensors import safe_open

    digest = hashlib.sha256()
    with safe_open(str(path), framework="pt") as weights:
        for name in sorted(weights.keys()):
            tensor = weights.get_tensor(name).contiguous()
            digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
            digest.update(tensor.view(-1).view(__import__("torch").uint8).numpy().tobytes())
    return digest.hexdigest()


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read 8 MB at a time (a converted model is 538 MB, a GGUF file up to gigabytes)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def manifest() -> dict:
    """``{name: {"seed", "build_id", "folder", "weights_sha256", "file_sha256", "built_on"}}`` of the shipped warm
    starts ({} if none ship)."""
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


class DamagedInstall(InputError, RuntimeError):
    """A shipped file that does not hash as recorded: one line for the user (an input error: the fix is theirs, a
    reinstall), still a ``RuntimeError`` for the callers that caught it as one."""


def shipped_warm_start(name: str, seed: int, build_id: str) -> Path | None:
    """The shipped folder of warm start ``name`` if one ships for this seed and build id (the hash of its recipe,
    vocabulary and build version), else None. Raises if the shipped weights do not hash as recorded (a damaged
    install)."""
    entry = manifest().get(name)
    if entry is None or entry["seed"] != seed or entry["build_id"] != build_id:
        return None
    folder = SHIPPED_DIR / entry["folder"]
    weights = folder / WEIGHTS
    if not weights.is_file() or file_sha256(weights) != entry["file_sha256"]:
        raise DamagedInstall(
            f"The shipped builtin:{name} at {weights} is missing or damaged (its SHA-256 is not the one recorded in "
            f"{MANIFEST}): reinstall gdpo-trl."
        )
    return folder


def machine() -> str:
    """The machine and libraries a build ran on, as recorded next to the shipped weights."""
    import torch
    import transformers
    import trl

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {platform.system()}, torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}"


def verify() -> int:
    """Check every shipped folder against the manifest; print one line each; return the number that fail."""
    failures = 0
    for name, entry in manifest().items():
        folder = SHIPPED_DIR / entry["folder"]
        ok = (
            file_sha256(folder / WEIGHTS) == entry["file_sha256"] and weights_sha256(folder) == entry["weights_sha256"]
        )
        failures += not ok
        print(f"{'ok' if ok else 'DAMAGED'}  builtin:{name}@{entry['seed']}  {folder}  {entry['weights_sha256'][:16]}")
    return failures
