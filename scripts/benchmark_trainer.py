"""Step time of GDPOTrainer vs stock GRPOTrainer with TRL's native GDPO (`normalize_then_sum`), side by side.

Both train the same built-in model on the same prompts with the same rewards. Runs alternate (GRPO then GDPO, then
GDPO then GRPO, ...) so machine noise hits both alike; each run's step times come from a callback, the first step of each run (warm-up)
is dropped, and the ratio of medians is printed. Target: GDPOTrainer / GRPOTrainer <= 1.02.

    python scripts/benchmark_trainer.py [--rounds 5] [--steps 6] [--model builtin:small]
"""

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from gdpo_trl import GDPOConfig, GDPOTrainer
from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.data import load_gsm8k
from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward


class StepTimer(TrainerCallback):
    def __init__(self):
        self.times, self._start = [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


def cpu_config(config_cls, output_dir, *, batch: int, generations: int, tokens: int, steps: int, **extra):
    """The benchmarks' run settings: TRL's native GDPO aggregation (so GRPOTrainer computes the same advantages),
    on the CPU in full precision, seeded, logging every step and saving nothing; ``extra`` adds or overrides fields.
    Shared with scripts/benchmark_real_step_time.py."""
    return config_cls(
        output_dir=output_dir,
        multi_objective_aggregation="normalize_then_sum",
        per_device_train_batch_size=batch,
        num_generations=generations,
        max_completion_length=tokens,
        max_steps=steps,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        bf16=False,
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        **extra,
    )


def run(trainer_cls, config_cls, model, dataset, steps, output_dir):
    config = cpu_config(config_cls, output_dir, batch=16, generations=8, tokens=48, steps=steps)
    timer = StepTimer()
    trainer = trainer_cls(
        model,
        reward_funcs=[format_reward, correctness_reward, integer_reward],
        args=config,
        train_dataset=dataset,
        callbacks=[timer],
    )
    trainer.train()
    return timer.times[1:]  # the first step pays one-off warm-up costs


def time_gdpo_work(num_completions=16, num_generations=8, num_rewards=3, repeats=2000) -> float:
    """Milliseconds GDPOTrainer adds per generation batch on top of TRL: advantages plus every diagnostic metric."""
    from gdpo_trl.core.advantages import gdpo_advantages
    from gdpo_trl.core.diagnostics import reward_diagnostics

    rewards = torch.randint(0, 2, (num_completions, num_rewards)).float()
    weights = torch.ones(num_rewards)
    names = [f"r{k}" for k in range(num_rewards)]

    def once():
        advantages = gdpo_advantages(rewards, weights, num_generations)
        reward_diagnostics(rewards, advantages, weights, names, num_generations, gdpo=True)

    for _ in range(100):
        once()
    start = time.perf_counter()
    for _ in range(repeats):
        once()
    return (time.perf_counter() - start) / repeats * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--model", default="builtin:small")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: steadier on shared cores)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"GDPO's own work per generation batch (16 completions x 3 rewards): {time_gdpo_work():.2f} ms", flush=True)

    model = resolve_model(args.model)
    dataset = load_gsm8k("sample")
    times = {"GRPOTrainer": [], "GDPOTrainer": []}
    with tempfile.TemporaryDirectory() as tmp:
        contenders = [("GRPOTrainer", GRPOTrainer, GRPOConfig), ("GDPOTrainer", GDPOTrainer, GDPOConfig)]
        for r in range(args.rounds):
            # Swap the order every round, so "runs second" (warmer caches, or a busier machine) favours neither.
            for name, trainer_cls, config_cls in contenders if r % 2 == 0 else contenders[::-1]:
                times[name] += run(trainer_cls, config_cls, model, dataset, args.steps, tmp)
            print(
                f"round {r + 1}/{args.rounds}: "
                + ", ".join(f"{k} {statistics.median(v) * 1e3:.1f} ms" for k, v in times.items()),
                flush=True,
            )

    grpo, gdpo = statistics.median(times["GRPOTrainer"]), statistics.median(times["GDPOTrainer"])
    print(
        f"\nmodel {args.model}, 16 completions (8 per prompt) x up to 48 tokens, 3 rewards, "
        f"{len(times['GDPOTrainer'])} timed steps each"
    )
    print(f"median step time  GRPOTrainer(normalize_then_sum) {grpo * 1e3:.1f} ms   GDPOTrainer {gdpo * 1e3:.1f} ms")
    print(f"ratio GDPOTrainer / GRPOTrainer = {gdpo / grpo:.3f}  (target <= 1.02)")


if __name__ == "__main__":
    main()
