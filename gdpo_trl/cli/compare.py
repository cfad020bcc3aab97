"""gdpo-compare: GRPO, GRPO without std and GDPO on the offline synthetic GSM8K-style task, from one warm start.

Every run trains the SFT warm start (``builtin:warmstart``) with the format, correctness and integer rewards on
generated problems it never saw in SFT, with the CPU recipe's settings (recipes/cpu/gdpo/config.yaml); the runs
differ only in the method's config fields and the seed. Writes, under --out-dir:
one folder per run (with its ``trainer_state.json``), ``comparison.md`` (the table) and ``comparison.png``.

    gdpo-compare                                   # CPU default: 3 methods x 3 seeds
    gdpo-compare --scale 4 --seeds 0 1 2 3 4       # longer, larger batches (for a GPU)
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything here is local

REWARDS = ["format", "correctness", "integer"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="gdpo-compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--methods", nargs="+", default=["grpo", "grpo_no_std", "gdpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40, help="optimizer steps per run (multiplied by --scale)")
    parser.add_argument("--prompts-per-step", type=int, default=4, help="prompts per step (multiplied by --scale)")
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 suits the tiny model)")
    parser.add_argument("--scale", type=int, default=1, help="multiply steps and prompts per step (GPU runs)")
    parser.add_argument("--model", default="builtin:warmstart")
    parser.add_argument("--gain", type=float, default=0.1, help="'steps to reach' target: start value + gain")
    parser.add_argument("--window", type=int, default=5, help="smoothing window (steps) for the plot and targets")
    parser.add_argument("--out-dir", default="outputs/compare")
    parser.add_argument("--skip-training", action="store_true", help="only rebuild table and plot from --out-dir")
    return parser.parse_args(argv)


def train_one(args, method: str, seed: int, model_path: str, dataset) -> float:
    import torch

    from gdpo_trl import GDPOConfig, GDPOTrainer
    from gdpo_trl.compare import METHOD_FIELDS, run_dir
    from gdpo_trl.rewards import get_reward_funcs

    out = run_dir(Path(args.out_dir), method, seed)
    config = GDPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=args.prompts_per_step * args.scale * args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_steps=args.steps * args.scale,
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
        gradient_checkpointing=False,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning needs an accelerator (torch warns otherwise)
        **METHOD_FIELDS[method],
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
    from gdpo_trl.data.sources import load_source
    from gdpo_trl.demo.tiny import resolve_model
    from gdpo_trl.rewards import get_reward_funcs
    from gdpo_trl.runs import reward_key

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = [f.__name__ for f in get_reward_funcs(REWARDS)]
    wall = {}
    if not args.skip_training:
        torch.set_num_threads(args.threads)
        model_path = resolve_model(args.model)
        # The warm start's held-out problems: the same kind it was trained on, none of them seen in its SFT.
        n_prompts = args.steps * args.scale * args.prompts_per_step * args.scale
        dataset = load_source("warmstart", size=n_prompts, seed=0)
        total = len(args.methods) * len(args.seeds)
        for i, (method, seed) in enumerate((m, s) for m in args.methods for s in args.seeds):
            wall[(method, seed)] = train_one(args, method, seed, model_path, dataset)
            print(f"[{i + 1}/{total}] {method} seed {seed}: {wall[(method, seed)]:.0f} s", flush=True)

    metrics = [reward_key(n) for n in names] + ["reward"]
    curves = [collect(out_dir, m, args.seeds, metrics) for m in args.methods]
    table = comparison_table(curves, names + ["reward"], gain=args.gain, window=args.window, tail=args.window)
    steps = curves[0].steps[-1] if curves[0].steps else 0
    header = (
        f"Model {args.model}; {len(args.seeds)} seeds {args.seeds}; {steps} steps of "
        f"{args.prompts_per_step * args.scale} prompts x {args.num_generations} completions; "
        f"lr {args.learning_rate}; max {args.max_completion_length} completion tokens."
    )
    if wall:
        header += f" Wall time {sum(wall.values()) / 60:.1f} min for {len(wall)} runs."
    (out_dir / "comparison.md").write_text(header + "\n\n" + table + "\n")
    plot_comparison(curves, names, out_dir / "comparison.png", window=args.window, title=header.split(";")[0])
    print(header + "\n\n" + table)
    print(f"\nwrote {out_dir / 'comparison.md'} and {out_dir / 'comparison.png'}")


if __name__ == "__main__":
    main()
