"""What every ``gdpo`` subcommand's argument parser does alike: one-line errors and negative numbers read as values.

argparse prints its whole usage (hundreds of lines for ``gdpo train``) before a bad flag's message, and reads
``--learning_rate -1e-3`` as two options because its test for a negative number knows no exponent (Python 3.11:
``-\\d+`` or ``-\\d*.\\d+`` only). :class:`OneLineErrors` turns argparse's message into an
:class:`~gdpo_trl.core.errors.InputError`, which the command prints in one line; :func:`read_negative_numbers` widens
the test (argparse keeps it in a private attribute, set in its ``__init__``; the parsers here have no option that looks
like a number, so any such string is a value).
"""

from __future__ import annotations

import re

from gdpo_trl.core.errors import InputError

# -1, -1.5, -.5, -1e-3, -1.5E+4, -inf, -nan: what float() reads, with a leading minus.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


def read_negative_numbers(parser) -> None:
    """Make ``parser`` read ``-1e-3`` (and ``-inf``) as a value, as it already reads ``-1`` and ``-0.5``."""
    parser._negative_number_matcher = NEGATIVE_NUMBER


class OneLineErrors:
    """Mixin for an ``argparse.ArgumentParser``: a usage error raises an InputError instead of printing the usage."""

    def error(self, message: str):
        raise InputError(f"{reword(message)} (see {self.prog} --help)")


def reword(message: str) -> str:
    """argparse's message, said as a fix where a value is missing (``--learning_rate needs a value``)."""
    missing = re.fullmatch(r"argument (\S+?)(?:/\S+)?: expected (?:one|at least one) argument", message)
    if missing:
        return f"{missing.group(1)} needs a value"
    return re.sub(r"^argument (\S+?)(?:/\S+)?: ", r"\1: ", message)  # --use_cpu/--use-cpu: -> --use_cpu:
