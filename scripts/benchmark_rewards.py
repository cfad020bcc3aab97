"""Benchmark the GSM8K rewards: completions scored per second on ~1 KB completions, on one core.

Not a test: run ``python scripts/benchmark_rewards.py [--n 10000] [--repeats 5]`` and compare each reward with the
100k completions/second target.
"""

from __future__ import annotations

import argparse
import random
import time

# Lets the script run from a checkout without installing the package.
from gdpo_trl.rewards import correctness_reward, format_reward, integer_reward

TARGET = 100_000  # completions per second per reward
WORDS = ("the", "total", "is", "so", "each", "we", "add", "then", "multiply", "by", "and", "subtract", "from", "gives")
# (predicted answer, gold answer): right, wrong, comma-grouped, decimal, currency, words, negative.
ANSWERS = [
    ("18", "18"),
    ("17", "18"),
    ("1,080", "1080"),
    ("18.0", "18"),
    ("$42", "42"),
    ("eighteen", "18"),
    ("-3", "-3"),
]


def make_completion(rng: random.Random, size: int = 1024) -> tuple[str, str]:
    """Return one ~``size``-character completion and its gold answer, in one of several good and broken shapes."""
    predicted, gold = rng.choice(ANSWERS)
    words = []
    length = 0
    while length < size - 60:
        word = rng.choice(WORDS) if rng.random() < 0.8 else str(rng.randint(0, 999))
        words.append(word)
        length += len(word) + 1
    think = " ".join(words)
    shape = rng.randrange(5)
    if shape == 0:  # no think block
        text = f"{think} <answer>{predicted}</answer>"
    elif shape == 1:  # text after the answer
        text = f"<think>{think}</think><answer>{predicted}</answer> Hope this helps!"
    elif shape == 2:  # no answer block at all
        text = f"<think>{think}</think> The answer is {predicted}."
    else:  # well formed (the most common shape late in training)
        text = f"<think>{think}</think>\n<answer>{predicted}</answer>"
    return text, gold


def best_rate(func, completions: list[str], answers: list[str], repeats: int) -> float:
    """Completions per second for ``func`` on the whole batch, best of ``repeats`` runs."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func(completions, answer=answers)
        best = min(best, time.perf_counter() - start)
    return len(completions) / best


def main() -> None:
    """Parse arguments, build the batch, time each reward and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="completions per timed batch")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per reward; the best one counts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    pairs = [make_completion(rng) for _ in range(args.n)]
    completions = [text for text, _ in pairs]
    answers = [gold for _, gold in pairs]
    mean_size = sum(map(len, completions)) / len(completions)
    print(f"{args.n} completions, mean {mean_size:.0f} chars, best of {args.repeats}")
    print(f"{'reward':<14}{'completions/s':>16}  target {TARGET:,}/s")
    for name, func in [("format", format_reward), ("correctness", correctness_reward), ("integer", integer_reward)]:
        rate = best_rate(func, completions, answers, args.repeats)
        print(f"{name:<14}{rate:>16,.0f}  {'ok' if rate >= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
