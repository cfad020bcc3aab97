"""Compare GRPO, GRPO without std and GDPO on the offline tool-calling task, from the same warm start.

The tool-calling counterpart of scripts/compare_methods.py: every run trains the tool-call warm start
(gdpo_trl/demo/toolcall_task.py) with tool_format in {0, 1} and tool_correctness in [-3, 3] on requests it never saw
in SFT, with the settings of recipes/cpu/toolcall_gdpo/config.yaml; runs differ only in the method's config fields
and the seed. Writes one folder per run, comparison.md (the table) and comparison.png under --out-dir.

    python scripts/compare_toolcall.py                    # CPU default: 3 methods x 3 seeds x 40 steps
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REWARDS = ["tool_format", "tool_correctness"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=["grpo", "grpo_no_std", "gdpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=160)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default=None, help="model path (default: the cached tool-call warm start, seed 0)")
    parser.add_argument("--gain", type=float, default=0.1, help="'steps to reach' target: start value + gain")
    parser.add_argument("--window", type=int, default=5, help="smoothing window (steps) for the plot and targets")
    parser.add_argument("--out-dir", default="outputs/compare-toolcall")
    parser.add_argument("--skip-training", action="store_true", help="only rebuild table and plot from --out-dir")
    return parser.parse_args(argv)


def train_one(args, method: str, seed: int, model_path: str, dataset) -> float:
    from gdpo_trl import GDPOConfig, GDPOTrainer
    from gdpo_trl.compare import METHODS, run_dir
    from gdpo_trl.rewards import get_reward_funcs

    out = run_dir(Path(args.out_dir), method, seed)
    config = GDPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=args.prompts_per_step * args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_steps=args.steps,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        beta=0.0,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=seed,
        bf16=False,
        use_cpu=True,
        gradient_checkpointing=False,
        **METHODS[method],
    )
    start = time.perf_counter()
    trainer = GDPOTrainer(model_path, reward_funcs=get_reward_funcs(REWARDS), args=config, train_dataset=dataset)
    trainer.train()
    trainer.state.save_to_json(str(out / "trainer_state.json"))
    return time.perf_counter() - start


def main(argv=None):
    args = parse_args(argv)
    import torch

    from gdpo_trl.compare import collect, comparison_table, plot_comparison
    from gdpo_trl.demo.toolcall_task import load_toolcall_task, resolve_toolcall_warmstart
    from gdpo_trl.runs import reward_key

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = args.model or resolve_toolcall_warmstart(0)
    wall = {}
    if not args.skip_training:
        torch.set_num_threads(args.threads)
        dataset = load_toolcall_task(args.steps * args.prompts_per_step, seed=0, split="eval")
        total = len(args.methods) * len(args.seeds)
        for i, (method, seed) in enumerate((m, s) for m in args.methods for s in args.seeds):
            wall[(method, seed)] = train_one(args, method, seed, model, dataset)
            print(f"[{i + 1}/{total}] {method} seed {seed}: {wall[(method, seed)]:.0f} s", flush=True)

    metrics = [reward_key(n) for n in REWARDS] + ["reward"]
    curves = [collect(out_dir, m, args.seeds, metrics) for m in args.methods]
    table = comparison_table(curves, REWARDS + ["reward"], gain=args.gain, window=args.window, tail=args.window)
    steps = curves[0].steps[-1] if curves[0].steps else 0
    header = (
        f"Tool-call warm start; {len(args.seeds)} seeds {args.seeds}; {steps} steps of {args.prompts_per_step} "
        f"prompts x {args.num_generations} completions; lr {args.learning_rate}; max {args.max_completion_length} "
        "completion tokens."
    )
    if wall:
        header += f" Wall time {sum(wall.values()) / 60:.1f} min for {len(wall)} runs."
    (out_dir / "comparison.md").write_text(header + "\n\n" + table + "\n")
    plot_comparison(curves, REWARDS, out_dir / "comparison.png", window=args.window, title="tool calling (CPU)")
    print(header + "\n\n" + table)
    print(f"\nwrote {out_dir / 'comparison.md'} and {out_dir / 'comparison.png'}")


if __name__ == "__main__":
    main()
