"""``os._exit`` made an error inside user code that must not end the process (reward functions, tools).

``sys.exit()`` raises ``SystemExit``, which a wrapper can catch; ``os._exit()`` ends the process at once, skipping
every handler, so a run would stop with no word. While :func:`exits_raise` is active in a thread, ``os._exit`` called
from that thread raises :class:`ProcessExit` instead (a ``BaseException``, so ``except Exception`` in the user's code
does not swallow it); other threads, and processes forked meanwhile, exit for real.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


class ProcessExit(BaseException):
    """Raised in place of ``os._exit(code)`` inside a reward function (a BaseException: ``except Exception`` in the
    reward does not swallow it)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


_real_exit = os._exit
_guarded: dict[int, int] = {}  # thread id -> how many guarded reward calls run in it now
_guard_lock = threading.Lock()
_guard_pid = os.getpid()


def _guarded_exit(code):
    # Only a reward's own call, in this process, is turned into an error: a process forked inside a reward (a
    # multiprocessing pool) and other threads exit for real.
    if os.getpid() == _guard_pid and threading.get_ident() in _guarded:
        raise ProcessExit(code)
    _real_exit(code)


@contextlib.contextmanager
def exits_raise() -> Iterator[None]:
    """While inside, ``os._exit(code)`` called from this thread raises ``ProcessExit`` instead of ending the process.
    Nested and concurrent uses are counted; the real ``os._exit`` is back once the last one leaves."""
    global _guard_pid
    ident = threading.get_ident()
    with _guard_lock:
        if not _guarded:
            _guard_pid = os.getpid()
        _guarded[ident] = _guarded.get(ident, 0) + 1
        os._exit = _guarded_exit
    try:
        yield
    finally:
        with _guard_lock:
            _guarded[ident] -= 1
            if not _guarded[ident]:
                del _guarded[ident]
            if not _guarded:
                os._exit = _real_exit
