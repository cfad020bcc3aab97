"""Saves that cannot lie: the final model is written under a temporary name, renamed into place when whole, and
recorded; a resume checks it against that record before it trusts it.

Why: transformers' ``Trainer.save_model(output_dir)`` writes ``model.safetensors`` straight into ``output_dir``, and
``save_state`` writes the top ``trainer_state.json`` after it. A kill during the first left a truncated model next to
a checkpoint at the same step, and resuming then said the run was finished ("Lost"). So:

- :func:`publish` moves a folder written in full (``output_dir/.final-model.partial``) into ``output_dir`` file by
  file with ``os.replace`` (atomic on one file system), the old record removed first and the new one
  (:data:`RECORD_NAME`: each file's size and SHA-256) written last: a record always describes files that are whole;
- :func:`final_model_problem` says what is wrong with ``output_dir``'s model: a file that differs from the record,
  else (a run saved before records existed) weights whose size does not add up
  (:func:`gdpo_trl.storage.weight_files.weights_problem`);
- :func:`restore_from_checkpoint` copies a checkpoint's model files (the same step's weights) into ``output_dir``
  the same way.

No torch here: the resume checks run before the model loads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.storage.weight_files import weights_problem

logger = logging.getLogger("gdpo_trl.storage.final_model")

RECORD_NAME = "saved_model.json"
PARTIAL_NAME = ".final-model.partial"  # where the final model is written before it is moved into output_dir
# A checkpoint's files that are training state, not the model: never copied into output_dir.
TRAINING_STATE = ("optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state", "entropy_ctrl_state.json", "latest")
WEIGHT_NAMES = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors", "pytorch_model.bin")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_files(folder: Path) -> dict[str, dict]:
    """``{name: {"bytes": size, "sha256": hash}}`` for every file directly in ``folder``."""
    return {p.name: {"bytes": p.stat().st_size, "sha256": sha256(p)} for p in sorted(folder.iterdir()) if p.is_file()}


def has_final_model(output_dir: Path) -> bool:
    """Whether ``output_dir`` holds (or claims, through its record) a saved final model."""
    return (output_dir / RECORD_NAME).is_file() or any((output_dir / name).is_file() for name in WEIGHT_NAMES)


def read_record(output_dir: Path) -> dict | None:
    try:
        files = json.loads((output_dir / RECORD_NAME).read_text())["files"]
        return files if isinstance(files, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def final_model_problem(output_dir: Path) -> str | None:
    """What is wrong with the final model in ``output_dir`` (naming the file), or None when it is whole."""
    record = read_record(output_dir)
    if record is None and (output_dir / RECORD_NAME).is_file():
        return f"{output_dir / RECORD_NAME} is unreadable"
    for name, saved in (record or {}).items():
        path = output_dir / name
        if not path.is_file():
            return f"{path} is missing"
        size = path.stat().st_size
        if size != saved.get("bytes"):
            return f"{path} is {size:,} bytes where the run saved {saved.get('bytes'):,}"
        if name in WEIGHT_NAMES or name.endswith(".safetensors"):  # hashing the small side files is not worth it
            if sha256(path) != saved.get("sha256"):
                return f"{path} differs from what the run saved (SHA-256)"
    if record is None:
        problem = weights_problem(output_dir)
        return f"{output_dir}/{problem}" if problem else None
    return None


def _write_record(files: dict, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps({"files": files}, indent=1) + "\n")
    os.replace(partial, target)


def publish(staged: Path, output_dir: Path) -> dict:
    """Move every file of ``staged`` (written in full) into ``output_dir`` and record them; remove ``staged``.
    Returns the record."""
    files = describe_files(staged)
    (output_dir / RECORD_NAME).unlink(missing_ok=True)  # from here until the new one exists, nothing is vouched for
    for path in sorted(staged.iterdir()):  # the files, and folders a library adds (DeepSpeed's global_step*)
        target = output_dir / path.name
        if path.is_dir() and target.is_dir():
            shutil.rmtree(target)
        os.replace(path, target)
    _write_record(files, output_dir / RECORD_NAME)
    staged.rmdir()
    return files


def is_model_file(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(TRAINING_STATE) and path.name != "training_args.bin"


def restore_from_checkpoint(checkpoint: Path, output_dir: Path) -> dict:
    """Copy ``checkpoint``'s model files (weights, config, tokenizer, card) into ``output_dir`` under a temporary
    name, then publish them (see :func:`publish`). Returns the new record."""
    staged = output_dir / PARTIAL_NAME
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir()
    for path in checkpoint.iterdir():
        if is_model_file(path) and path.name != "trainer_state.json":
            shutil.copy2(path, staged / path.name)
    return publish(staged, output_dir)


def remove_partial(output_dir: Path) -> None:
    """Remove what a killed save left under a temporary name (never a file the run vouched for)."""
    shutil.rmtree(output_dir / PARTIAL_NAME, ignore_errors=True)
    (output_dir / (RECORD_NAME + ".partial")).unlink(missing_ok=True)


def no_checkpoint_error(folder: Path, skipped: str) -> InputError:
    """Resuming ``folder``, which has no complete checkpoint: a whole final model is kept (and named); only a run
    with neither is called unrecoverable, and only then is a command that deletes it given."""
    checkpoints = f"no complete checkpoint ({skipped})" if skipped else "no checkpoint (save_strategy 'no'?)"
    problem = final_model_problem(folder) if has_final_model(folder) else f"no final model in {folder}"
    if problem is None:
        return InputError(
            f"resume_from_checkpoint: {str(folder)!r} holds {checkpoints} to resume from, but its final model is "
            f"whole; nothing was changed. To train on from that model, start a new run with --model_name_or_path "
            f"{folder} and a new --output_dir."
        )
    return InputError(
        f"resume_from_checkpoint: {str(folder)!r} holds {checkpoints} and {problem}: the run cannot be recovered. "
        "Start over with --resume_from_checkpoint false --overwrite_output_dir true (this deletes it), or choose "
        "another --output_dir."
    )


def settle_final_model(output_dir: Path, checkpoint: Path, checkpoint_step: int, reached: int, main: bool) -> str:
    """A resume found the run finished at step ``reached``: make sure its final model is whole before saying so.

    Returns ``"whole"``; ``"restored"`` when a missing or damaged final model was copied back from ``checkpoint``
    (which holds the same step; only the main process writes); ``"retrain"`` when ``checkpoint`` is older, so the
    resume trains the last steps again and saves the model anew. Each case but the first logs one line.
    """
    problem = final_model_problem(output_dir) if has_final_model(output_dir) else f"no final model in {output_dir}"
    if problem is None:
        return "whole"
    if main:
        remove_partial(output_dir)
    if checkpoint_step >= reached:
        if main:
            restore_from_checkpoint(checkpoint, output_dir)
            if not (output_dir / "trainer_state.json").is_file():
                shutil.copy2(checkpoint / "trainer_state.json", output_dir / "trainer_state.json")
            logger.warning("%s: restored the final model from %s (the same step %s).", problem, checkpoint, reached)
        return "restored"
    if main:
        logger.warning(
            "%s: training steps %s-%s again from %s to save the final model anew.",
            problem,
            checkpoint_step + 1,
            reached,
            checkpoint.name,
        )
    return "retrain"
