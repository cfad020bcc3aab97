"""gdpo-trl's one error hierarchy, shared by the library and the ``gdpo`` command.

- :class:`GDPOError`: the base of every error gdpo-trl raises on purpose.
- :class:`InputError`: a mistake in what the user gave (recipe field, flag, data file, output folder, a reward
  function's output, a missing optional package). The ``gdpo`` command prints it in one line without a traceback
  (:mod:`gdpo_trl.cli.errors`). Also a ``ValueError``, so Python callers catching ``ValueError`` keep working.
  Subclasses say where: ``gdpo_trl.eval.settings.EvaluationInputError``, ``gdpo_trl.eval.bfcl.BFCLNotInstalledError``,
  ``gdpo_trl.trainer.reward_checks.RewardOutputError`` and ``RewardTimeoutError``.
- ``gdpo_trl.trainer.reward_checks.RewardFunctionError``: a reward function raised; the user's code, not their input.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class GDPOError(Exception):
    """Base class of the errors gdpo-trl raises on purpose."""


class InputError(GDPOError, ValueError):
    """A mistake in the user's input, reported in one line that names the culprit and the fix."""


@contextlib.contextmanager
def input_stage(what: str | None = None, *also: type[BaseException]) -> Iterator[None]:
    """Treat ``ValueError``/``TypeError``/``FileNotFoundError`` raised inside as input errors.

    For code that only reads the user's input (parsing the recipe, checking data) but raises plain exceptions, such
    as TRL's own ``GRPOConfig`` checks. ``what`` prefixes the message (e.g. ``"recipe"``); ``also`` adds exception
    types, e.g. ``OSError`` around loading a model or dataset (not found, Hub unreachable offline).
    """
    try:
        yield
    except InputError:
        raise
    except (ValueError, TypeError, FileNotFoundError, NotADirectoryError, *also) as error:
        prefix = f"{what}: " if what else ""
        raise InputError(f"{prefix}{error}") from error


def no_chat_template(model_path: str) -> str:
    """The refusal of a tokenizer without a chat template (``gdpo train``'s and ``gdpo eval``'s)."""
    return (
        f"the tokenizer of {model_path!r} has no chat template, and the data's prompts are conversations: save "
        "one with the tokenizer (chat_template.jinja), or use a model saved with one (an instruct model)."
    )
