"""A GSM8K format reward that pays for the layout only when the think block holds written work.

:func:`reasoning_format_reward` is 1.0 where :func:`gdpo_trl.rewards.gsm8k.format_reward` is 1.0 **and** the
``<think>`` block holds at least ``min_lines`` non-blank lines (default 2), at least ``min_calculations`` of which
(default 1) write a calculation: a digit, then ``=``, then a number on the same line (``30 - 2 = 28``,
``\\[ 3 \\times 5 = 15 \\]``). Registered as ``"reasoning_format"``.

Why: the paper-parity format rule (and ours) accepts any non-blank think block, so a small model can collect it with
a one-line think and a guessed number. Study H9 (docs/results/README.md) measured that on
Qwen2.5-Coder-0.5B-Instruct: 1,169 of the 1,200 completions of its six trained evaluations think in one line. The
rule was read off H9's committed completions (docs/results/qwen_gdpo_grpo/): every one of those one-line thinks
fails it. Of the start's 17 correct answers, the 14 that reasoned at length but never closed ``</think>`` pass once
the tag is closed; of the 2 in the layout, the one that writes its steps passes and the other, a one-line plan ("we
need to calculate ... and then find the difference") with no calculation, fails, as do the start's 48 wrong one-line
thinks in the layout. tests/rewards/test_reasoning_format.py counts all of it from the committed files.

The GDPO paper's remedy for an easy reward that pays without the hard one is conditioning (Sec. 3.2, Eq. 8): the
strict recipes (recipes/cpu/qwen_gdpo_strict, recipes/Qwen2.5-1.5B-Instruct/gdpo_strict) also pay this reward and
the integer reward only where the answer is correct (``reward_conditions``).

Stdlib-only, like the rest of :mod:`gdpo_trl.rewards`.
"""

from __future__ import annotations

import re

from gdpo_trl.rewards.gsm8k import format_reward, text_to_score

__all__ = ["calculation_lines", "reasoning_format_reward", "think_lines"]

_THINK_RE = re.compile(r"<think>(.*)</think>", re.DOTALL)
# A digit, then ``=`` later on the line, then a number within a few characters (a ``$``, ``\(``, a space or a unit
# sign may sit between): ``30 - 2 = 28``, ``$12 * 3 = $36``, ``\[ 4 + 5 = 9 \]``. A restated question ("he has 3
# apples") has no ``=``; a bare "= 5" without a digit before it states, not computes.
_CALCULATION_RE = re.compile(r"[0-9][^=\n]*=[^0-9\n]{0,12}[0-9]")


def think_lines(text: str) -> list[str]:
    """The non-blank lines between ``<think>`` and ``</think>`` (none when the block is missing)."""
    match = _THINK_RE.search(text)
    if match is None:
        return []
    return [line for line in match.group(1).splitlines() if line.strip()]


def calculation_lines(lines: list[str]) -> int:
    """How many of ``lines`` write a calculation (a digit, ``=``, then a number)."""
    return sum(1 for line in lines if _CALCULATION_RE.search(line))


def reasoning_format_reward(completions, min_lines: int = 2, min_calculations: int = 1, **kwargs) -> list[float]:
    """1.0 per completion in the layout (:func:`~gdpo_trl.rewards.gsm8k.format_reward`) whose think block holds at
    least ``min_lines`` non-blank lines, at least ``min_calculations`` of them a calculation; else 0.0.

    Set the two from a recipe with ``reward_kwargs: {reasoning_format: {min_lines: 3}}``. Extra keyword arguments
    from TRL are ignored.

    Raises:
        ValueError: if ``min_lines`` is below 1 or ``min_calculations`` below 0.
    """
    if min_lines < 1 or min_calculations < 0:
        raise ValueError(
            f"reasoning_format_reward needs min_lines >= 1 and min_calculations >= 0, got {min_lines} and "
            f"{min_calculations}."
        )
    laid_out = format_reward(completions)
    rewards = []
    for completion, layout in zip(completions, laid_out, strict=True):
        lines = think_lines(text_to_score(completion)) if layout else []
        ok = len(lines) >= min_lines and calculation_lines(lines) >= min_calculations
        rewards.append(1.0 if ok else 0.0)
    return rewards
