"""Which checkpoint ``gdpo-train`` resumes from (``resume_from_checkpoint``)."""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger("gdpo_trl.train")

# Values of `resume_from_checkpoint` that mean "the last checkpoint in output_dir" rather than a path.
RESUME_LAST = {"true", "last", "yes", "1"}
RESUME_NEVER = {"", "false", "no", "0", "none"}


def find_resume_checkpoint(training_args) -> str | None:
    """The checkpoint to resume from, or None to start fresh.

    ``resume_from_checkpoint`` is ``true``/``last`` for the last ``checkpoint-<step>`` in ``output_dir`` (if there
    is none, that is logged and training starts fresh, so the same command works for the first run and for
    restarts), or a path to a checkpoint folder.
    """
    from transformers.trainer_utils import get_last_checkpoint

    value = training_args.resume_from_checkpoint
    if value is None or value is False or str(value).strip().lower() in RESUME_NEVER:
        return None
    if value is True or str(value).strip().lower() in RESUME_LAST:
        output_dir = Path(training_args.output_dir)
        last = get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None
        if last is None:
            logger.warning("resume_from_checkpoint: no checkpoint in %s, starting from scratch.", output_dir)
        else:
            logger.info("Resuming from %s.", last)
        return last
    if not Path(value).is_dir():
        raise FileNotFoundError(
            f"resume_from_checkpoint={value!r} is not a checkpoint folder; use 'true' for the last checkpoint in "
            f"output_dir ({training_args.output_dir})."
        )
    return str(value)
