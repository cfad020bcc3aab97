"""Outcome-only GDPO against GDPO with the `equations` process reward, on the offline task, over several seeds.

Both methods train the SFT warm start (``builtin:warmstart``) with the format, correctness and integer rewards and
the settings of ``scripts/compare_methods.py``; they differ in one thing:

- ``gdpo``: the three outcome rewards, plus the equations score as an *outcome* reward of weight 0 (each
  completion's fraction of right equations). Weight 0 changes no advantage (its GDPO term is multiplied by 0 and no
  row is all-NaN), it is only there so the run logs the same ``rewards/equations_reward/mean``;
- ``gdpo_process``: the three outcome rewards plus the ``equations`` process reward (weight 1): token-level
  advantages.

``rewards/equations_reward/mean`` is, in both, the mean over completions of the fraction of right equations (a
completion without equations is left out). Writes ``comparison.md`` and one folder per run under --out-dir.

    python scripts/compare_process_rewards.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

OUTCOMES = ["format", "correctness", "integer"]
METHODS = ("gdpo", "gdpo_process")


class EquationsScore:
    """The equations process reward seen as one outcome per completion: its mean step score (None without steps)."""

    __name__ = "equations_reward"

    def __call__(self, completions, **kwargs):
        from gdpo_trl.rewards.equations import equations_reward

        steps = equations_reward(completions=completions)
        return [sum(s for _, s in pairs) / len(pairs) if pairs else None for pairs in steps]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default="builtin:warmstart")
    parser.add_argument("--window", type=int, default=5, help="final value = mean of the last WINDOW logged steps")
    parser.add_argument("--out-dir", default="outputs/compare_process")
    parser.add_argument("--skip-training", action="store_true", help="only rebuild the table from --out-dir")
    return parser.parse_args(argv)


def train_one(args, method: str, seed: int, model_path: str, dataset) -> float:
    from gdpo_trl import GDPOConfig, GDPOTrainer
    from gdpo_trl.compare import run_dir
    from gdpo_trl.rewards import get_reward_funcs

    process = method == "gdpo_process"
    rewards = get_reward_funcs([*OUTCOMES, "equations"]) if process else [*get_reward_funcs(OUTCOMES), EquationsScore()]
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
        multi_objective_aggregation="normalize_then_sum",
        reward_weights=[1.0, 1.0, 1.0, 1.0 if process else 0.0],
    )
    start = time.perf_counter()
    trainer = GDPOTrainer(model_path, reward_funcs=rewards, args=config, train_dataset=dataset)
    trainer.train()
    trainer.state.save_to_json(str(out / "trainer_state.json"))
    return time.perf_counter() - start


def main(argv=None):
    args = parse_args(argv)
    import torch

    from gdpo_trl.compare import collect, comparison_table
    from gdpo_trl.runs import reward_key
    from gdpo_trl.tiny import resolve_model
    from gdpo_trl.warmstart import load_warmstart_dataset

    names = ["format_reward", "correctness_reward", "integer_reward", "equations_reward"]
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    wall = {}
    if not args.skip_training:
        torch.set_num_threads(args.threads)
        model_path = resolve_model(args.model)
        dataset = load_warmstart_dataset(args.steps * args.prompts_per_step, seed=0, split="eval")
        runs = [(m, s) for s in args.seeds for m in args.methods]  # seed-major: a partial sweep stays paired
        for i, (method, seed) in enumerate(runs):
            wall[(method, seed)] = train_one(args, method, seed, model_path, dataset)
            print(f"[{i + 1}/{len(runs)}] {method} seed {seed}: {wall[(method, seed)]:.0f} s", flush=True)

    metrics = [reward_key(n) for n in names]
    curves = [collect(out_dir, m, args.seeds, metrics) for m in args.methods]
    # The total `reward` is left out: it sums different reward sets in the two methods.
    table = comparison_table(curves, names, gain=0.1, window=args.window, tail=args.window)
    header = (
        f"Model {args.model}; seeds {args.seeds}; {args.steps} steps of {args.prompts_per_step} prompts x "
        f"{args.num_generations} completions; lr {args.learning_rate}; max {args.max_completion_length} tokens."
    )
    if wall:
        header += f" Wall time {sum(wall.values()) / 60:.1f} min for {len(wall)} runs."
    (out_dir / "comparison.md").write_text(header + "\n\n" + table + "\n")
    print(header + "\n\n" + table)


if __name__ == "__main__":
    main()
