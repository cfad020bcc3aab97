"""One report for a ``gdpo train`` run on several processes: each process records how it ended, the launcher prints it.

Under ``gdpo train --num_processes N`` (or an accelerate config) the processes cannot agree on who prints: an error
met by one rank only (its reward raised, or timed out) leaves the other ranks blocked in a collective until the
launcher kills them, and the other ranks' own failures ("Connection closed by peer") are consequences, not the cause.
So ``gdpo train`` gives its processes a folder (:data:`RECORDS_ENV`), and each process writes there, instead of
printing:

- ``rank<R>.json`` when it stops on an error: the one line (``gdpo train: error: ...``), its exit status, whether it
  was a handled error (an input or a reward error) or a crash (then with the traceback), and when;
- ``saved-rank<R>`` once the model and the trainer state are written (rank 0 writes them).

When a process fails, the launcher (:func:`report_failure`) prints the cause once (a crash with its one traceback)
and exits with its status. A process that ended without a record was killed or left through ``os._exit``: it is
named with its exit status. If that happened after rank 0 had saved everything (a rank aborting in a library's
teardown at exit), the run is complete: one line says so and the status is 0.

A process started by hand (``accelerate launch -m gdpo_trl.cli.train``) has no folder and prints as before.
"""

from __future__ import annotations

import json
import os
import signal
import time
import traceback
from pathlib import Path

RECORDS_ENV = "GDPO_TRL_RUN_RECORDS"
KILLED_BY_LAUNCHER = -signal.SIGTERM  # the launcher stops the other processes with SIGTERM once one has failed


def records_dir() -> Path | None:
    """The folder this process reports to, or None when it was not started by ``gdpo train``'s launcher."""
    folder = os.environ.get(RECORDS_ENV)
    return Path(folder) if folder else None


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def record_error(line: str, code: int, error: BaseException | None = None) -> bool:
    """Record this process's error (``error`` given: a crash, with its traceback). False when there is no folder."""
    folder = records_dir()
    if folder is None:
        return False
    entry = {"rank": _rank(), "line": line, "code": code, "time": time.time(), "traceback": None}
    if error is not None:
        entry["traceback"] = "".join(traceback.format_exception(error))
    path = folder / f"rank{entry['rank']}.json"
    if not path.exists():  # the first error of a process is its cause
        path.write_text(json.dumps(entry))
    return True


def mark_saved() -> None:
    """Record that this process finished training and its part of saving (no-op without a folder)."""
    folder = records_dir()
    if folder is not None:
        (folder / f"saved-rank{_rank()}").touch()


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def report_failure(folder: Path, codes: dict[int, int], output_dir: str | None = None) -> tuple[list[str], int]:
    """The lines to print (stderr) and the exit status for a run whose processes ended with ``codes`` (rank -> exit
    code, as the launcher saw them), from the records in ``folder``. In order of what explains the failure:

    1. the earliest handled error (an input or reward error: its line);
    2. processes that ended with no record, other than by the launcher's SIGTERM (killed, ``os._exit``): named with
       their status, since the other ranks' crashes ("Connection closed by peer") follow from them; a note and
       status 0 if rank 0 had saved everything by then;
    3. the earliest crash (a bug): its traceback and its line.
    """
    records = []
    for path in folder.glob("rank*.json"):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):  # a process killed while writing: its status still tells
            continue
    handled = [entry for entry in records if not entry["traceback"]]
    if handled:
        first = min(handled, key=lambda entry: entry["time"])
        return [first["line"]], first["code"]
    recorded = {entry["rank"] for entry in records}
    silent = {
        rank: code for rank, code in sorted(codes.items()) if rank not in recorded and code != KILLED_BY_LAUNCHER
    }
    if silent or not records:
        silent = silent or dict(sorted(codes.items()))
        described = ", ".join(f"rank {rank} {_status(code)}" for rank, code in silent.items())
        if (folder / "saved-rank0").exists():
            where = f" to {output_dir}" if output_dir else ""
            return [
                f"gdpo train: note: {described} while exiting, after the model and trainer state were saved{where}; "
                "the run is complete."
            ], 0
        return [
            f"gdpo train: error: {described} without an error message: something in it called os._exit, or it was "
            "killed (out of memory?); see its output above."
        ], 1
    first = min(records, key=lambda entry: entry["time"])
    return [first["traceback"].rstrip(), first["line"]], first["code"]
