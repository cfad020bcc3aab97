"""Rule-based rewards for GSM8K-style ``<think>...</think><answer>...</answer>`` completions.

Three rewards, each a plain function with TRL's reward signature ``f(completions, **kwargs) -> list[float]``:

- :func:`format_reward`: 1.0 when the completion is exactly one non-blank ``<think>`` block followed by one
  non-blank ``<answer>`` block and nothing else.
- :func:`correctness_reward`: 1.0 when the content of the last ``<answer>`` block is the same number as the gold
  answer in the dataset's ``answer`` column.
- :func:`integer_reward`: 1.0 when the content of the last ``<answer>`` block is an integer literal.

Completions may be standard (a ``str``) or conversational (a list of messages, of which the last one is scored;
the first one under ``semantics="reference"``).

Deliberate difference from the GDPO paper's reference implementation: it compares answer strings exactly and tests
integers with ``str.isdigit``, so ``"1,080"``, ``"-3"`` and ``"18.0"`` all fail there. Here both sides are normalised
(whitespace, a leading ``$``, thousands commas and a trailing ``.`` are dropped) and compared as exact decimals, and
the integer rule accepts a minus sign and thousands grouping. Only ASCII digits count as digits.

``semantics="reference"`` (a keyword argument of each reward; from a recipe,
``reward_kwargs: {format: {semantics: reference}, ...}``) gives the rules of the paper's reference code instead:

- the text scored: the content of the **first** message of a conversational completion (the reference reads
  ``completion[0]["content"]``); a plain string completion is scored as it is.
- answer extraction: the text after the last ``<answer>``, cut at the first ``</answer>`` after it if there is one,
  stripped; so ``<answer>42`` without a closing tag still answers 42, and a completion with no ``<answer>`` at all
  answers with its whole (stripped) text.
- correctness: that answer ``==`` the gold value, with no conversion (``"1,080" != "1080"``, ``"18.0" != "18"``; a
  gold that is not a string, ``None`` included, never matches). :func:`reference_gold_answer` reads a GSM8K
  solution's gold the reference's way (between the first and the second ``####``).
- integer: ``str.isdigit()`` of that answer (no minus sign or commas; it accepts other scripts' digits and
  superscripts, as Python does).
- format: the completion is ``<think>.*?</think>\n<answer>.*?</answer>`` anchored at both ends (an optional final
  newline allowed, as ``$`` does), dot matching newlines, **and** it holds exactly one ``<answer>`` and exactly one
  ``</answer>`` (the ``<think>`` tags are not counted): exactly one newline between the blocks, blocks may be empty,
  leading whitespace fails.

docs/gsm8k_fidelity.md lists every difference between the two and why our defaults differ.

The functions are stdlib-only so that ``import gdpo_trl.rewards`` never pulls in torch or trl.
"""

from __future__ import annotations

import re
from decimal import Decimal

__all__ = [
    "SEMANTICS",
    "correctness_reward",
    "extract_answer",
    "format_reward",
    "integer_reward",
    "reference_answer",
    "reference_gold_answer",
]

SEMANTICS = ("ours", "reference")

_OPEN, _CLOSE = "<answer>", "</answer>"

# Each lookahead demands a non-space character that is not the block's own closing tag: that rejects blank content
# without building substrings to ``strip()``. The ``.*`` are greedy on purpose: once each tag is known to occur only
# once, greedy and lazy match the same text, and greedy backtracks over the short answer block instead of stepping
# through the whole reasoning text (about 25x faster on 1 KB completions).
_FORMAT_RE = re.compile(
    r"\s*<think>(?=\s*(?!</think>)\S).*</think>\s*<answer>(?=\s*(?!</answer>)\S).*</answer>\s*", re.DOTALL
)
_FORMAT_TAGS = ("<think>", "</think>", _OPEN, _CLOSE)

# ``[0-9]`` rather than ``\d``: ``\d`` also matches other scripts' digits (e.g. Arabic-Indic), which we reject.
_INT_BODY = r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)"
_INTEGER_RE = re.compile(_INT_BODY)
# A plain number: optional ``$``, optional minus, integer part (optionally comma-grouped) and optional fraction, or a
# bare fraction like ``.5``; then an optional trailing ``.`` (sentence end). Group 1 is the number itself.
_NUMBER_RE = re.compile(r"\s*\$?(" + _INT_BODY + r"(?:\.[0-9]+)?|-?\.[0-9]+)\.?\s*")


def text_to_score(completion) -> str:
    """Return the text to score: the completion itself, or the content of the last message of a conversation."""
    if isinstance(completion, str):
        return completion
    if not completion:
        return ""
    content = completion[-1]["content"]
    if not isinstance(content, str):
        raise TypeError(f"expected the last message's content to be a str, got {type(content).__name__}")
    return content


def extract_answer(text: str) -> str | None:
    """Return the stripped content of the last complete ``<answer>...</answer>`` block, or ``None`` if there is none.

    A complete block is an opening tag and the first closing tag after it. Searching backwards from the last closing
    tag with ``str.rfind`` finds it without scanning the (usually long) reasoning text through a regex.
    """
    end = text.rfind(_CLOSE)
    if end == -1:
        return None
    start = text.rfind(_OPEN, 0, end)
    if start == -1:
        return None
    start += len(_OPEN)
    # A stray closing tag may sit between this opening tag and the last closing tag; the block ends at the first one.
    end = text.find(_CLOSE, start)
    return text[start:end].strip()


# The reference's layout; fullmatch with an optional final newline reproduces `re.search(r"^...$")` exactly.
_REFERENCE_FORMAT_RE = re.compile(r"<think>.*?</think>\n<answer>.*?</answer>\n?", re.DOTALL)


def _reference_text(completion) -> str:
    """The text the reference scores: a string as it is, else the content of the conversation's *first* message."""
    if isinstance(completion, str):
        return completion
    if not completion:
        return ""
    content = completion[0]["content"]
    if not isinstance(content, str):
        raise TypeError(f"expected the first message's content to be a str, got {type(content).__name__}")
    return content


def reference_answer(text: str) -> str:
    """The reference's answer: after the last ``<answer>``, up to the first ``</answer>`` after it (if any), stripped."""
    return text.split(_OPEN)[-1].split(_CLOSE)[0].strip()


def reference_gold_answer(solution: str) -> str | None:
    """A GSM8K solution's gold answer the reference's way: ``None`` without ``####``, else the text between the first
    ``####`` and the next one (or the end), stripped. (:func:`gdpo_trl.data.gsm8k.parse_gold_answer`, which our
    loader uses, takes the text after the *last* ``####`` and rejects a solution without one.)"""
    if "####" not in solution:
        return None
    return solution.split("####")[1].strip()


def _is_reference_format_ok(text: str) -> bool:
    return text.count(_OPEN) == 1 and text.count(_CLOSE) == 1 and _REFERENCE_FORMAT_RE.fullmatch(text) is not None


def _check_semantics(semantics: str, reward: str) -> bool:
    """Whether ``semantics`` asks for the reference rules; raises for anything but the two known names."""
    if semantics not in SEMANTICS:
        raise ValueError(f"{reward}: semantics must be one of {SEMANTICS}, got {semantics!r}")
    return semantics == "reference"


def parse_number(text: str) -> Decimal | None:
    """Normalise ``text`` and return it as an exact ``Decimal``, or ``None`` if it is not a plain number."""
    match = _NUMBER_RE.fullmatch(text)
    if match is None:
        return None
    return Decimal(match.group(1).replace(",", ""))


def _is_format_ok(text: str) -> bool:
    # Uniqueness first, so the regex never backtracks across repeated tags. Exactly four '<' (one per tag) is a
    # single fast scan that settles it for most completions; otherwise count each tag.
    if text.count("<") != 4:
        for tag in _FORMAT_TAGS:
            if text.count(tag) != 1:
                return False
    return _FORMAT_RE.fullmatch(text) is not None


def format_reward(completions, semantics: str = "ours", **kwargs) -> list[float]:
    """1.0 per completion that is exactly ``<think>X</think>`` then ``<answer>Y</answer>``, else 0.0.

    Leading/trailing whitespace and whitespace between the blocks are allowed; each of the four tags must appear
    exactly once and both ``X`` and ``Y`` must hold non-blank text. Extra keyword arguments from TRL are ignored.
    ``semantics="reference"``: the reference's rule instead (see the module docstring).
    """
    if _check_semantics(semantics, "format_reward"):
        return [1.0 if _is_reference_format_ok(_reference_text(c)) else 0.0 for c in completions]
    return [1.0 if _is_format_ok(text_to_score(c)) else 0.0 for c in completions]


def correctness_reward(completions, answer=None, semantics: str = "ours", **kwargs) -> list[float]:
    """1.0 per completion whose extracted answer is the same number as its gold ``answer``, else 0.0.

    Both sides are normalised (surrounding whitespace, a leading ``$``, thousands commas, a trailing ``.``) and
    compared as exact decimals, so ``18.0 == 18`` and ``1,080 == 1080``. Commas must form proper groups of three
    (``1,0800`` is not a number). Anything that is not a plain number after
    that (units, words, expressions, non-ASCII digits) scores 0.0, as does a missing answer block. A gold answer that
    is itself not a plain number can never be matched, so its completions score 0.0.
    ``semantics="reference"``: the reference's exact string comparison instead (see the module docstring).

    Raises:
        ValueError: if the dataset has no ``answer`` column, or it does not hold one entry per completion.
    """
    reference = _check_semantics(semantics, "correctness_reward")
    if answer is None:
        raise ValueError("correctness_reward needs an `answer` column in the dataset (the gold answer per prompt)")
    if len(answer) != len(completions):
        raise ValueError(f"got {len(completions)} completions but {len(answer)} gold answers")
    if reference:
        pairs = zip(completions, answer, strict=True)
        return [1.0 if reference_answer(_reference_text(c)) == gold else 0.0 for c, gold in pairs]
    rewards = []
    for completion, gold in zip(completions, answer, strict=True):
        predicted = extract_answer(text_to_score(completion))
        if predicted is None:
            rewards.append(0.0)
            continue
        gold_value = parse_number(str(gold))
        ok = gold_value is not None and parse_number(predicted) == gold_value
        rewards.append(1.0 if ok else 0.0)
    return rewards


def _is_integer_answer(text: str) -> bool:
    predicted = extract_answer(text)
    return predicted is not None and _INTEGER_RE.fullmatch(predicted) is not None


def integer_reward(completions, semantics: str = "ours", **kwargs) -> list[float]:
    """1.0 per completion whose extracted answer is an integer literal, else 0.0.

    Accepted: an optional ``-`` and ASCII digits, optionally grouped by thousands commas (``18``, ``-3``, ``1,080``).
    Rejected: decimals (``18.0``), a trailing ``.``, currency signs, bad grouping (``1,0800``), words, non-ASCII digits
    and a missing answer block. ``semantics="reference"``: ``str.isdigit`` instead (see the module docstring).
    """
    if _check_semantics(semantics, "integer_reward"):
        return [1.0 if reference_answer(_reference_text(c)).isdigit() else 0.0 for c in completions]
    return [1.0 if _is_integer_answer(text_to_score(c)) else 0.0 for c in completions]


# A number as written in running text: optional minus, digits with optional thousands commas and decimals.
_LAST_NUMBER_RE = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")
_BOXED_RE = re.compile(r"\\boxed\{([^{}]*)\}")


def last_number_answer(text: str) -> Decimal | None:
    """What a model that ignores our layout answered: the content of the last ``\\boxed{...}`` when there is one,
    else the last number in the text (thousands commas and a trailing ``.`` dropped); ``None`` when there is none."""
    boxed = _BOXED_RE.findall(text)
    candidates = _LAST_NUMBER_RE.findall(boxed[-1]) if boxed else []
    candidates = candidates or _LAST_NUMBER_RE.findall(text)
    for candidate in reversed(candidates):
        value = parse_number(candidate.strip(","))
        if value is not None:
            return value
    return None


def last_number_reward(completions, answer=None, **kwargs) -> list[float]:
    """1.0 per completion whose last number (or last ``\\boxed{}`` content) equals its gold ``answer``, else 0.0.

    Not a training reward: it measures what a model can already solve when it answers in its own style (steps,
    LaTeX, ``\\boxed{}``), as a released instruct model does with its own chat default.
    """
    if answer is None or len(answer) != len(completions):
        raise ValueError("last_number_reward needs an `answer` column with one gold answer per completion")
    golds = [parse_number(str(gold)) for gold in answer]
    return [
        1.0 if gold is not None and last_number_answer(text_to_score(c)) == gold else 0.0
        for c, gold in zip(completions, golds, strict=True)
    ]


# The values each reward can take (read by rules that need a reward's range: SAW's offsets, ODRPO's thresholds).
format_reward.reward_range = (0.0, 1.0)
correctness_reward.reward_range = (0.0, 1.0)
integer_reward.reward_range = (0.0, 1.0)
last_number_reward.reward_range = (0.0, 1.0)
