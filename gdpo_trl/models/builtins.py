"""The demo's ``builtin:`` models, built once per machine into a cache: the entry point behind each name.

``resolve_model("builtin:NAME@SEED")`` (:mod:`gdpo_trl.core.plugins`) calls :func:`build_builtin`: a random model of
:data:`gdpo_trl.models.tiny.ARCHITECTURES`, or an SFT warm start (:mod:`gdpo_trl.tasks.warmstart`,
:mod:`gdpo_trl.tasks.toolcall_task`) trained in a child process. Builds are keyed by what determines the weights,
written next to their target and renamed into place, under a lock, so an interrupted or concurrent build never
leaves a half-written model. Each build records the SHA-256 of its config and weights (:data:`HASHES`), checked when
a process first uses the folder: a damaged one (altered weights, a file cut short or missing) is rebuilt with one line
saying so (before, 4,000 altered weights trained without a word, and a cut file gave a ``SafetensorError``).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from gdpo_trl.models.build_lock import build_lock as _build_lock  # waits, saying for what and how long
from gdpo_trl.models.shipped import file_sha256
from gdpo_trl.models.tiny import ARCHITECTURES, BUILD_VERSION, CHAT_TEMPLATE, SPECIAL_TOKENS, TAGS, save_tiny_model
from gdpo_trl.storage.safe_write import os_error_in, write_error, write_text_whole
from gdpo_trl.storage.weight_files import model_folder_problem

CACHE_ENV = "GDPO_TRL_CACHE"
# A built folder's record of its files' SHA-256 (config and weights: what decides the model).
HASHES = "gdpo_hashes.json"
# Folders checked against their record in this process (a run resolves its model several times).
_checked: set[Path] = set()


def cache_dir() -> Path:
    """Where built models are kept: ``$GDPO_TRL_CACHE``, else ``~/.cache/gdpo_trl``."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "gdpo_trl"))


def build_id(*recipe) -> str:
    """A short key for a cache folder: a hash of the recipe (whatever determines the weights: architecture, seed,
    SFT settings), the tokenizer's vocabulary and :data:`BUILD_VERSION`. Not the name as spelled ("tiny" and "tiny@0"
    are one model), and not the code: editing a docstring must not cost every user a rebuild."""
    vocabulary = [SPECIAL_TOKENS, TAGS, CHAT_TEMPLATE]
    return hashlib.sha1(json.dumps([BUILD_VERSION, vocabulary, *recipe], default=str).encode()).hexdigest()[:10]


def hashed_files(folder: Path) -> list[Path]:
    """The files of a built folder that decide the model: its config and weights (not the tokenizer, not the records
    written beside them after the build)."""
    weights = (".safetensors", ".safetensors.index.json")
    return sorted(p for p in folder.iterdir() if p.is_file() and (p.name == "config.json" or p.name.endswith(weights)))


def record_hashes(folder: Path) -> None:
    """Write :data:`HASHES` for ``folder``'s :func:`hashed_files`."""
    record = {p.name: file_sha256(p) for p in hashed_files(folder)}
    write_text_whole(folder / HASHES, json.dumps(record, indent=2, sort_keys=True) + "\n", "model cache record")


def cache_problem(target: Path) -> str | None:
    """What is wrong with the built folder ``target`` (None: intact), checked once per process: every file of its
    record present and hashing as recorded, no weights file beside them that the record does not know. A folder built
    before records were kept is checked for readable config and weights, then recorded."""
    if target in _checked:
        return None
    if not (target / "config.json").is_file():
        return "no config.json"
    record_path = target / HASHES
    if not record_path.is_file():
        if problem := model_folder_problem(target):
            return problem
        try:
            record_hashes(target)  # built before records were kept: readable, so recorded from now on
        except (OSError, ValueError):  # a read-only cache: checked again next time
            return None
        _checked.add(target)
        return None
    try:
        recorded = json.loads(record_path.read_text(encoding="utf-8"))
        recorded = {str(name): str(digest) for name, digest in recorded.items()}
    except (OSError, ValueError, AttributeError):
        return f"its {HASHES} does not parse"
    found = {p.name: p for p in hashed_files(target)}
    if missing := sorted(set(recorded) - set(found)):
        return f"{', '.join(missing)} missing"
    if extra := sorted(set(found) - set(recorded)):
        return f"{', '.join(extra)} not in its {HASHES}"
    for name, path in found.items():
        if file_sha256(path) != recorded[name]:
            return f"{name} does not hash as recorded when it was built"
    _checked.add(target)
    return None


def cached_build(target: Path, build) -> Path:
    """Return ``target``, first running ``build(tmp_path)`` and renaming the result into place if it is missing or
    damaged (:func:`cache_problem`).

    Building next to the target and renaming means an interrupted build never leaves a half-written model behind, and
    two processes building at once both end with a complete folder. Where ``fcntl`` exists, a lock file also makes a
    second process wait for the first build instead of repeating it (the warm start takes a minute to train).
    """
    if target.exists() and cache_problem(target) is None:
        return target
    try:
        return _build_once(target, build)
    except (OSError, RuntimeError) as error:  # a read-only or full cache: one line naming it (the build is removed)
        cause = os_error_in(error)
        if cause is None:
            raise
        raise write_error(f"model cache ({CACHE_ENV})", target.parent, cause) from None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_builds(target: Path) -> list[Path]:
    """Remove the ``<target>.tmp<pid>`` folders that builds of ``target`` stopped by a kill left (the process is
    gone): a converted Qwen model's is 2.4 GB, and nothing else would ever delete it. A folder of a build still
    running elsewhere is left alone. Says what it removed, in one line each; returns the folders."""
    removed = []
    prefix = f"{target.name}.tmp"
    for stale in sorted(target.parent.glob(f"{glob.escape(prefix)}*")):
        pid = stale.name[len(prefix) :]
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        size = sum(p.stat().st_size for p in stale.rglob("*") if p.is_file()) if stale.is_dir() else 0
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
        print(f"Removed {stale} ({size / 1e6:,.0f} MB), left by a build of {target.name} that was stopped.",
              file=sys.stderr, flush=True)  # fmt: skip
        removed.append(stale)
    return removed


def _build_once(target: Path, build) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(target.with_name(f"{target.name}.lock")):
        if target.exists():  # damaged, or built by the process we waited for
            problem = cache_problem(target)
            if problem is None:
                return target
            print(f"The cached model {target} is damaged ({problem}): rebuilding it.", file=sys.stderr, flush=True)
            shutil.rmtree(target)
        remove_stale_builds(target)
        tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
        try:
            build(tmp)
            if not (tmp / "config.json").exists() or not any(tmp.glob("*.safetensors")):
                raise RuntimeError(f"Building {target.name} wrote no complete model to {tmp}.")
            record_hashes(tmp)
        except BaseException:  # a failed or interrupted build leaves nothing behind
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            tmp.rename(target)
        except OSError:  # another process won the race (only possible without fcntl)
            shutil.rmtree(tmp, ignore_errors=True)
        _checked.add(target)
    return target


# Set by torchrun/accelerate launchers; a child process that inherited them would try to join the parent's job.
_LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def run_isolated(args: list[str], what: str, *, show_output: bool = False) -> None:
    """Run ``python ARGS`` in a child process without the launcher's variables (see the callers for why).

    With ``show_output`` the child's output (a progress bar) goes to this process's stderr as it comes; either way
    the end of it is in the error raised when the child fails.
    """
    import subprocess
    import sys
    from collections import deque

    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS and not k.startswith("ACCELERATE_")}
    # Make this copy of the package importable in the child even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parents[2]), env.get("PYTHONPATH")]))
    command = [sys.executable, *args]
    tail: deque[bytes] = deque(maxlen=64)
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as child:
        while chunk := child.stdout.read1(4096):
            tail.append(chunk)
            if show_output:
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
    if child.returncode != 0:
        output = b"".join(tail).decode(errors="replace")[-4000:]
        raise RuntimeError(f"Building {what} failed ({' '.join(command)}):\n{output}")


def build_here_or_apart(build, *args, what: str) -> None:
    """``build(*args)`` in this process, or, when torch.distributed is running, in a child process (``what`` names
    the build in its error).

    Why: under torch.distributed, transformers' ``save_pretrained`` writes weights on rank 0 only, so a rank that
    wins the build race would leave a folder without a model. ``build`` is a module-level function; its arguments
    reach the child pickled.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        build(*args)
        return
    import pickle

    code = (
        f"import pickle, sys; from {build.__module__} import {build.__qualname__} as build; "
        "build(*pickle.loads(bytes.fromhex(sys.argv[1])))"
    )
    run_isolated(["-c", code, pickle.dumps(args).hex()], what)


def build_builtin(name: str, seed: int = 0) -> str:
    """Build (once, cached) built-in model ``name`` with ``seed`` and return its folder: the entry point behind every
    ``builtin:`` name of the demo (see :func:`gdpo_trl.core.plugins.resolve_model`, which parses ``builtin:NAME@SEED``).

    ``tiny``, ``mini``, ``small``, ``base`` and ``vllm`` are random models of :data:`ARCHITECTURES`;
    ``warmstart``, ``toolcall_warmstart`` and ``agent_warmstart`` are the tasks' SFT warm starts: seed 0 ships with
    the package (:mod:`gdpo_trl.models.shipped`); another seed is trained on first use (minutes on a CPU).
    """
    if name not in ARCHITECTURES:
        raise ValueError(f"{name!r} is not a random built-in model: {sorted(ARCHITECTURES)}")
    target = cache_dir() / f"{name}-seed{seed}-{build_id(ARCHITECTURES[name], seed)}"
    label = f"builtin:{name}"
    return str(cached_build(target, lambda tmp: build_here_or_apart(save_tiny_model, tmp, name, seed, what=label)))
