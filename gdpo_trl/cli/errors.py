"""One-line errors for every ``gdpo`` subcommand: ``gdpo train: error: <message>`` and exit status 2.

A mistake in the user's input (a recipe field, a data file, a checkpoint folder: any
:class:`~gdpo_trl.core.errors.InputError`, or a file that is not there) is reported in one line that names the
culprit and the fix, the way argparse reports a bad flag. A traceback would only bury that line under library
frames. Anything else is a bug and keeps its full traceback.

Set ``GDPO_TRL_DEBUG=1``, or pass ``--debug`` without a value, to get the traceback of input errors too.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

from gdpo_trl.core.errors import InputError

__all__ = ["DEBUG_ENV", "cli_errors", "one_line", "pop_debug_flag"]

DEBUG_ENV = "GDPO_TRL_DEBUG"
EXIT_INPUT_ERROR = 2  # argparse's status for a usage error


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


def cli_errors(prog: str) -> Callable:
    """Decorate a ``main(argv=None)`` so input errors print ``<prog>: error: <message>`` and exit 2.

    The decorated ``main`` resolves ``argv`` from ``sys.argv`` and strips ``--debug``. Under a multi-process
    launcher only global rank 0 prints the line (every rank exits 2).
    """

    def decorate(main: Callable) -> Callable:
        @functools.wraps(main)
        def wrapper(argv: list[str] | None = None):
            argv, flag = pop_debug_flag(list(sys.argv[1:] if argv is None else argv))
            debug = flag or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes"}
            before = os.environ.get(DEBUG_ENV)
            if flag:  # the flag is gone from argv: a command this one runs (gdpo train's, each process's) reads this
                os.environ[DEBUG_ENV] = "1"
            try:
                return main(argv)
            except (InputError, FileNotFoundError) as error:
                if debug:
                    raise
                # Under a launcher every process meets the same mistake: one line for the run, from rank 0.
                if os.environ.get("RANK", "0") == "0":
                    print(f"{prog}: error: {one_line(error)}", file=sys.stderr, flush=True)
                raise SystemExit(EXIT_INPUT_ERROR) from None
            finally:
                if flag and before is None:
                    os.environ.pop(DEBUG_ENV, None)
                elif flag:
                    os.environ[DEBUG_ENV] = before

        return wrapper

    return decorate
