"""Time the mapping of process-reward steps to tokens (what GDPOTrainer runs on every batch with process rewards).

    python scripts/benchmark_process_rewards.py --tokens 1024 --steps 40 --completions 64

Builds ``--completions`` completions of ``--tokens`` tokens with Qwen2.5's tokenizer (builtin, offline): seeded
random text of words, numbers, punctuation, accented and CJK characters and emoji, encoded; ``--steps`` step ends
per completion at random character offsets. Then times ``gdpo_trl.token_rewards.local_step_rewards`` (decode check
and char-to-token mapping, on one torch thread) and prints the best of ``--repeat`` runs; the last line is
``ms_per_completion=<value>``.
"""

from __future__ import annotations

import argparse
import random
import time

WORDS = ["the", "answer", "is", "Straße", "größer", "毕", "老师", "学生", "😀", "👍🏽", "naïve", "café", "x", "=", "+"]


def random_text(rng: random.Random, length: int) -> str:
    parts = []
    while sum(map(len, parts)) < length:
        kind = rng.random()
        if kind < 0.6:
            parts.append(rng.choice(WORDS))
        elif kind < 0.8:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 6))))
        else:
            parts.append(rng.choice([".", ",", "\n", "  ", "<think>", "</think>", "?", "：", "、"]))
        parts.append(rng.choice([" ", " ", "", "\n"]))
    return "".join(parts)


def make_batch(tokenizer, completions: int, tokens: int, steps: int, seed: int):
    """Token ids, their decoded texts and each completion's sorted step ends."""
    rng = random.Random(seed)
    ids, texts, ends = [], [], []
    for _ in range(completions):
        row = tokenizer.encode(random_text(rng, tokens * 4))[:tokens]
        while len(row) < tokens:
            row += tokenizer.encode(random_text(rng, tokens))[: tokens - len(row)]
        text = tokenizer.decode(row, skip_special_tokens=True)
        ids.append(row)
        texts.append(text)
        ends.append(sorted(rng.sample(range(1, len(text) + 1), min(steps, len(text)))))
    return ids, texts, ends


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--completions", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from gdpo_trl.models.qwen import qwen_tokenizer
    from gdpo_trl.trainer.process_rewards import ProcessRewardSlot
    from gdpo_trl.trainer.token_rewards import local_step_rewards

    torch.set_num_threads(1)
    tokenizer = qwen_tokenizer()
    ids, texts, ends = make_batch(tokenizer, args.completions, args.tokens, args.steps, args.seed)
    steps = {text: [(end, float(end % 2)) for end in row] for text, row in zip(texts, ends, strict=True)}

    def reward(completions, **kwargs):
        return [steps[text] for text in completions]

    slot = ProcessRewardSlot(reward, "bench")
    best = float("inf")
    for _ in range(args.repeat):
        slot(completions=texts)
        start = time.perf_counter()
        tensor, _ = local_step_rewards([slot], ids, args.tokens, tokenizer)
        best = min(best, time.perf_counter() - start)
    placed = int((~torch.isnan(tensor)).sum())
    print(f"{args.completions} completions x {args.tokens} tokens, {args.steps} steps each ({placed} tokens scored)")
    print(f"best of {args.repeat}: {best * 1000:.1f} ms for the batch")
    print(f"ms_per_completion={best * 1000 / args.completions:.3f}")


if __name__ == "__main__":
    main()
