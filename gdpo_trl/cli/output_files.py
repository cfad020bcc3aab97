"""What a command may write: a new file, outside any training run's folder.

``gdpo plot RUN --table RUN/trainer_state.json`` replaced the run's log history (with ``save_strategy: no`` its only
copy) with a Markdown table, and said "wrote table". So every output path of ``gdpo plot`` and ``gdpo compare`` is
checked here before any work:

- a file that exists is refused unless the command's ``--overwrite`` is given (one line naming the flag);
- a file in a training run's folder (one holding a checkpoint, a saved model or ``trainer_state.json``), or one the
  command reads, is refused even then: only ``gdpo train`` writes in a run's folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gdpo_trl.core.errors import InputError


def run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a training run (or a saved model): checkpoints, model weights, trainer_state.json."""
    from gdpo_trl.run.checkpoints import earlier_run

    return bool(earlier_run(folder))


def check_outside_runs(folder: Path, what: str, named: Path | None = None) -> None:
    """Refuse writing into ``folder`` when it holds a training run (``named``: the path as the user gave it)."""
    if run_folder(Path(folder).expanduser().absolute()):
        where = f"{named} is in the training run {folder}" if named is not None else f"{folder} holds a training run"
        raise InputError(f"{what}: {where}, where only gdpo train writes; write elsewhere (e.g. a new folder).")


def check_new_file(
    path: Path, what: str, overwrite: bool, reads: Iterable[Path] = (), instead: str = "choose another file"
) -> None:
    """Refuse writing ``path`` (``what``: the command and flag that name it) when it is a file the command reads
    (``reads``), lies in a run's folder, or exists and ``overwrite`` is off."""
    path = Path(path)
    target = path.expanduser().absolute()
    if any(target == Path(read).expanduser().absolute() for read in reads):
        raise InputError(f"{what}: {path} is an input of this command; write the output to another file.")
    check_outside_runs(target.parent, what, path)
    if target.exists() and not overwrite:
        raise InputError(f"{what}: {path} already exists: {instead}, or pass --overwrite to replace it.")


def check_new_files(
    paths: dict[str, Path], overwrite: bool, reads: Iterable[Path] = (), instead: str = "choose another file"
) -> None:
    """:func:`check_new_file` for each ``{what: path}``, and two outputs never share one path."""
    reads = list(reads)
    seen: dict[Path, str] = {}
    for what, path in paths.items():
        check_new_file(path, what, overwrite, reads, instead)
        target = Path(path).expanduser().absolute()
        if target in seen:
            raise InputError(f"{what} and {seen[target]} both name {path}: give them different files.")
        seen[target] = what
