"""The exception for mistakes in what the user gave, shared by the library and the command-line tools."""


class InputError(ValueError):
    """A mistake in the user's input (recipe field, flag, data file, output folder, reward function's output).

    The command-line tools print it in one line without a traceback (see :mod:`gdpo_trl.cli.errors`). A
    ``ValueError`` so that Python callers catching ``ValueError`` keep working.
    """
