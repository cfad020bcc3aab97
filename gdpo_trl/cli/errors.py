"""One-line errors for the command-line tools: ``gdpo-train: error: <message>`` and exit status 2.

A mistake in the user's input (a recipe field, a data file, a checkpoint folder) is reported in one line that names
the culprit and the fix, the way argparse reports a bad flag. A traceback would only bury that line under library
frames. Anything else is a bug and keeps its full traceback.

Set ``GDPO_TRL_DEBUG=1``, or pass ``--debug`` without a value, to get the traceback of input errors too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator

from gdpo_trl.errors import InputError

__all__ = ["DEBUG_ENV", "InputError", "cli_errors", "input_stage", "one_line", "pop_debug_flag"]

DEBUG_ENV = "GDPO_TRL_DEBUG"
EXIT_INPUT_ERROR = 2  # argparse's status for a usage error


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


def pop_debug_flag(argv: list[str]) -> tuple[list[str], bool]:
    """Remove a bare ``--debug`` (no value follows) from ``argv``.

    ``TrainingArguments`` has its own ``--debug <option>`` field; that form, with a value, is left alone.
    """
    kept, debug = [], False
    for i, item in enumerate(argv):
        bare = item == "--debug" and (i + 1 == len(argv) or argv[i + 1].startswith("-"))
        if bare:
            debug = True
        else:
            kept.append(item)
    return kept, debug


def one_line(message: str) -> str:
    """``message`` with every run of whitespace (newlines included) folded to one space."""
    return " ".join(str(message).split())


def cli_errors(prog: str, input_errors: tuple[type[BaseException], ...] = ()) -> Callable:
    """Decorate a ``main(argv=None)`` so input errors print ``<prog>: error: <message>`` and exit 2.

    Input errors are :class:`InputError` plus ``input_errors`` (a tool's own exception types) and
    ``FileNotFoundError``. The decorated ``main`` resolves ``argv`` from ``sys.argv`` and strips ``--debug``.
    """
    caught = (InputError, FileNotFoundError, *input_errors)

    def decorate(main: Callable) -> Callable:
        @functools.wraps(main)
        def wrapper(argv: list[str] | None = None):
            argv, debug = pop_debug_flag(list(sys.argv[1:] if argv is None else argv))
            debug = debug or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes"}
            try:
                return main(argv)
            except caught as error:
                if debug:
                    raise
                print(f"{prog}: error: {one_line(error)}", file=sys.stderr, flush=True)
                raise SystemExit(EXIT_INPUT_ERROR) from None

        return wrapper

    return decorate
