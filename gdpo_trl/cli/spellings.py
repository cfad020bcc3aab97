"""Old flag spellings, still read for one release: each is rewritten to its new name with a one-line warning.

Every ``gdpo`` subcommand spells its flags as TRL does (snake_case: ``--output_dir``, ``--learning_rate``); the
spellings ``gdpo compare`` and ``gdpo plot`` had before (``--out-dir``, ``--learning-rate``, ``--out``, ...) still
work and say what to type instead.
"""

from __future__ import annotations

import sys


def renamed(argv: list[str], renames: dict[str, str], prog: str) -> list[str]:
    """``argv`` with each old flag of ``renames`` (``--old`` or ``--old=value``) replaced by its new name; one warning
    line on stderr per old flag used."""
    out, warned = [], set()
    for item in argv:
        name, equals, value = item.partition("=")
        if name in renames:
            if name not in warned:
                print(f"{prog}: warning: {name} is deprecated, use {renames[name]}", file=sys.stderr, flush=True)
                warned.add(name)
            item = renames[name] + equals + value
        out.append(item)
    return out
