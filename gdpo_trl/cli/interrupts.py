"""Ctrl-C in a command running in this process: one line and exit status 130, as ``gdpo train``'s launcher says it
for a run on several processes (:func:`gdpo_trl.cli.orphans.interrupted_line`), instead of a 52-118-line
``KeyboardInterrupt`` traceback from wherever training was."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from gdpo_trl.cli.orphans import INTERRUPTED, interrupted_line


def output_dir_of(argv: list[str]) -> str | None:
    """The run's ``output_dir``: the last ``--output_dir`` flag, else the ``--config`` recipe's field (None if
    neither says; reading the recipe is best effort, it was read once already)."""
    found, config = None, None
    for i, item in enumerate(argv[:-1]):
        if item in ("--output_dir", "--output-dir"):
            found = argv[i + 1]
        elif item == "--config":
            config = argv[i + 1]
    for item in argv:
        if item.startswith(("--output_dir=", "--output-dir=")):
            found = item.split("=", 1)[1]
    if found is None and config and Path(config).is_file():
        try:
            import yaml

            found = (yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}).get("output_dir")
        except Exception:  # noqa: BLE001 - only a hint: the line is said without it
            found = None
    return str(found) if found else None


def stopped_by_ctrl_c(prog: str, argv: list[str]) -> None:
    """Print ``prog``'s one line for Ctrl-C (with where to resume, for ``gdpo train``) and exit 130."""
    if prog == "gdpo train":
        line = interrupted_line(signal.SIGINT, output_dir_of(argv)).replace("; every process stopped.", ".")
    else:
        line = f"{prog}: stopped by SIGINT (Ctrl-C); nothing more was written."
    print("\n" + line, file=sys.stderr, flush=True)  # on a line of its own: a progress bar may be mid-line
    raise SystemExit(INTERRUPTED) from None
