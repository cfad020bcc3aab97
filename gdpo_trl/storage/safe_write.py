"""Files written whole or not at all, and a write that fails said in one line naming the path.

``gdpo eval``, ``gdpo plot`` and the model cache wrote straight to their final names: a read-only folder, a full
disk or a path that is a folder ended in 23-36 lines of traceback, and a write cut short left a half file (or a
``.partial`` one) behind. Here a file is written beside its final name as ``.<name>.partial`` and renamed into place
(``os.replace``, atomic on one file system); on any ``OSError`` the partial file is removed and an
:class:`~gdpo_trl.core.errors.InputError` says which path, why in words, and what to do.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gdpo_trl.core.errors import InputError

REASONS = {
    errno.ENOSPC: "the disk is full: free some space, or write elsewhere",
    errno.EDQUOT: "the disk quota is used up: free some space, or write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.EACCES: "permission denied: fix the folder's permissions, or write elsewhere",
    errno.EPERM: "permission denied: fix the folder's permissions, or write elsewhere",
    errno.EISDIR: "it is a folder: give a file name",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
}


def reason(error: OSError) -> str:
    """Why ``error`` happened, in words, with the fix."""
    return REASONS.get(error.errno) or (error.strerror or str(error))


def write_error(what: str, path: Path, error: OSError) -> InputError:
    """The one line for a write to ``path`` that failed with ``error``."""
    return InputError(f"{what}: cannot write {path}: {reason(error)}.")


MESSAGES = {"No space left on device": errno.ENOSPC, "Read-only file system": errno.EROFS}


def os_error_in(error: BaseException | None) -> OSError | None:
    """The ``OSError`` behind ``error`` (itself, a cause, or one a child process printed), else None."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in REASONS:
            return error
        for words, number in MESSAGES.items():
            if words in str(error):
                return OSError(number, words)
        error = error.__cause__ or error.__context__
    return None


def partial_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


def check_file_target(path: Path, what: str, example: str | None = None) -> None:
    """Before any work: ``path`` must not be a folder (a write there would fail only at the end)."""
    if path.is_dir():
        hint = f" (e.g. {path / example})" if example else ""
        raise InputError(f"{what}: {path} is a folder, not a file: give a file name{hint}.")


@contextmanager
def whole_file(path: Path | str, what: str) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write to; renamed onto ``path`` when the block ends, removed if it
    fails. An ``OSError`` (in the block or the rename) becomes one line naming ``path``."""
    path = Path(path)
    check_file_target(path, what)
    partial = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield partial
        os.replace(partial, path)
    except OSError as error:
        raise write_error(what, path, error) from None
    finally:
        try:
            partial.unlink(missing_ok=True)
        except OSError:  # the folder refuses even that: then nothing could be created in it either
            pass


def write_text_whole(path: Path | str, text: str, what: str) -> None:
    """``path.write_text(text)``, whole or not at all (:func:`whole_file`)."""
    with whole_file(path, what) as partial:
        partial.write_text(text, encoding="utf-8")


def check_writable_folder(folder: Path | str, what: str) -> None:
    """Before the work that ends in a write: ``folder`` (or the folder it will be created in) takes a new file.
    Probed with an unnamed temporary file, so nothing shows."""
    import tempfile

    folder = Path(folder).expanduser().absolute()
    base = folder
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise InputError(f"{what}: cannot write {folder}: {base} is a file, not a folder.")
    try:
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as error:
        raise write_error(what, folder, error) from None
