"""Seconds per step of GDPOTrainer vs TRL's own GRPOTrainer with ``multi_objective_aggregation="normalize_then_sum"``
on the real SmolLM2-135M-Instruct (builtin:smollm2-135m-instruct, needs the smollm2 extra), side by side.

Same seed, same prompts (the shipped GSM8K sample, the recipe's system prompt), same LoRA, same batch, one run each
per round; rounds alternate the order (GRPO first, then GDPO first, ...) so a machine that gets busier or quieter
hits both alike. The first step of every run is dropped (warm-up). Writes ``docs/results/real_model/step_time.json``
with both medians, their ratio (goal <= 1.02), the machine and its load average before and after.

    python scripts/benchmark_real_step_time.py [--rounds 2] [--steps 3] [--threads 2]
"""

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes/cpu/smollm2_gdpo/config.yaml"
OUT = ROOT / "docs/results/real_model/step_time.json"


def run(trainer_cls, config_cls, model, dataset, args, output_dir) -> list[float]:
    from benchmark_trainer import StepTimer, cpu_config  # the synthetic benchmark's timer and settings (scripts/)
    from peft import LoraConfig

    from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward

    config = cpu_config(
        config_cls,
        output_dir,
        batch=args.prompts * args.generations,
        generations=args.generations,
        tokens=args.tokens,
        steps=args.steps,
        temperature=1.0,
        learning_rate=1e-4,
    )
    timer = StepTimer()
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = trainer_cls(
        model,
        reward_funcs=[format_reward, correctness_reward, integer_reward],
        args=config,
        train_dataset=dataset,
        peft_config=lora,
        callbacks=[timer],
    )
    trainer.train()
    return timer.times[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="steps per run; the first is dropped")
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=str(OUT))
    parser.add_argument(
        "--model",
        default="builtin:smollm2-135m-instruct",
        help="e.g. the recipe's SFT warm start (outputs/smollm2-gsm8k-sft), whose rewards are not all 0",
    )
    args = parser.parse_args()
    # Imported after parsing, so --help answers without loading torch and TRL.
    import torch
    import yaml
    from trl import GRPOConfig, GRPOTrainer

    from gdpo_trl import GDPOConfig, GDPOTrainer
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.data.gsm8k import load_gsm8k, with_system_prompt
    from gdpo_trl.models.shipped import machine

    torch.set_num_threads(args.threads)

    model = resolve_model(args.model)
    system_prompt = yaml.safe_load(RECIPE.read_text()).get("system_prompt")  # None: the default prompt
    dataset = with_system_prompt(load_gsm8k("sample"), system_prompt)
    load_before = os.getloadavg()
    times = {"GRPOTrainer": [], "GDPOTrainer": []}
    contenders = [("GRPOTrainer", GRPOTrainer, GRPOConfig), ("GDPOTrainer", GDPOTrainer, GDPOConfig)]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, trainer_cls, config_cls in contenders if r % 2 == 0 else contenders[::-1]:
                times[name] += run(trainer_cls, config_cls, model, dataset, args, tmp)
            print(
                f"round {r + 1}/{args.rounds}: "
                + ", ".join(f"{k} {statistics.median(v):.1f} s" for k, v in times.items()),
                flush=True,
            )
    grpo, gdpo = statistics.median(times["GRPOTrainer"]), statistics.median(times["GDPOTrainer"])
    result = {
        "gdpo_seconds_per_step": round(gdpo, 2),
        "grpo_seconds_per_step": round(grpo, 2),
        "ratio": round(gdpo / grpo, 3),
        "gdpo_step_times": [round(t, 2) for t in times["GDPOTrainer"]],
        "grpo_step_times": [round(t, 2) for t in times["GRPOTrainer"]],
        "machine": f"{machine()}, {os.cpu_count()} CPU cores, {args.threads} torch threads, no GPU",
        "load": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "setup": (
            f"{args.model}, LoRA r=16 all-linear, {args.prompts} prompts x {args.generations} "
            f"completions x up to {args.tokens} tokens, 3 rewards, seed 0, {args.rounds} rounds x {args.steps} steps "
            "(first of each run dropped), median"
        ),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
