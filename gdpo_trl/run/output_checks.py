"""Checks of a run's ``output_dir`` before anything is loaded: can it be written, is there room, and would
``--overwrite_output_dir`` delete something the run itself reads.

Without them a read-only folder, an ``output_dir`` that is a file, or a full disk is found when the first checkpoint
is saved (after hours, and the steps since the start are lost), and an overwrite deletes the model or checkpoint the
run was about to load. Each check raises :class:`~gdpo_trl.core.errors.InputError` in one line naming the folder and the
fix, and changes nothing on disk (the write probe is an unnamed temporary file).
"""

from __future__ import annotations

import errno
import json
import shutil
import tempfile
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.run.checkpoints import (
    MODEL_SIDE_FILES,
    check_resume_processes,
    earlier_run,
    newest_complete_checkpoint,
    wants_resume,
)

# Free space a run needs at the least while the model's size is unknown (a builtin: model not built yet, a Hub model
# not downloaded): a config, a tokenizer and a log. Once the model is resolved the check runs again with its real size
# (run/build.py); a fixed 64 MiB here refused a run, and its resume, that needed about 12 MB.
MIN_FREE_BYTES = 2**20
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError


def nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (what a ``mkdir -p`` of ``path`` starts from)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def can_write(folder: Path) -> bool:
    """Whether a file can be created in ``folder``: tried with an unnamed temporary file, so nothing shows."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def check_output_dir_writable(output_dir: str) -> None:
    """``output_dir`` (or, when it does not exist yet, the folder it will be created in) is a writable folder."""
    folder = Path(output_dir).expanduser()
    base = nearest_existing(folder)
    if not base.is_dir():
        if base == folder.absolute():
            raise InputError(f"output_dir {str(folder)!r} is a file, not a folder: choose another --output_dir.")
        raise InputError(
            f"output_dir {str(folder)!r} cannot be created: {str(base)!r} is a file, not a folder; choose another "
            "--output_dir."
        )
    if not can_write(base):
        where = "" if base == folder.absolute() else f" (it would be created in {str(base)!r})"
        raise InputError(
            f"output_dir {str(folder)!r} is not writable{where}: checkpoints and the model could not be saved. "
            "Fix its permissions, or choose another --output_dir."
        )


def model_weights_size(model_name_or_path: str | None) -> int | None:
    """Bytes of the model's weights when they are known without a download: a local folder, or a Hub model already
    in the cache; else None."""
    if not model_name_or_path or model_name_or_path.startswith("builtin:"):
        return None
    path = Path(model_name_or_path).expanduser()
    if path.is_dir():
        sizes = [p.stat().st_size for p in path.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES]
        return sum(sizes) or None
    try:
        from huggingface_hub import try_to_load_from_cache

        index = try_to_load_from_cache(model_name_or_path, "model.safetensors.index.json")
        if isinstance(index, str):
            return int(json.loads(Path(index).read_text())["metadata"]["total_size"])
        single = try_to_load_from_cache(model_name_or_path, "model.safetensors")
        if isinstance(single, str):
            return Path(single).stat().st_size
    except (ValueError, OSError, KeyError, TypeError):  # not a valid Hub id, an unreadable index
        return None
    return None


def check_free_space(output_dir: str, model_name_or_path: str | None) -> None:
    """Refuse a destination without room for the final model and one checkpoint's weights (2x the weights; the
    optimizer state needs more, so this is a lower bound), or ``MIN_FREE_BYTES`` when the size is unknown."""
    base = nearest_existing(Path(output_dir).expanduser())
    free = shutil.disk_usage(base).free
    weights = model_weights_size(model_name_or_path)
    needed = 2 * weights if weights else MIN_FREE_BYTES
    if free < needed:
        why = f"2 x the model's {human(weights)} of weights" if weights else "the least any run writes"
        raise InputError(
            f"output_dir {str(output_dir)!r} has {human(free)} free on its disk, less than the {human(needed)} this "
            f"run needs at least ({why}): free some space or choose another --output_dir."
        )


def deleted_by_overwrite(output_dir: Path) -> list[Path]:
    """What ``--overwrite_output_dir true`` would delete in ``output_dir`` (see ``checkpoints.prepare_output_dir``)."""
    names = earlier_run(output_dir)
    if not names:
        return []
    return [output_dir / n for n in names] + [output_dir / n for n in MODEL_SIDE_FILES if (output_dir / n).is_file()]


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_overwrite_keeps_inputs(output_dir: str, overwrite: bool, resume, inputs: dict) -> None:
    """Refuse ``overwrite_output_dir`` when it would delete something the run reads (``inputs``: field -> path):
    a model folder that is ``output_dir`` or one of its checkpoints, a dataset file among the deleted files."""
    if not overwrite or wants_resume(resume):  # resuming deletes nothing (checkpoints.prepare_output_dir)
        return
    folder = Path(output_dir).expanduser().resolve()
    deleted = deleted_by_overwrite(folder)
    if not deleted:
        return
    for field, value in inputs.items():
        if not value or str(value).startswith("builtin:") or not Path(str(value)).expanduser().exists():
            continue
        path = Path(str(value)).expanduser().resolve()
        if path == folder or any(inside(path, d) for d in deleted):
            raise InputError(
                f"--overwrite_output_dir true would delete the earlier run in {str(output_dir)!r}, which {field} "
                f"{str(value)!r} reads: copy it out of output_dir first, or choose another --output_dir."
            )


def check_output_dir(script_args, training_args, model_args) -> None:
    """The output folder's checks for ``gdpo train`` (called by ``validation.check_recipe``)."""
    output_dir = training_args.output_dir
    if not str(output_dir or "").strip():  # '' would write into the current folder, found only at the first save
        raise InputError("output_dir is empty: give the folder the run saves to, e.g. --output_dir outputs/my-run.")
    check_output_dir_writable(output_dir)
    check_resume_processes(training_args)  # resuming with another process count: before the processes start
    check_free_space(output_dir, model_args.model_name_or_path)
    inputs = {
        "model_name_or_path": model_args.model_name_or_path,
        "dataset_name": getattr(script_args, "dataset_name", None),
        "dataset_path": getattr(script_args, "dataset_path", None),
    }
    check_overwrite_keeps_inputs(
        output_dir, bool(getattr(training_args, "overwrite_output_dir", False)), training_args.resume_from_checkpoint,
        inputs,
    )  # fmt: skip


# How a full disk reads in what the savers raise: OSError's errno (json, shutil), torch.save's RuntimeError from
# its zip writer, safetensors' error from Rust.
DISK_FULL_WORDS = ("No space left on device", "file write failed", "StorageFull", "Disk quota exceeded")


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error``, or an exception it was raised from, says the disk (or the quota) is full."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(word in str(error) for word in DISK_FULL_WORDS):
            return True
        error = error.__cause__ or error.__context__
    return False


def disk_full_error(training_args, error: BaseException) -> InputError:
    """One line for a save that filled the disk: which checkpoint is the newest whole one, and how to go on."""
    folder = Path(training_args.output_dir)
    newest, skipped = newest_complete_checkpoint(folder, training_args.world_size, training_args.save_only_model)
    partial = f" ({', '.join(folder.name for folder, _ in skipped)} incomplete)" if skipped else ""
    kept = (
        f"{newest.name} is the newest whole checkpoint{partial}: free some space, then run the same command with "
        "--resume_from_checkpoint true"
        if newest is not None
        else f"no whole checkpoint was saved{partial}: free some space and run again"
    )
    return InputError(f"the disk filled while saving into {str(folder)!r} ({one_reason(error)}); {kept}.")


def one_reason(error: BaseException) -> str:
    while error.__cause__ is not None:
        error = error.__cause__
    return getattr(error, "strerror", None) or str(error).splitlines()[0][:120]
