"""Output folders and checkpoints: never train over an earlier run by accident, resume only from a whole checkpoint.

How transformers 5 writes ``checkpoint-<step>`` (``Trainer._save_checkpoint``): straight into the final folder, no
temporary folder and no rename, in this order: weights (``model.safetensors`` + config + tokenizer), then
``optimizer.pt``, ``scheduler.pt``, ``rng_state.pth`` (``rng_state_<rank>.pth`` with several processes) and
``trainer_state.json`` last. A process killed during a save therefore leaves a folder with the right name that is
missing its later files or holds a truncated one. ``get_last_checkpoint`` picks it anyway (it only looks at folder
names), and resuming then fails inside the library or, for a missing optimizer, scheduler or RNG file, resumes
silently with a different trajectory. So a checkpoint counts as complete here only when every file is present and
readable: JSON that parses, safetensors whose size matches its header, torch zip archives whose directory (stored
at the end of the file) reads and whose every record matches its checksum.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.storage.final_model import RECORD_NAME, no_checkpoint_error
from gdpo_trl.storage.weight_files import (
    nonfinite_weights,
    safetensors_problem,
    scannable,
    torch_file_problem,
    weights_problem,
)

__all__ = ["safetensors_problem", "torch_file_problem", "weights_problem"]  # re-exported: checkpoint checks use them

logger = logging.getLogger("gdpo_trl.run.checkpoints")

CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")
RESUME_LAST = {"true", "last", "yes", "1"}
RESUME_NEVER = {"", "false", "no", "0", "none"}
# Files `save_model` and `save_state` write at the top of output_dir: an earlier run's final model.
SAVED_RUN_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "adapter_model.safetensors",
    "adapter_config.json",
    "trainer_state.json",
    "training_args.bin",
)
# Files written with the model that belong to it, removed with it on overwrite.
MODEL_SIDE_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    RECORD_NAME,
)


# --- is a checkpoint whole? ----------------------------------------------------------------------------------------


def checkpoint_problems(folder: Path, world_size: int = 1, save_only_model: bool = False) -> list[str]:
    """Everything missing or unreadable in ``checkpoint-<step>`` folder ``folder``; empty when it can be resumed."""
    if not folder.is_dir() or not any(folder.iterdir()):
        return ["empty folder"]
    problems = []
    state = folder / "trainer_state.json"
    if not state.is_file():
        problems.append("no trainer_state.json (the save was interrupted)")
    else:
        try:
            step = json.loads(state.read_text())["global_step"]
            match = CHECKPOINT_RE.match(folder.name)
            if match and int(match.group(1)) != step:
                problems.append(f"trainer_state.json is for step {step}")
        except (OSError, ValueError, KeyError, TypeError):
            problems.append("trainer_state.json is truncated or unreadable")
    # NaN/inf weights (a run that diverged) resume to NaN losses and fail in sampling: skipped like a damaged save.
    problems.append(weights_problem(folder) or (scannable(folder) and nonfinite_weights(folder)))
    if not save_only_model:
        sharded = any(folder.glob("global_step*")) or any(folder.glob("optimizer_*"))
        if not sharded:
            for name in ("optimizer.pt", "scheduler.pt"):
                path = folder / name
                problems.append(torch_file_problem(path) if path.is_file() else f"no {name}")
        saved = saved_process_count(folder)
        if saved and saved != world_size:  # a resume restores each rank's RNG: it needs the count the run had
            return [f"{PROCESSES_PROBLEM} {saved} process{'es' * (saved > 1)}"]
        rng_names = ["rng_state.pth"] if world_size == 1 else [f"rng_state_{i}.pth" for i in range(world_size)]
        for name in rng_names:
            path = folder / name
            problems.append(torch_file_problem(path) if path.is_file() else f"no {name}")
    return [p for p in problems if p]


PROCESSES_PROBLEM = "saved by a run on"


def saved_process_count(folder: Path) -> int | None:
    """How many processes the run that saved checkpoint ``folder`` had (from its RNG files), or None if unknown."""
    ranks = [p for p in folder.glob("rng_state_*.pth") if p.stem.split("_")[-1].isdigit()]
    return len(ranks) if ranks else (1 if (folder / "rng_state.pth").is_file() else None)


def process_count_refusal(folder: Path, problems: list[str], world_size: int) -> InputError | None:
    """The one line for resuming ``folder`` with another process count than it was saved with, else None."""
    if not (problems and problems[0].startswith(PROCESSES_PROBLEM)):
        return None
    saved = saved_process_count(folder)
    return InputError(
        f"resume_from_checkpoint: {folder} was {problems[0]} and this run has {world_size}: a resume restores each "
        f"process's state, so it needs the same count. Run it with --num_processes {saved}, or train a new run from "
        f"this checkpoint (--model_name_or_path {folder} and a new --output_dir). Nothing was changed."
    )


def check_resume_processes(training_args) -> None:
    """Before any process starts (``gdpo train``'s launcher parses with the launch's ``world_size``): resuming a
    checkpoint whose run had another process count is refused in one line, not after every process loaded."""
    resume = training_args.resume_from_checkpoint
    if not wants_resume(resume) or training_args.save_only_model:
        return
    last = resume is True or str(resume).strip().lower() in RESUME_LAST
    folder = next(iter(list_checkpoints(Path(training_args.output_dir))), None) if last else Path(str(resume))
    saved = saved_process_count(folder) if folder is not None and folder.is_dir() else None
    if saved and saved != training_args.world_size:
        problem = f"{PROCESSES_PROBLEM} {saved} process{'es' * (saved > 1)}"
        raise process_count_refusal(folder, [problem], training_args.world_size)


def list_checkpoints(output_dir: Path) -> list[Path]:
    """``checkpoint-<step>`` folders in ``output_dir``, newest (highest step) first."""
    if not output_dir.is_dir():
        return []
    found = [p for p in output_dir.iterdir() if p.is_dir() and CHECKPOINT_RE.match(p.name)]
    return sorted(found, key=lambda p: int(CHECKPOINT_RE.match(p.name).group(1)), reverse=True)


def newest_complete_checkpoint(
    output_dir: Path, world_size: int = 1, save_only_model: bool = False
) -> tuple[Path | None, list[tuple[Path, list[str]]]]:
    """The newest complete checkpoint in ``output_dir`` (or None) and the newer ones skipped, with their problems."""
    skipped = []
    for folder in list_checkpoints(output_dir):
        problems = checkpoint_problems(folder, world_size, save_only_model)
        if not problems:
            return folder, skipped
        skipped.append((folder, problems))
    return None, skipped


def describe_skipped(skipped: list[tuple[Path, list[str]]]) -> str:
    return "; ".join(f"{folder.name} ({', '.join(problems)})" for folder, problems in skipped)


# --- the output folder -----------------------------------------------------------------------------------------------


def earlier_run(output_dir: Path) -> list[str]:
    """Names of an earlier run's checkpoints and final-model files in ``output_dir`` (empty when there is none)."""
    if not output_dir.is_dir():
        return []
    files = [name for name in SAVED_RUN_FILES if (output_dir / name).is_file()]
    return [p.name for p in reversed(list_checkpoints(output_dir))] + files


def wants_resume(value) -> bool:
    return value is not None and value is not False and str(value).strip().lower() not in RESUME_NEVER


def prepare_output_dir(output_dir: str, resume_from_checkpoint, overwrite: bool, is_main_process: bool = True) -> None:
    """Refuse to train into a folder holding an earlier run unless resuming; with ``overwrite``, delete that run.

    Only the earlier run's checkpoints and final-model files are deleted (other files the user keeps there stay).
    Every process checks (so all of them stop on a refusal); only the main process deletes.
    """
    folder = Path(output_dir)
    found = earlier_run(folder)
    if not found:
        return
    if wants_resume(resume_from_checkpoint):
        check_resume_target(folder, found, resume_from_checkpoint, overwrite)
        return
    if not overwrite:
        shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
        # Resuming needs a checkpoint: a run that saved only its final model (save_strategy "no") cannot resume.
        resume = "Resume it with --resume_from_checkpoint true, or " if list_checkpoints(folder) else ""
        raise InputError(
            f"output_dir {str(folder)!r} already holds a run ({shown}). {resume}choose another --output_dir, or "
            "start over with --overwrite_output_dir true (deletes that run's checkpoints and model first)."
        )
    if not is_main_process:
        return
    for name in found + [n for n in MODEL_SIDE_FILES if (folder / n).is_file()]:
        path = folder / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    logger.warning("overwrite_output_dir: deleted the earlier run in %s (%s).", folder, ", ".join(found))


def check_resume_target(folder: Path, found: list[str], resume_from_checkpoint, overwrite: bool) -> None:
    """Resuming into ``folder``, which holds a run (``found``): refuse ``overwrite`` (it would delete what the resume
    reads) and a checkpoint from elsewhere (training it on would write over this folder's run)."""
    if overwrite:
        raise InputError(
            f"--overwrite_output_dir true and --resume_from_checkpoint contradict each other: overwriting would "
            f"delete the run in {str(folder)!r} ({', '.join(found[:4])}) that the resume reads. Drop one of the two."
        )
    if str(resume_from_checkpoint).strip().lower() in RESUME_LAST or resume_from_checkpoint is True:
        return
    checkpoint = Path(str(resume_from_checkpoint)).expanduser().resolve()
    if folder.resolve() not in checkpoint.parents:
        raise InputError(
            f"output_dir {str(folder)!r} already holds another run ({', '.join(found[:4])}); resuming "
            f"{str(resume_from_checkpoint)!r}, which is not one of its checkpoints, would write over it. Use that "
            f"checkpoint's own run folder as --output_dir ({str(checkpoint.parent)!r}), or an empty one."
        )


def resolve_resume_checkpoint(
    output_dir: str, resume_from_checkpoint, world_size: int = 1, save_only_model: bool = False
) -> str | None:
    """The checkpoint to resume from, or None to start fresh.

    ``true``/``last``: the newest complete ``checkpoint-<step>`` in ``output_dir``, logging in one line the newer
    ones skipped and why. None there: start fresh, unless the folder holds checkpoints that are all broken or a
    finished run's model (an error, so nothing is overwritten). A path: that checkpoint, which must be complete.
    """
    if not wants_resume(resume_from_checkpoint):
        return None
    if resume_from_checkpoint is True or str(resume_from_checkpoint).strip().lower() in RESUME_LAST:
        folder = Path(output_dir)
        checkpoint, skipped = newest_complete_checkpoint(folder, world_size, save_only_model)
        if skipped and checkpoint is not None:
            logger.warning("Resuming from %s; skipped incomplete %s.", checkpoint.name, describe_skipped(skipped))
        if checkpoint is not None:
            if not skipped:
                logger.info("Resuming from %s.", checkpoint)
            return str(checkpoint)
        if skipped and (refusal := process_count_refusal(*skipped[0], world_size)):
            raise refusal
        if skipped or earlier_run(folder):
            raise no_checkpoint_error(folder, describe_skipped(skipped))
        logger.warning("resume_from_checkpoint: no checkpoint in %s, starting from scratch.", folder)
        return None
    path = Path(str(resume_from_checkpoint))
    if not path.is_dir():
        raise InputError(
            f"resume_from_checkpoint={str(resume_from_checkpoint)!r} is not a checkpoint folder; use 'true' for the "
            f"newest complete checkpoint in output_dir ({output_dir})."
        )
    problems = checkpoint_problems(path, world_size, save_only_model)
    if refusal := process_count_refusal(path, problems, world_size):
        raise refusal
    if problems:
        raise InputError(f"resume_from_checkpoint {str(path)!r} is incomplete: {', '.join(problems)}.")
    return str(path)


def prepare_run(training_args) -> str | None:
    """Check (and with ``overwrite_output_dir`` clear) ``output_dir``; return the checkpoint to resume from or None.

    Call it before the model is built, so a refusal or a broken checkpoint costs seconds.
    """
    resume = training_args.resume_from_checkpoint
    prepare_output_dir(
        training_args.output_dir,
        resume,
        bool(getattr(training_args, "overwrite_output_dir", False)),
        is_main_process=training_args.process_index == 0,
    )
    return resolve_resume_checkpoint(
        training_args.output_dir,
        resume,
        world_size=training_args.world_size,
        save_only_model=training_args.save_only_model,
    )


def prepare_output(script_args, training_args, model_args) -> tuple[str | None, list]:
    """``output_dir`` made ready for this run: held (one run per folder, :func:`gdpo_trl.run.run_lock.hold_output_dir`),
    an earlier run refused or the newest complete checkpoint found (:func:`prepare_run`), a resumed run's recipe
    compared with the one it recorded (:func:`gdpo_trl.run.resume_settings.check_resume_settings`). Returns that
    checkpoint (None: from the start) and the trainer's callbacks that record the recipe in every checkpoint (and,
    where a resume changed the run's length, restart its schedule)."""
    from gdpo_trl.run.recipe_record import NewRunLength, RecipeRecord  # imports transformers
    from gdpo_trl.run.resume_settings import LENGTH, check_resume_settings, recipe_record
    from gdpo_trl.run.run_lock import hold_output_dir

    hold_output_dir(training_args)  # one run per output_dir: a second run into it is refused, naming this one
    checkpoint = prepare_run(training_args)  # refuses to overwrite a run; the newest complete checkpoint to resume
    applied = check_resume_settings(checkpoint, script_args, training_args, model_args)  # finished run, changes
    recipe = recipe_record(script_args, training_args, model_args)  # before the trainer sets fields of its own
    return checkpoint, [RecipeRecord(recipe)] + ([NewRunLength()] if set(applied) & set(LENGTH) else [])
