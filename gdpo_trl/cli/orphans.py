"""No orphans: a process ``gdpo train`` started ends when ``gdpo train`` itself dies, however it dies.

``gdpo train --num_processes N`` runs torch's elastic agent inside itself (accelerate's launcher), which starts each
worker with ``start_new_session=True``: a worker is in its own session and process group, so neither a ``SIGKILL``
of the top ``gdpo`` process (which runs no handler) nor a kill of its process group reaches it. Left alone, the
workers trained on to the end, unattended, holding the run's lock (a leaked job on a GPU node). So each worker:

- asks Linux for a parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGTERM)``): the kernel sends it ``SIGTERM`` the
  moment its parent (the launcher) dies. Checked against the launcher's pid right after, since the launcher may have
  died before the call;
- runs a watchdog thread (every :data:`POLL_S` seconds) for what the signal cannot cover: another OS, a launcher that
  is not the direct parent (a wrapper), or a ``SIGTERM`` some library handles without exiting. Once the launcher is
  gone it sends itself ``SIGTERM`` and, :data:`GRACE_S` seconds later, ends for real.

The lock (:mod:`gdpo_trl.run.run_lock`) is an ``flock``: it goes with the last process holding it. The launcher
exports its pid in :data:`LAUNCHER_ENV`; a process started by hand has none and is left alone.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

LAUNCHER_ENV = "GDPO_TRL_LAUNCHER_PID"
POLL_S = 0.5
GRACE_S = 5.0
PR_SET_PDEATHSIG = 1


def launcher_alive(pid: int) -> bool:
    """Whether process ``pid`` (the launcher) still exists and is still this process's ancestor we started under."""
    if os.getppid() == 1:  # reparented to init: the parent is gone
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, someone else's: the pid was reused, so ours is gone
        return False
    return True


def _parent_death_signal() -> bool:
    """Ask the kernel for ``SIGTERM`` when the parent dies (Linux only); whether it was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _end_now(reason: str) -> None:
    """Stop this process: ``SIGTERM`` first (the default action ends it; a handler may clean up), then for real."""
    if os.environ.get("RANK", "0") == "0":  # one line for the run
        print(f"gdpo train: {reason}; its processes stop too.", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    os.kill(os.getpid(), signal.SIGKILL)


def _watch(pid: int, original_parent: int) -> None:
    while True:
        time.sleep(POLL_S)
        if (original_parent == pid and os.getppid() != pid) or not launcher_alive(pid):
            _end_now(f"the gdpo train launcher (pid {pid}) is gone")
            return


def follow_launcher() -> bool:
    """In a process started by ``gdpo train``'s launcher: end when it ends (see the module docstring). Returns whether
    a launcher is being followed."""
    value = os.environ.get(LAUNCHER_ENV, "")
    if not value.isdigit():
        return False
    pid, parent = int(value), os.getppid()
    if parent == pid:
        _parent_death_signal()
    if (parent == pid and os.getppid() != pid) or not launcher_alive(pid):  # it died before we asked
        _end_now(f"the gdpo train launcher (pid {pid}) is gone")
    threading.Thread(target=_watch, args=(pid, parent), name="gdpo-launcher-watch", daemon=True).start()
    return True


def quiet_interrupt(main):
    """``main`` for a worker, ending with status 130 and no traceback on Ctrl-C: the launcher passes ``SIGINT`` on to
    every worker, and each one's ``KeyboardInterrupt`` traceback (~100 lines a rank) would bury the launcher's line."""

    def run(argv: list[str] | None = None) -> None:
        try:
            main(argv)
        except KeyboardInterrupt:
            raise SystemExit(INTERRUPTED) from None

    return run


INTERRUPTED = 128 + int(signal.SIGINT)  # the shell's status for a process ended by Ctrl-C


def interrupted_line(sigval: int, output_dir: str | None) -> str:
    """The one line ``gdpo train``'s launcher prints when a signal (Ctrl-C, ``SIGTERM``) stopped the run."""
    from pathlib import Path

    stopped = f"gdpo train: stopped by {signal.Signals(sigval).name}; every process stopped."
    if output_dir and any(Path(output_dir).glob("checkpoint-*")):
        return (
            f"{stopped} Run the same command with --resume_from_checkpoint true to continue from the last checkpoint "
            f"in {output_dir}."
        )
    return f"{stopped} No checkpoint was written yet, so there is nothing to resume."
