"""The lock that makes a second process wait for a built-in model's first build instead of repeating it, and say so.

A warm start trains for a minute or more on first use; a second process starting meanwhile (another test, a
second rank) waits on this lock. Silent, that wait looks like a hang: so it prints what it waits for, and who
holds the lock, and every ``report_every`` seconds for how long it has waited.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path


@contextlib.contextmanager
def build_lock(path: Path, report_every: float = 30.0):
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block, reporting any wait on stderr.

    The holder writes its pid into the file, so a waiting process can name it. Without ``fcntl`` (Windows) there is
    no lock.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _wait(handle, path, report_every)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _wait(handle, path: Path, report_every: float) -> None:
    """Take the lock on ``handle`` once its holder gives it up, saying on stderr what this process waits for."""
    import fcntl

    handle.seek(0)
    holder = handle.read().strip() or "another process"
    model = path.with_name(path.name.removesuffix(".lock"))
    print(f"Waiting for {holder} to finish building {model} (lock {path}) ...", file=sys.stderr, flush=True)
    start = last = time.monotonic()
    while True:
        time.sleep(min(0.5, report_every / 2))
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            pass
        if time.monotonic() - last >= report_every:
            last = time.monotonic()
            print(f"Still waiting for {model} after {last - start:.0f} s ...", file=sys.stderr, flush=True)
    print(f"Done waiting for {model} after {time.monotonic() - start:.0f} s.", file=sys.stderr, flush=True)
