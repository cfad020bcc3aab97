"""What each reward's own copy of its inputs costs: milliseconds per reward call.

TRL hands every reward function the same lists (prompts, completions, completion ids, the dataset's columns), so
``CheckedReward`` gives each call its own copies (:func:`gdpo_trl.trainer.reward_checks.private_inputs`). This times
that copying for a batch of ``--completions`` completions of ``--tokens`` tokens (about 5 characters a token), plain
text and conversational (lists of messages)::

    python scripts/benchmark_reward_inputs.py [--completions 16] [--tokens 1024] [--repeats 5]

Not a test: compare the figure with a training step's seconds.
"""

from __future__ import annotations

import argparse
import timeit


def batch(completions: int, tokens: int, conversational: bool) -> dict:
    """The keywords TRL passes one reward call, for ``completions`` completions of ``tokens`` tokens."""
    text = "word " * tokens
    if conversational:
        prompt = [{"role": "system", "content": "Think, then answer. " * 10}, {"role": "user", "content": "q " * 100}]
        prompts = [prompt] * completions
        done = [[{"role": "assistant", "content": text}] for _ in range(completions)]
    else:
        prompts, done = ["Question: how many apples? " * 20] * completions, [text] * completions
    return {
        "prompts": prompts,
        "completions": done,
        "completion_ids": [list(range(tokens)) for _ in range(completions)],
        "answer": ["42"] * completions,
        "trainer_state": object(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmark_reward_inputs.py", description=__doc__.splitlines()[0])
    parser.add_argument("--completions", type=int, default=16, help="completions per reward call (default 16)")
    parser.add_argument("--tokens", type=int, default=1024, help="tokens per completion (default 1024)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; the fastest is reported (default 5)")
    args = parser.parse_args(argv)
    for name in ("completions", "tokens", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")

    from gdpo_trl.trainer.reward_checks import private_inputs  # imports torch: after --help

    calls = 100
    for conversational in (False, True):
        kwargs = batch(args.completions, args.tokens, conversational)
        best = min(timeit.repeat(lambda k=kwargs: private_inputs(k), number=calls, repeat=args.repeats)) / calls
        kind = "conversational" if conversational else "plain text"
        print(f"{kind}: {best * 1e3:.2f} ms per reward call ({args.completions} x {args.tokens} tokens)")


if __name__ == "__main__":
    main()
