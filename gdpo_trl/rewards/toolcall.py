"""Rewards for the tool-calling task of the GDPO paper (the ToolRL rewards), with TRL's reward signature.

A completion is ``<think>...</think>``, then a ``<tool_call>`` block (one JSON object
``{"name": ..., "parameters": {...}}`` per line) and/or a ``<response>...</response>`` block. Which parts are
required depends on the gold assistant text in the dataset column ``answer``.

- :func:`tool_format` (0 or 1): the stripped completion must be exactly the shape the gold answer has, anchored at
  both ends, non-greedy, dot matching newlines:

  ==================  ===================================================================================
  gold has            whole completion must match (and tag counts)
  ==================  ===================================================================================
  response only       ``<think>.*?</think>\\n<response>.*?</response>``; one ``<response>``, one ``</response>``
  tool calls only     ``<think>.*?</think>\\n<tool_call>\\n.*?\\n</tool_call>``; one of each tool_call tag
  both                the tool-call form, then ``\\n<response>.*?</response>``; each of the four tags once
  neither             ``<think>.*?</think>``
  ==================  ===================================================================================

- :func:`tool_correctness` (in [-3, 3]): 0 when the gold has no ``<tool_call>``. Otherwise the first tool_call block
  of gold and completion is parsed line by line as JSON (:func:`parse_tool_calls`: only JSON's own whitespace may
  surround a line's value); a completion that fails (missing tag, bad JSON, a blank line, a line that is not an
  object, a call without ``name``, or a call whose name matches a gold call without a
  dict ``parameters``) scores -3. Equal lists score 3. Otherwise ``S`` = multiset Jaccard of the name lists, plus
  for each gold call in order the best not-yet-used predicted call of the same name, scored by Jaccard of the
  parameter-key sets + number of gold parameters whose value is exactly equal, taken only if that score is above 0
  (ties: the earliest). The reward is ``6 * S / Smax - 3``, ``Smax = 1 + sum over gold calls of (1 + #params)``.

``matching="optimal"`` (off by default) replaces that greedy, order-dependent pairing by the one-to-one pairing with
the largest total score: greedy can give an early gold call a predicted call a later gold call needed more (see the
tests), so the same set of calls scores differently in different orders. The rest is unchanged.

Deliberate difference from the reference: a malformed *gold* answer (bad JSON, a call without ``name`` or without a
dict ``parameters``) raises ``ValueError`` naming its row instead of crashing or scoring -3, because it is a data
error no completion can fix. Values are compared with Python's ``==`` as in the reference, so ``1 == 1.0 == true``.
docs/toolcall.md lists every remaining difference from ToolRL's reward code. Stdlib-only.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Hashable

from gdpo_trl.rewards.gsm8k import text_to_score

__all__ = ["parse_tool_calls", "score_tool_calls", "tool_correctness", "tool_format"]

MIN_REWARD, MAX_REWARD = -3.0, 3.0
_CALL_OPEN, _CALL_CLOSE = "<tool_call>", "</tool_call>"
_RESP_OPEN, _RESP_CLOSE = "<response>", "</response>"

_THINK = r"<think>.*?</think>"
_CALLS = r"\n<tool_call>\n.*?\n</tool_call>"
_RESPONSE = r"\n<response>.*?</response>"
# (gold has tool calls, gold has a response) -> (pattern, tags that must occur exactly once in the completion)
_FORMATS = {
    (False, True): (re.compile(_THINK + _RESPONSE, re.DOTALL), (_RESP_OPEN, _RESP_CLOSE)),
    (True, False): (re.compile(_THINK + _CALLS, re.DOTALL), (_CALL_OPEN, _CALL_CLOSE)),
    (True, True): (
        re.compile(_THINK + _CALLS + _RESPONSE, re.DOTALL),
        (_CALL_OPEN, _CALL_CLOSE, _RESP_OPEN, _RESP_CLOSE),
    ),
    (False, False): (re.compile(_THINK, re.DOTALL), ()),
}


def _gold_list(answer, n: int, reward: str) -> list[str]:
    if answer is None:
        raise ValueError(f"{reward} needs an `answer` column in the dataset (the gold assistant text per prompt)")
    if len(answer) != n:
        raise ValueError(f"{reward}: got {n} completions but {len(answer)} gold answers")
    return [str(gold) for gold in answer]


def _format_ok(text: str, gold: str) -> bool:
    pattern, tags = _FORMATS[(_CALL_OPEN in gold, _RESP_OPEN in gold)]
    text = text.strip()
    return all(text.count(tag) == 1 for tag in tags) and pattern.fullmatch(text) is not None


def tool_format(completions, answer=None, **kwargs) -> list[float]:
    """1.0 per completion whose stripped text has exactly the block layout its gold ``answer`` has, else 0.0.

    Raises:
        ValueError: if there is no ``answer`` column or it does not hold one entry per completion.
    """
    golds = _gold_list(answer, len(completions), "tool_format")
    return [1.0 if _format_ok(text_to_score(c), gold) else 0.0 for c, gold in zip(completions, golds, strict=True)]


def parse_tool_calls(text: str) -> list | None:
    """The JSON values, one per line, of the first ``<tool_call>`` block of ``text``; ``None`` if it cannot be read.

    Like the reference, both tags must occur somewhere; the block is the text after the first ``<tool_call>``, up to
    the first ``</tool_call>`` or second ``<tool_call>``, whichever comes first (or the end of the text), stripped
    (``str.strip``) and split on ``"\\n"``. Every line must be one JSON value; lines are not trimmed here, ``json``
    itself allows JSON's whitespace (space, tab, CR) around the value but nothing else (a no-break space or a form
    feed fails), and a blank line or an empty block fails. JSON nested too deeply for the parser (``RecursionError``)
    fails too. The values are not checked.
    """
    if _CALL_OPEN not in text or _CALL_CLOSE not in text:
        return None
    block = text.split(_CALL_OPEN, 2)[1].split(_CALL_CLOSE, 1)[0].strip()
    try:
        return [json.loads(line) for line in block.split("\n")]
    except (json.JSONDecodeError, RecursionError):
        return None


def _names(calls: list) -> list | None:
    """Each call's ``name``, or ``None`` if a call is not an object, has no ``name`` or an unhashable one."""
    if not all(isinstance(call, dict) and "name" in call and isinstance(call["name"], Hashable) for call in calls):
        return None
    return [call["name"] for call in calls]


def _jaccard(a: list, b: list) -> float:
    """Multiset Jaccard: 1 for equal lists, 0 if either is empty, else overlap / (|a| + |b| - overlap)."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    overlap = sum((Counter(a) & Counter(b)).values())
    return overlap / (len(a) + len(b) - overlap)


def _pair_score(gold: dict, pred: dict) -> float:
    """Jaccard of the parameter-key sets + number of gold parameters the prediction gives exactly."""
    matched = sum(1.0 for key, value in gold.items() if key in pred and pred[key] == value)
    return _jaccard(list(gold), list(pred)) + matched


def _greedy_total(scores: list[list[float]]) -> float:
    """Reference pairing: each gold row in order takes its best unused column with score > 0 (ties: earliest)."""
    used, total = set(), 0.0
    for row in scores:
        best, best_j = 0.0, -1
        for j, score in enumerate(row):
            if j not in used and score > best:
                best, best_j = score, j
        if best_j >= 0:
            used.add(best_j)
            total += best
    return total


def _optimal_total(scores: list[list[float]]) -> float:
    """Largest total of a one-to-one pairing (rows may stay unpaired): exact search over used-column bitmasks.

    Only calls of the same name can pair (others score 0), and completions hold few calls, so the table stays tiny.
    """
    best = {0: 0.0}  # used-columns mask -> best total over the rows seen so far
    for row in scores:
        nxt = dict(best)
        for mask, total in best.items():
            for j, score in enumerate(row):
                if score > 0 and not mask >> j & 1:
                    key = mask | 1 << j
                    nxt[key] = max(nxt.get(key, 0.0), total + score)
        best = nxt
    return max(best.values())


def score_tool_calls(gold: list, pred: list | None, matching: str = "greedy") -> float:
    """The correctness reward in [-3, 3] of predicted calls ``pred`` (``None``: unreadable) against valid ``gold``."""
    if pred is None:
        return MIN_REWARD
    pred_names = _names(pred)
    gold_names = [call["name"] for call in gold]
    if pred_names is None or any(
        name in gold_names and not isinstance(call.get("parameters"), dict)
        for name, call in zip(pred_names, pred, strict=True)
    ):
        return MIN_REWARD
    if pred == gold:
        return MAX_REWARD
    scores = [
        [_pair_score(g["parameters"], p["parameters"]) if p["name"] == g["name"] else 0.0 for p in pred] for g in gold
    ]
    paired = _optimal_total(scores) if matching == "optimal" else _greedy_total(scores)
    s_max = 1.0 + sum(1.0 + len(call["parameters"]) for call in gold)
    s = _jaccard(gold_names, pred_names) + paired
    return (MAX_REWARD - MIN_REWARD) * s / s_max + MIN_REWARD


def _gold_calls(gold: str, row: int) -> list:
    calls = parse_tool_calls(gold)
    names = None if calls is None else _names(calls)
    if names is None or not all(isinstance(call.get("parameters"), dict) for call in calls):
        raise ValueError(
            f"gold answer #{row} of the batch has a <tool_call> block that is not one JSON object per line with a 'name' "
            f"and a dict 'parameters'; fix the data. Gold starts with: {gold[:120]!r}"
        )
    return calls


def tool_correctness(completions, answer=None, matching: str = "greedy", **kwargs) -> list[float]:
    """Tool-call correctness in [-3, 3] per completion against its gold ``answer`` (0.0 when the gold calls no tool).

    Args:
        matching: ``"greedy"`` (default, the reference rule) or ``"optimal"`` (best one-to-one pairing of calls);
            set it from a recipe with ``reward_kwargs: {tool_correctness: {matching: optimal}}``.

    Raises:
        ValueError: for a missing or mis-sized ``answer`` column, an unknown ``matching``, or a malformed gold call.
    """
    if matching not in ("greedy", "optimal"):
        raise ValueError(f"tool_correctness: matching must be 'greedy' or 'optimal', got {matching!r}")
    golds = _gold_list(answer, len(completions), "tool_correctness")
    rewards = []
    for row, (completion, gold) in enumerate(zip(completions, golds, strict=True)):
        if _CALL_OPEN not in gold:
            rewards.append(0.0)
            continue
        rewards.append(score_tool_calls(_gold_calls(gold, row), parse_tool_calls(text_to_score(completion)), matching))
    return rewards


# The values each reward can take (read by rules that need a reward's range: SAW's offsets, ODRPO's thresholds).
tool_format.reward_range = (0.0, 1.0)
tool_correctness.reward_range = (MIN_REWARD, MAX_REWARD)
