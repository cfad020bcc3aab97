"""Fingerprints of what a run's numbers come from besides its recipe: each reward's source file and each local data
file, by SHA-256.

Two uses. A checkpoint's record of its recipe (:mod:`gdpo_trl.run.resume_settings`) keeps them, so a resume whose
reward files or data changed since the checkpoint is refused in one line naming what changed, as a changed recipe
field is (before, a fixed reward file resumed silently: the curve changed in mid-run with nothing to tell). And at
the start of a run on several processes, each process's reward fingerprints are compared with rank 0's
(:func:`check_same_rewards`): a copy of the code that differs on one machine, or a file edited while the processes
started, would otherwise train one model on two definitions of the reward.

A reward's fingerprint is that of the file its function was defined in, as this process read it when it imported
the function (:func:`gdpo_trl.rewards.locate.imported_sha256`): a file edited after the import does not change what
the process runs, and so does not change its fingerprint. Stdlib only: read before the model loads.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.files import BUILDERS
from gdpo_trl.data.formats import looks_local
from gdpo_trl.rewards import get_reward_func, unwrap_partial
from gdpo_trl.rewards.locate import imported_sha256, shown_path

REWARD_SOURCES = "reward_sources"  # the record's keys
DATA_FILES = "data_files"
SOURCE_KEYS = (REWARD_SOURCES, DATA_FILES)
CHUNK = 1 << 22


def file_sha256(path: Path) -> str:
    """``path``'s SHA-256, read once per size and modification time (a run's record and its resume check both ask)."""
    stat = path.stat()
    return _sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def reward_file(func) -> str | None:
    """The source file a reward function (or callable object) was defined in; None where it has none (a builtin)."""
    func = unwrap_partial(func)
    target = func if inspect.isfunction(func) or inspect.ismethod(func) else type(func)
    try:
        return inspect.getsourcefile(target)
    except TypeError:
        return None


def reward_sources(specs) -> dict[str, dict]:
    """``{spec: {"file", "sha256"}}`` for each reward the recipe names (registry names and import paths alike; the
    functions are imported as the run imports them). A reward without a source file is left out."""
    found = {}
    for spec in specs or []:
        try:
            file = reward_file(get_reward_func(spec))
        except (InputError, ImportError):  # a name the run's own checks refuse, in their words
            continue
        if file is None or not Path(file).is_file():
            continue
        found[spec] = {"file": shown_path(file), "sha256": imported_sha256(file)}
    return found


def local_data_files(source: str | None) -> list[Path]:
    """The data files a local ``dataset_name`` or ``dataset_path`` reads: the file, or a folder's data files (hidden
    ones left out, as ``datasets`` does); none for a Hub id or a named source."""
    if not source or not looks_local(source):
        return []
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and (p.suffix.lower() in BUILDERS or p.suffix == ".arrow")
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )


def data_files(script_args) -> dict[str, dict]:
    """``{file: {"size", "sha256"}}`` for the local files of the recipe's ``dataset_name`` and ``dataset_path``."""
    found = {}
    for source in (getattr(script_args, "dataset_name", None), getattr(script_args, "dataset_path", None)):
        for path in local_data_files(source):
            found[shown_path(str(path))] = {"size": path.stat().st_size, "sha256": file_sha256(path)}
    return found


def source_fingerprints(script_args) -> dict:
    """What a run record keeps besides the recipe: :data:`REWARD_SOURCES` and :data:`DATA_FILES`."""
    return {
        REWARD_SOURCES: reward_sources(getattr(script_args, "reward_funcs", None)),
        DATA_FILES: data_files(script_args),
    }


def short(digest: str) -> str:
    return str(digest)[:12]


def changed_sources(saved: dict, now: dict) -> list[str]:
    """What differs between the fingerprints a checkpoint recorded and this run's, one phrase each (only what both
    recorded: a checkpoint saved before fingerprints were kept compares nothing)."""
    changes = []
    if REWARD_SOURCES in saved and REWARD_SOURCES in now:
        old, new = saved[REWARD_SOURCES] or {}, now[REWARD_SOURCES] or {}
        for spec in new:
            if spec in old and old[spec].get("sha256") != new[spec].get("sha256"):
                changes.append(
                    f"reward {spec!r}: {new[spec]['file']} changed (sha256 {short(old[spec].get('sha256'))} -> "
                    f"{short(new[spec]['sha256'])})"
                )
    if DATA_FILES in saved and DATA_FILES in now:
        old, new = saved[DATA_FILES] or {}, now[DATA_FILES] or {}
        for name in new:
            if name in old and old[name].get("sha256") != new[name].get("sha256"):
                changes.append(
                    f"data file {name} changed ({old[name].get('size', 0):,} -> {new[name]['size']:,} bytes, sha256 "
                    f"{short(old[name].get('sha256'))} -> {short(new[name]['sha256'])})"
                )
        changes += [f"data file {name} is gone" for name in old if name not in new and new]
    return changes


def differing_rewards(gathered: list[dict]) -> list[tuple[int, str, str]]:
    """``(rank, spec, phrase)`` for each reward whose fingerprint on a rank differs from rank 0's (``gathered``:
    each rank's :func:`reward_sources`, in rank order)."""
    first, found = gathered[0], []
    for rank, sources in enumerate(gathered[1:], 1):
        for spec in sorted(set(first) | set(sources), key=lambda s: list(first).index(s) if s in first else 1e9):
            mine, theirs = sources.get(spec), first.get(spec)
            if mine is None or theirs is None:
                where = "rank 0" if theirs is None else f"rank {rank}"
                found.append((rank, spec, f"{where} has no source file for it"))
            elif mine["sha256"] != theirs["sha256"]:
                found.append(
                    (
                        rank,
                        spec,
                        f"{mine['file']} is {short(mine['sha256'])} there and {short(theirs['sha256'])} on "
                        f"rank 0 ({theirs['file']})",
                    )  # fmt: skip
                )
    return found


def gather_objects(value) -> list:
    """``value`` of every process, in rank order (torch.distributed's all_gather_object); ``[value]`` alone."""
    import os

    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and dist.is_available() and not dist.is_initialized():
        from accelerate import PartialState

        PartialState()  # joins the launcher's process group, as the trainer would a moment later
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [value]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def check_same_rewards(script_args, gather=gather_objects) -> None:
    """At the start of a run, on every process: stop when a process's reward fingerprints differ from rank 0's,
    naming the rank and the reward (every process raises the same line). Nothing to compare on one process."""
    differences = differing_rewards(gather(reward_sources(getattr(script_args, "reward_funcs", None))))
    if differences:
        named = "; ".join(f"reward {spec!r} differs on rank {rank} from rank 0: {phrase}"
                          for rank, spec, phrase in differences[:3])  # fmt: skip
        more = f" ({len(differences) - 3} more)" if len(differences) > 3 else ""
        raise InputError(
            f"{named}{more}. Every process must run the same reward code (a copy that differs on one machine, or a "
            "file edited while the processes started): give them the same files, then start again."
        )
