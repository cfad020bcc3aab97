"""Rewards for multi-turn tool-using agents, with TRL's reward signature.

With tools or an ``environment_factory``, TRL hands a reward each rollout's ``completion`` as a list of messages: the
assistant's turns (a parsed call in ``tool_calls``, text in ``content``) with the tools' answers (``role: tool``)
between them. An episode that went well ends on an assistant turn without calls whose content is the final answer,
``<answer>N</answer>``.

- :func:`agent_success` (0 or 1): the last assistant turn holds ``<answer>N</answer>`` with N the gold ``answer``.
- :func:`agent_format` (0 or 1): every assistant turn but the last is a parsed tool call and nothing else, and the
  last is exactly ``<answer>N</answer>`` (N an integer). A call the parser could not read stays in ``content`` as
  text, so it breaks the format and ends the episode.
- :func:`agent_cost` (in (0, 1]): ``budget / max(calls, budget)``: 1.0 up to ``budget`` tool calls, then shrinking
  (two calls over a budget of 2 score 0.5). It says nothing about success, so a recipe conditions it on
  :func:`agent_success` (the paper's Eq. 8, ``reward_conditions: {agent_cost: agent_success}``): without the
  condition, answering at once with a guess would be the cheapest episode.

Each returns ``None`` for a row of another task (mixed runs, where each row names its ``environment``): only rows
whose ``environment`` is :data:`AGENT_ENVIRONMENT`, or rows without that column, are scored. :func:`for_environment`
scopes any other reward the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward

AGENT_ENVIRONMENT = "shop"  # the `environment` value of the demo's agent rows (gdpo_trl.tasks.agent_task)
ANSWER = re.compile(r"<answer>\s*(-?\d+)\s*</answer>")
EXACT_ANSWER = re.compile(r"<answer>-?\d+</answer>")


def _messages(completion) -> list[dict]:
    """A completion as messages: TRL's list of dicts, or a plain string (one assistant turn)."""
    return [{"role": "assistant", "content": completion}] if isinstance(completion, str) else list(completion)


def assistant_turns(completion) -> list[dict]:
    return [m for m in _messages(completion) if m.get("role") == "assistant"]


def count_calls(completion) -> int:
    """The tool calls the assistant made in one rollout (every parsed call, failed or not)."""
    return sum(len(m.get("tool_calls") or []) for m in assistant_turns(completion))


def final_answer(completion) -> int | None:
    """N of the last ``<answer>N</answer>`` in the last assistant turn, when that turn made no call; else None."""
    turns = assistant_turns(completion)
    if not turns or turns[-1].get("tool_calls"):
        return None
    found = ANSWER.findall(turns[-1].get("content") or "")
    return int(found[-1]) if found else None


def _applies(environment, row: int) -> bool:
    return environment is None or environment[row] in (None, AGENT_ENVIRONMENT)


def agent_success(completions, answer=None, environment=None, **kwargs) -> list[float | None]:
    """1.0 where the final answer equals the gold ``answer`` (an integer or its text), else 0.0; None off-task."""
    if answer is None or len(answer) != len(completions):
        raise ValueError(f"agent_success needs an `answer` column with one gold value per completion, got {answer!r}")
    rewards = []
    for row, completion in enumerate(completions):
        if not _applies(environment, row):
            rewards.append(None)
            continue
        got = final_answer(completion)
        rewards.append(1.0 if got is not None and got == int(answer[row]) else 0.0)
    return rewards


def _well_formed(completion) -> bool:
    turns = assistant_turns(completion)
    if not turns:
        return False
    *calls, last = turns
    calls_ok = all(m.get("tool_calls") and not (m.get("content") or "").strip() for m in calls)
    return calls_ok and not last.get("tool_calls") and EXACT_ANSWER.fullmatch((last.get("content") or "").strip())


def agent_format(completions, environment=None, **kwargs) -> list[float | None]:
    """1.0 where every turn but the last is a clean tool call and the last is exactly ``<answer>N</answer>``."""
    return [
        (1.0 if _well_formed(c) else 0.0) if _applies(environment, row) else None for row, c in enumerate(completions)
    ]


def agent_cost(completions, environment=None, budget: int = 2, **kwargs) -> list[float | None]:
    """``budget / max(calls, budget)`` per rollout: 1.0 within ``budget`` tool calls; None off-task.

    Args:
        budget: the calls an episode needs (the demo's shop task: a lookup and a multiplication).
    """
    if budget < 1:
        raise ValueError(f"agent_cost: budget must be at least 1, got {budget}")
    return [
        budget / max(count_calls(c), budget) if _applies(environment, row) else None
        for row, c in enumerate(completions)
    ]


class ForEnvironment:
    """``reward`` on the rows whose ``environment`` column is ``name``; None (does not apply) on the others.

    Named ``<name>_<reward name>`` so the mixed run's metrics say which task a reward belongs to. Picklable.
    """

    def __init__(self, reward: Callable, name: str, label: str):
        self.reward, self.name, self.__name__ = reward, name, label

    def __call__(self, completions, environment=None, **kwargs) -> list[float | None]:
        if environment is None:
            raise ValueError(
                f"{self.__name__} scores the rows of environment {self.name!r}: the data needs an `environment` column"
            )
        rows = [i for i, env in enumerate(environment) if env == self.name]
        rewards: list[float | None] = [None] * len(completions)
        if rows:
            picked = {
                key: [value[i] for i in rows] if isinstance(value, list) and len(value) == len(completions) else value
                for key, value in kwargs.items()
            }
            for i, value in zip(rows, self.reward([completions[i] for i in rows], **picked), strict=True):
                rewards[i] = value
        return rewards


def for_environment(reward: Callable, name: str, label: str) -> ForEnvironment:
    """``reward`` scoped to the rows of environment ``name`` (see :class:`ForEnvironment`), logged as ``label``."""
    return ForEnvironment(reward, name, label)


# The GSM8K-style rewards, scoped to the `arith` rows of the mixed agent run (gdpo_trl.tasks.agent_task).
arith_format = for_environment(format_reward, "arith", "arith_format")
arith_correctness = for_environment(correctness_reward, "arith", "arith_correctness")
