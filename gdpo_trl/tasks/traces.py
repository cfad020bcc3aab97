"""Flawed solution traces for the warm start's SFT: a worked answer with imperfections drawn from a :class:`TraceMix`.

A model that imitates these traces starts mid-range on the format, correctness and integer rewards, so RL has room,
and signal, on each (see :mod:`gdpo_trl.tasks.warmstart`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# The ways a trace's format is broken, drawn equally often among broken traces. Only the last one loses the answer
# block, so only it also costs the correctness and integer rewards.
FORMAT_BREAKS = ("no_close_think", "no_think_tags", "text_after_answer", "no_answer_tags")
# The ways an answer is written as a non-integer. Both still count as correct (``12.0 == 12``, ``$12 == 12``), so
# the integer reward varies on its own rather than tracking correctness.
NON_INTEGER_STYLES = ("decimal", "dollar")
WRONG_OFFSETS = (-3, -2, -1, 1, 2, 3)


@dataclass(frozen=True)
class TraceMix:
    """How often each imperfection is mixed into the SFT traces, each drawn independently per trace.

    A model that imitates this mix scores about ``1 - broken_format`` on format,
    ``(1 - broken_format / 4) * (1 - non_integer)`` on integer and ``(1 - broken_format / 4) * (1 - wrong_answer)``
    times its arithmetic accuracy on correctness: all near 0.5, leaving room for RL on each. Independent draws give
    groups of samples with varied reward combinations, which is what GDPO's per-reward normalisation works on.
    """

    broken_format: float = 0.5
    wrong_answer: float = 0.25  # the answer (not the reasoning) off by 1 to 3, like a careless copy
    non_integer: float = 0.45


def reasoning(row: dict) -> str:
    """The worked solution of ``row`` as terse equations (``3*4=12, 12+5=17``): short traces for a char model."""
    return ", ".join(f"{a}{op}{b}={c}" for a, op, b, c in row["equations"])


def gold_answer(row: dict) -> int:
    """The row's answer: the result of its last equation (every template ends on the answer)."""
    return row["equations"][-1][3]


def make_trace(row: dict, rng: random.Random, mix: TraceMix | None = None) -> tuple[str, dict]:
    """Return a completion for ``row`` with imperfections drawn from ``mix``, and which ones were drawn.

    The second item is ``{"format": <a FORMAT_BREAKS entry or None>, "wrong": bool, "style": <a NON_INTEGER_STYLES
    entry or None>}``. Deterministic in ``rng``'s state.
    """
    mix = mix or TraceMix()
    kind = rng.choice(FORMAT_BREAKS) if rng.random() < mix.broken_format else None
    wrong = rng.random() < mix.wrong_answer
    style = rng.choice(NON_INTEGER_STYLES) if rng.random() < mix.non_integer else None
    value = gold_answer(row)
    if wrong:
        offset = rng.choice(WRONG_OFFSETS)
        value = value + offset if value + offset >= 0 else value - offset  # never negative, never the gold answer
    answer = {"decimal": f"{value}.0", "dollar": f"${value}", None: str(value)}[style]
    think = reasoning(row)
    text = {
        None: f"<think>{think}</think>\n<answer>{answer}</answer>",
        "no_close_think": f"<think>{think}\n<answer>{answer}</answer>",
        "no_think_tags": f"{think}\n<answer>{answer}</answer>",
        "text_after_answer": f"<think>{think}</think>\n<answer>{answer}</answer>\nDone.",
        "no_answer_tags": f"<think>{think}</think>\nThe answer is {answer}.",
    }[kind]
    return text, {"format": kind, "wrong": wrong, "style": style}
