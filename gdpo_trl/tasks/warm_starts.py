"""The tasks' SFT warm starts behind ``builtin:warmstart``, ``builtin:toolcall_warmstart`` and
``builtin:agent_warmstart``: the shipped weights for seed 0, else a build in the cache.

Seed 0 of each ships with the package (:mod:`gdpo_trl.models.shipped` says why), so the demo and the studies start
from the same weights on every machine. Another seed, or a changed recipe, is trained on first use in a child process
into the cache (:mod:`gdpo_trl.models.builtins`: keyed by recipe, locked, renamed into place when complete).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from gdpo_trl.models import builtins  # module access, so tests can stand in for the child process and the cache
from gdpo_trl.models.shipped import shipped_warm_start
from gdpo_trl.models.tiny import ARCHITECTURES

WARMSTART = "warmstart"  # builtin:warmstart, the SFT warm start of gdpo_trl.tasks.warmstart
TOOLCALL_WARMSTART = "toolcall_warmstart"  # builtin:toolcall_warmstart, of gdpo_trl.tasks.toolcall_task
AGENT_WARMSTART = "agent_warmstart"  # builtin:agent_warmstart, of gdpo_trl.tasks.agent_warmstart
# Each warm start -> the module that builds one (`python -m MODULE PATH --seed N --threads N`, writing warmstart.json
# with its build_seconds) and holds its recipe.
WARM_STARTS = {
    WARMSTART: "gdpo_trl.tasks.warmstart",
    TOOLCALL_WARMSTART: "gdpo_trl.tasks.toolcall_task",
    AGENT_WARMSTART: "gdpo_trl.tasks.agent_warmstart",
}


def build_warm_start(name: str, seed: int = 0) -> str:
    """The folder of warm start ``name`` with ``seed``: the entry point behind its ``builtin:`` name (see
    :func:`gdpo_trl.core.plugins.resolve_model`, which parses ``builtin:NAME@SEED``)."""
    if name not in WARM_STARTS:
        raise ValueError(f"{name!r} is not a warm start: {sorted(WARM_STARTS)}")
    build_id = warm_start_build_id(name, seed)
    shipped = shipped_warm_start(name, seed, build_id)
    if shipped is not None:
        return str(shipped)
    target = builtins.cache_dir() / f"{name}-seed{seed}-{build_id}"
    return str(builtins.cached_build(target, lambda tmp: build_warm_start_isolated(tmp, name, seed)))


def warm_start_build_id(name: str, seed: int) -> str:
    """The cache key of warm start ``name`` with ``seed``: a hash of its default recipe, architecture and vocabulary."""
    recipe = warm_start_recipe(name)
    return builtins.build_id(name, dataclasses.asdict(recipe), ARCHITECTURES[recipe.architecture], seed)


def warm_start_recipe(name: str):
    """The default recipe of warm start ``name``: with the seed, it determines the weights (hence the cache key)."""
    if name == TOOLCALL_WARMSTART:
        from gdpo_trl.tasks.toolcall_task import ToolcallRecipe

        return ToolcallRecipe()
    if name == AGENT_WARMSTART:
        from gdpo_trl.tasks.agent_warmstart import AgentRecipe

        return AgentRecipe()
    from gdpo_trl.tasks.warmstart_data import Recipe

    return Recipe()


def build_warm_start_isolated(path: Path, name: str, seed: int) -> None:
    """Build warm start ``name`` (a key of :data:`WARM_STARTS`) in a child process, showing its progress.

    Why not in this process: SFT training creates accelerate's process-wide state (``use_cpu=True``), which would stick
    to a later GRPO/GDPO trainer in the same process, and under a multi-process launcher (``RANK``/``WORLD_SIZE`` set)
    it would wait for the other ranks to join a training they are not running. The child gets neither. It uses as
    many torch threads as this process (e.g. the recipe's ``cpu_threads``).
    """
    import sys

    import torch

    threads = torch.get_num_threads()
    records = [json.loads(p.read_text()) for p in builtins.cache_dir().glob(f"{name}-seed*/warmstart.json")]
    previous = [record["build_seconds"] for record in records if "build_seconds" in record]
    estimate = (
        f"the last build here took {max(previous):.0f} s" if previous else "a progress bar with time left follows"
    )
    print(
        f"Building builtin:{name}@{seed} once for this machine ({threads} torch thread(s); {estimate}). Later runs "
        f"and the tests reuse it from {path.parent}.",
        file=sys.stderr,
        flush=True,
    )
    args = ["-m", WARM_STARTS[name], str(path), "--seed", str(seed), "--threads", str(threads)]
    builtins.run_isolated(args, f"builtin:{name}", show_output=True)
