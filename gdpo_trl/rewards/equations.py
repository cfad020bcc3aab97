"""``equations``: a process reward for math reasoning: each equation written in a completion is a step, scored 1.0
if its arithmetic is right and 0.0 if not.

An equation is numbers joined by ``+ - * / × ÷`` on the left of ``=`` and one number on the right: ``12 * 3 = 36``,
``3*4=12``, ``48/2 = 24``, ``1,200 + 0.5 = 1200.5``. The left side is evaluated exactly (fractions, usual operator
precedence); it is right when it equals the right side exactly, or, for a right side written with decimals, when
rounded to that many decimals (``10 / 3 = 3.33`` is right, ``10 / 3 = 3`` is not). A division by zero is wrong.

A step ends at the end of the equation's line, so the tokens that wrote the line get its credit; when more equations
follow on the same line (``3*4=12, 12+5=17``), each but the last ends right after its result instead. A completion
without equations gets ``None`` (the reward does not apply). Stdlib only.
"""

from __future__ import annotations

import re
from fractions import Fraction

from gdpo_trl.rewards.process import completion_text, process_reward

_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_OPERATOR = r"[-+*/×÷]"
EQUATION = re.compile(
    rf"(?<![\w.,])(?P<left>{_NUMBER}(?:\s*{_OPERATOR}\s*{_NUMBER})+)\s*=\s*(?P<right>-?{_NUMBER})(?![\d.,]\d)"
)
_TOKEN = re.compile(rf"{_NUMBER}|{_OPERATOR}")


def _number(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def evaluate(expression: str) -> Fraction | None:
    """The exact value of ``12 * 3 + 4``-style ``expression`` (``*`` and ``/`` before ``+`` and ``-``); None on a
    division by zero."""
    tokens = _TOKEN.findall(expression)
    total, term, operator = Fraction(0), _number(tokens[0]), "+"
    for op, value in zip(tokens[1::2], map(_number, tokens[2::2]), strict=True):
        if op in "*×":
            term *= value
        elif op in "/÷":
            if value == 0:
                return None
            term /= value
        else:  # + or -: close the current product term
            total, term, operator = (total + term if operator == "+" else total - term), value, op
    return total + term if operator == "+" else total - term


def is_right(left: str, right: str) -> bool:
    """Whether ``left`` evaluates to ``right``: exactly, or rounded to the decimals ``right`` is written with."""
    value, target = evaluate(left), _number(right)
    if value is None:
        return False
    decimals = len(right.partition(".")[2])
    return value == target or (decimals > 0 and round(value, decimals) == target)


def equation_steps(text: str) -> list[tuple[int, float]] | None:
    """``(end, score)`` for each equation in ``text`` (see the module docstring); None without equations."""
    matches = list(EQUATION.finditer(text))
    steps = []
    for i, match in enumerate(matches):
        line_end = text.find("\n", match.end())
        line_end = len(text) if line_end == -1 else line_end
        more_on_line = i + 1 < len(matches) and matches[i + 1].start() < line_end
        end = match.end() if more_on_line else line_end
        steps.append((end, 1.0 if is_right(match["left"], match["right"]) else 0.0))
    return steps or None


@process_reward
def equations_reward(completions, **kwargs) -> list[list[tuple[int, float]] | None]:
    """Process reward: each equation in the completion is a step scoring 1.0 if right, 0.0 if wrong."""
    return [equation_steps(completion_text(completion)) for completion in completions]
