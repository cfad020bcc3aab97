"""``builtin:vllm_warmstart``: the SFT warm start of :mod:`gdpo_trl.tasks.warmstart` in the shape vLLM's CPU backend
loads, so runs that generate with vLLM start from a policy with rewards to learn from.

Why: ``builtin:vllm`` (a random model of :data:`gdpo_trl.models.tiny.ARCHITECTURES`) never emits a tag, so the
format, correctness and integer rewards are 0 for every sample, every advantage is 0 and a GDPO step changes
nothing: a vLLM run on it cannot show that training reaches the engine through the rewards. ``builtin:warmstart``
scores mid-range but has tied embeddings (a vLLM weight reload leaves them stale) on the ``mini`` architecture. This
one trains the ``vllm`` architecture (attention heads of 32, untied embeddings) with the same recipe, traces and
SFT loop (:func:`gdpo_trl.tasks.warmstart.build_warmstart`); only the architecture differs.

Built once per machine into the model cache (:func:`gdpo_trl.models.builtins.cache_dir`), in a child process as the
other warm starts are (same cache key scheme, lock and atomic rename). Here: :func:`build_builtin_vllm_warmstart`
(the entry point) and ``python -m gdpo_trl.tasks.vllm_warmstart PATH [--seed N] [--steps N]``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from gdpo_trl.models.build_cli import builder_main
from gdpo_trl.models.builtins import build_id, cache_dir, cached_build, run_isolated
from gdpo_trl.models.tiny import ARCHITECTURES
from gdpo_trl.tasks.warmstart import build_warmstart
from gdpo_trl.tasks.warmstart_data import Recipe

NAME = "vllm_warmstart"
ARCHITECTURE = "vllm"


def recipe(steps: int | None = None) -> Recipe:
    """The warm start's recipe on the ``vllm`` architecture (``steps`` overrides the SFT steps, for quick checks)."""
    base = Recipe(architecture=ARCHITECTURE)
    return base if steps is None else dataclasses.replace(base, steps=steps)


def _build_isolated(path: Path, seed: int) -> None:
    """Train in a child process (why: :func:`gdpo_trl.models.builtins.build_warm_start_isolated`), showing progress."""
    import torch

    threads = torch.get_num_threads()
    records = [json.loads(p.read_text()) for p in cache_dir().glob(f"{NAME}-seed*/warmstart.json")]
    previous = [record["build_seconds"] for record in records if "build_seconds" in record]
    estimate = f"the last build here took {max(previous):.0f} s" if previous else "a progress bar follows"
    print(
        f"Building builtin:{NAME}@{seed} once for this machine ({threads} torch thread(s); {estimate}); later runs "
        f"reuse it from {path.parent}.",
        file=sys.stderr,
        flush=True,
    )
    args = ["-m", __name__, str(path), "--seed", str(seed), "--threads", str(threads)]
    run_isolated(args, f"builtin:{NAME}", show_output=True)


def build_builtin_vllm_warmstart(name: str, seed: int = 0) -> str:
    """The entry point behind ``builtin:vllm_warmstart[@seed]`` (see :mod:`gdpo_trl.core.plugins`): the path of the
    cached model folder, trained on first use (a few minutes of CPU)."""
    if name != NAME:
        raise ValueError(f"Unknown built-in model 'builtin:{name}': this entry point builds 'builtin:{NAME}'.")
    key = build_id(name, dataclasses.asdict(recipe()), ARCHITECTURES[ARCHITECTURE], seed)
    target = cache_dir() / f"{name}-seed{seed}-{key}"
    return str(cached_build(target, lambda tmp: _build_isolated(tmp, seed)))


def main(argv: list[str] | None = None) -> None:
    """``python -m gdpo_trl.tasks.vllm_warmstart PATH [--seed N] [--steps N]``: how the entry point builds it."""
    banner = f"builtin:{NAME}: loading TRL (about 10 s), then a progress bar per stage"
    builder_main(argv, __doc__, banner, recipe, build_warmstart)


if __name__ == "__main__":
    main()
