"""One-line errors for every ``gdpo`` subcommand: ``gdpo train: error: <message>`` and exit status 2.

A mistake in the user's input (a recipe field, a data file, a checkpoint folder: any
:class:`~gdpo_trl.core.errors.InputError`, or a file that is not there) is reported in one line that names the
culprit and the fix, the way argparse reports a bad flag. A traceback would only bury that line under library
frames. A reward function that raised (or called ``sys.exit``/``os._exit``) is the user's code: one line naming it
and the exception, exit status 1. Ctrl-C is one line and exit status 130 (:mod:`gdpo_trl.cli.interrupts`). Anything
else is a bug and keeps its full traceback.

Set ``GDPO_TRL_DEBUG=1``, or pass ``--debug`` without a value, to get the traceback of these errors too (the flag
also sets the variable, so the processes a launch starts show theirs).

In a process started by ``gdpo train``'s launcher, the line (or, for a bug, the traceback) is recorded for the
launcher to print once for the whole run instead of being printed (:mod:`gdpo_trl.cli.run_records`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator

from gdpo_trl.cli.interrupts import stopped_by_ctrl_c
from gdpo_trl.cli.orphans import LAUNCHER_ENV
from gdpo_trl.cli.run_records import record_error
from gdpo_trl.core.errors import GDPOError, InputError

__all__ = ["DEBUG_ENV", "cli_errors", "one_line", "pop_debug_flag"]

DEBUG_ENV = "GDPO_TRL_DEBUG"
EXIT_INPUT_ERROR = 2  # argparse's status for a usage error
EXIT_FAILURE = 1  # the run failed for another reason (a reward function raised, a bug)


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
    """Decorate a ``main(argv=None)`` so input errors print ``<prog>: error: <message>`` and exit 2, and other
    :class:`~gdpo_trl.core.errors.GDPOError` (a reward function that raised) print one line and exit 1.

    The decorated ``main`` resolves ``argv`` from ``sys.argv`` and strips ``--debug``. Under a multi-process
    launcher only global rank 0 prints an input error (every rank meets the same one; every rank exits 2); a reward
    error names its rank and is printed where it happened. Under ``gdpo train``'s own launcher nothing is printed
    here: the launcher prints the run's first error (see the module docstring).
    """

    def decorate(main: Callable) -> Callable:
        @functools.wraps(main)
        def wrapper(argv: list[str] | None = None):
            argv, flag = pop_debug_flag(list(sys.argv[1:] if argv is None else argv))
            debug = flag or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes"}
            try:
                # The flag is gone from argv: a command this one runs (gdpo train's, each process's) reads the variable.
                with debug_environment(debug):
                    return main(argv)
            except (InputError, FileNotFoundError) as error:
                if debug:
                    raise
                # Under a launcher every process meets the same mistake: one line for the run, from rank 0.
                report(f"{prog}: error: {one_line(error)}", EXIT_INPUT_ERROR, os.environ.get("RANK", "0") == "0")
            except GDPOError as error:
                if debug:
                    raise
                report(f"{prog}: error: {one_line(error)}", EXIT_FAILURE, True)
            except KeyboardInterrupt:
                if debug or os.environ.get(LAUNCHER_ENV):  # a launched process: its launcher says the one line
                    raise
                stopped_by_ctrl_c(prog, argv)
            except Exception as error:  # a bug: its traceback, once for the run under gdpo train's launcher
                if debug or not record_error(f"{prog}: error: {one_line(f'{type(error).__name__}: {error}')}",
                                             EXIT_FAILURE, error):  # fmt: skip
                    raise
                raise SystemExit(EXIT_FAILURE) from None

        return wrapper

    return decorate


@contextlib.contextmanager
def debug_environment(debug: bool) -> Iterator[None]:
    """With ``debug``, set :data:`DEBUG_ENV` while inside (then restore it)."""
    before = os.environ.get(DEBUG_ENV)
    if debug:
        os.environ[DEBUG_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEBUG_ENV, None)
        else:
            os.environ[DEBUG_ENV] = before


def report(line: str, code: int, printed_here: bool) -> None:
    """Hand ``line`` to ``gdpo train``'s launcher, else print it (where ``printed_here``); exit with ``code``."""
    if not record_error(line, code) and printed_here:
        if _progress_bar_open():
            line = "\n" + line  # not at the end of the bar's line
        print(line, file=sys.stderr, flush=True)
    raise SystemExit(code) from None


def _progress_bar_open() -> bool:
    """Whether a tqdm progress bar (training's) is on screen, so the cursor is at the end of its line."""
    tqdm = sys.modules.get("tqdm.std")
    return bool(tqdm is not None and getattr(tqdm.tqdm, "_instances", None))
