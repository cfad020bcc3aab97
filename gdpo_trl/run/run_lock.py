"""One run per ``output_dir``: a lock the run holds for its whole life, which a crashed run cannot leave stuck.

Two runs writing one folder interleave their checkpoints and the second one's ``--overwrite_output_dir`` deletes the
first one's work while it trains. So a run takes an exclusive ``fcntl.flock`` on ``output_dir/_gdpo train.lock``
(writing its pid, host and start time into it) before it looks at or clears the folder, and a second run is
refused in one line naming the folder and the holder. The operating system drops the lock when the holding process
dies, however it dies (``SIGKILL``, out of memory), so a crash never blocks the next run; the stale file left behind
is simply locked again. A clean release deletes the file, and a folder that the lock itself created and that is still
empty, so a run refused later on (bad data, say) leaves no trace.

Only the main process takes the lock (global rank 0, or each node's local rank 0 with ``save_on_each_node``).
Processes forked while the lock is held (data-loader workers) close their copy of it, so a worker outliving a
killed run cannot keep the folder locked. Without ``fcntl`` (Windows) there is no lock.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from pathlib import Path

from gdpo_trl.core.errors import InputError

# A leading underscore: transformers' Hub uploads of output_dir skip "_*" (the file holds a pid and a host name).
LOCK_NAME = "_gdpo train.lock"

# Locks held by this process, by lock-file path: taking one twice reuses it (flock would refuse the second open).
_HELD: dict[str, RunLock] = {}
# Locks taken inside a function decorated with `releases_run_locks`, innermost last.
_SCOPED: list[RunLock] = []


def _close_in_child() -> None:
    for lock in list(_HELD.values()):
        if lock.fd is not None:
            os.close(lock.fd)
            lock.fd = None
    _HELD.clear()
    _SCOPED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)


def describe_holder(path: Path) -> str:
    """Who holds the lock at ``path``, from what it wrote there (``pid N on HOST since TIME``)."""
    try:
        fields = dict(item.split("=", 1) for item in path.read_text().split() if "=" in item)
    except OSError:
        fields = {}
    if "pid" not in fields:
        return "another process (it has not written its pid yet)"
    where = f" on {fields['host']}" if fields.get("host") else ""
    since = f" since {fields['since']}" if fields.get("since") else ""
    return f"pid {fields['pid']}{where}{since}"


class RunLock:
    """The lock on one ``output_dir``; :meth:`release` (or leaving a ``with`` block) gives it back."""

    def __init__(self, output_dir: str | os.PathLike):
        self.folder = Path(output_dir).expanduser()
        self.path = self.folder / LOCK_NAME
        self.fd: int | None = None
        self.created: list[Path] = []  # folders this lock created, deepest first

    def acquire(self) -> RunLock:
        import fcntl

        missing, parent = [], self.folder.absolute()
        while not parent.exists() and parent != parent.parent:
            missing.append(parent)
            parent = parent.parent
        self.folder.mkdir(parents=True, exist_ok=True)
        self.created = missing
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                self._remove_created()
                raise InputError(
                    f"output_dir {str(self.folder)!r} is in use by another gdpo train run ({describe_holder(self.path)}):"
                    " wait for it to finish or stop it, or choose another --output_dir."
                ) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # else the holder deleted the file between our open and our lock: try again
                break
            os.close(fd)
        self.fd = fd
        since = time.strftime("%Y-%m-%dT%H:%M:%S")
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} host={socket.gethostname()} since={since}\n".encode())
        _HELD[str(self.path.absolute())] = self
        return self

    def release(self) -> None:
        """Delete the lock file (while still holding it), unlock, and remove the folders the lock created if they
        are still empty. Safe to call twice."""
        if self.fd is None:
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None
        _HELD.pop(str(self.path.absolute()), None)
        self._remove_created()

    def _remove_created(self) -> None:
        for folder in self.created:
            try:
                folder.rmdir()
            except OSError:  # not empty (the run wrote something), or already gone
                break
        self.created = []

    def __enter__(self) -> RunLock:
        return self if self.fd is not None else self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def lock_output_dir(output_dir: str | os.PathLike, is_main_process: bool = True) -> RunLock | None:
    """Take the lock on ``output_dir`` (None on other processes, or without ``fcntl``); an :class:`InputError`
    naming the folder and the holder when another run holds it. Usable as a context manager."""
    if not is_main_process:
        return None
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return None
    held = _HELD.get(str((Path(output_dir).expanduser() / LOCK_NAME).absolute()))
    return held if held is not None else RunLock(output_dir).acquire()


def is_lock_holder(training_args) -> bool:
    """Whether this process writes ``output_dir`` and so takes its lock: global rank 0, or with
    ``save_on_each_node`` each node's local rank 0."""
    if getattr(training_args, "save_on_each_node", False):
        return getattr(training_args, "local_process_index", 0) == 0
    return getattr(training_args, "process_index", 0) == 0


def hold_output_dir(training_args) -> RunLock | None:
    """Lock ``training_args.output_dir`` for this run. Inside a function decorated with :func:`releases_run_locks`
    the lock is given back when that function returns or raises; elsewhere it is held until :meth:`RunLock.release`
    or the end of the process."""
    lock = lock_output_dir(training_args.output_dir, is_lock_holder(training_args))
    if lock is not None and lock not in _SCOPED:
        _SCOPED.append(lock)
    return lock


def releases_run_locks(func):
    """Decorate a ``main``: the locks :func:`hold_output_dir` takes while it runs are released when it ends."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        depth = len(_SCOPED)
        try:
            return func(*args, **kwargs)
        finally:
            while len(_SCOPED) > depth:
                _SCOPED.pop().release()

    return wrapper
