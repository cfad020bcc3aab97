"""gdpo compare's runs are gdpo train's, so an error one of them meets advises gdpo train's flags
(``--overwrite_output_dir true``, ``--model_name_or_path``), which ``gdpo compare`` does not accept. Said again in
compare's terms: a flag it accepts stays, one with a counterpart becomes that (``--model``), and any other becomes the
recipe field it sets (``overwrite_output_dir: true`` in the --config recipe)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from gdpo_trl.core.errors import InputError

__all__ = ["COUNTERPARTS", "accepted_flags", "advised_flags", "compare_terms", "in_compare_terms"]

# gdpo train's flags that gdpo compare sets under another name.
COUNTERPARTS = {"--model_name_or_path": "--model", "--max_steps": "--steps"}
# A flag and, where one follows, its value: true/false, a number, a quoted string or a path.
FLAG = re.compile(r"--([a-z][a-z0-9_]*)(?: (true|false|-?\d[\w.]*|'[^']*'|[^\s,;()']*/[^\s,;()']*))?")


def advised_flags(message: str) -> list[str]:
    """Every ``--flag`` a message names."""
    return ["--" + match.group(1) for match in FLAG.finditer(message)]


def in_compare_terms(message: str, accepted: set[str]) -> str:
    """``message`` with every flag outside ``accepted`` replaced by compare's counterpart or by its recipe field."""

    def swap(match: re.Match) -> str:
        flag, value = "--" + match.group(1), match.group(2)
        if flag in accepted:
            return match.group(0)
        if flag in COUNTERPARTS:
            return COUNTERPARTS[flag] + (f" {value}" if value else "")
        field = f"{match.group(1)}: {value}" if value else match.group(1)
        return f"`{field}` in the --config recipe"

    return FLAG.sub(swap, message)


@contextlib.contextmanager
def compare_terms(accepted: set[str]) -> Iterator[None]:
    """Re-raise an input error met inside with its advice in compare's terms."""
    try:
        yield
    except InputError as error:
        said = in_compare_terms(str(error), accepted)
        if said == str(error):
            raise
        raise InputError(said) from error


def accepted_flags(parser) -> set[str]:
    """The flags ``parser`` reads, and ``--debug`` (every gdpo command strips it first)."""
    return {flag for flag in parser._option_string_actions if flag.startswith("--")} | {"--debug"}
