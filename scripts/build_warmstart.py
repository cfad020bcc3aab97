"""Build the SFT warm start into a folder and print its measured starting rewards and build time.

    python scripts/build_warmstart.py /tmp/warmstart --seed 0
    python scripts/build_warmstart.py /tmp/warmstart --seed 0 --measure-seed 7 --num-prompts 128

``resolve_model("builtin:warmstart")`` does the same into the model cache; this script is for trying seeds and
checking the numbers. See gdpo_trl/warmstart.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything here is local

try:
    from gdpo_trl.demo.warmstart import Recipe, build_warmstart, measure_rewards, weights_checksum
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gdpo_trl.demo.warmstart import Recipe, build_warmstart, measure_rewards, weights_checksum


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="folder to write the model to (must not exist yet)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None, help="SFT steps (default: the recipe's)")
    parser.add_argument("--measure-seed", type=int, default=None, help="also measure with this sampling seed")
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--num-samples", type=int, default=4)
    args = parser.parse_args(argv)
    if args.path.exists():
        parser.error(f"{args.path} already exists")

    recipe = Recipe() if args.steps is None else Recipe(steps=args.steps)
    start = time.perf_counter()
    build_warmstart(args.path, args.seed, recipe)
    total = time.perf_counter() - start
    record = json.loads((args.path / "warmstart.json").read_text())
    print(f"\nbuilt {args.path} (seed {args.seed}, {record['parameters']:,} parameters, {recipe.steps} SFT steps)")
    print(f"build: {record['build_seconds']:.1f}s training, {total:.1f}s with measuring")
    print(f"weights sha1: {weights_checksum(args.path)}")
    print(f"starting rewards (seed {args.seed}): {_fmt(record['starting_rewards'])}")
    if args.measure_seed is not None:
        rewards = measure_rewards(args.path, args.num_prompts, args.num_samples, seed=args.measure_seed, recipe=recipe)
        print(f"starting rewards (seed {args.measure_seed}): {_fmt(rewards)}")


def _fmt(rewards: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.3f}" for name, value in rewards.items())


if __name__ == "__main__":
    main()
