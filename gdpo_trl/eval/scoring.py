"""Scoring completions with reward functions from the registry, and reducing them to metrics (pure functions).

Metrics: each scored reward's mean, named by :func:`metric_name` (``pass@1`` for correctness: the mean correctness
over a problem's ``n`` samples, averaged over problems; plain accuracy for ``n=1`` and greedy decoding). Lengths count
completion tokens up to and including the first end-of-sequence token; a completion that reached ``max_new_tokens``
without one is *truncated*.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gdpo_trl.eval.settings import Completion, EvaluationInputError

# The paper's GSM8K rewards: what gdpo eval scores unless told otherwise (registry names, gdpo_trl.rewards).
DEFAULT_REWARDS = ("format", "correctness", "integer")
# The paper's tool-calling rewards: what gdpo eval scores a tool-calling source with unless told otherwise.
TOOL_REWARDS = ("tool_format", "tool_correctness")
# The multi-turn agent rewards: what gdpo eval scores an agent source (one with an environment) with by default; the
# environment's own get_reward is added by the episode scoring (gdpo_trl.eval.agent).
AGENT_REWARDS = ("agent_success", "agent_format", "agent_cost")
# Reported names of the paper's rewards, as the GSM8K literature calls them; any other reward is `<name>_mean`.
METRIC_NAMES = {"correctness": "pass@1", "format": "format_rate", "integer": "integer_rate"}


def metric_name(reward: str) -> str:
    return METRIC_NAMES.get(reward, f"{reward}_mean")


def default_rewards(dataset: str) -> tuple[str, ...]:
    """The rewards a data source is scored with by default: the agent rewards for an agent source, the tool rewards
    for the tool-calling sources
    (:func:`gdpo_trl.data.sources.is_tool_source`), the GSM8K rewards for any other."""
    from gdpo_trl.data.sources import environment_factory, is_tool_source

    if environment_factory(dataset) is not None:
        return AGENT_REWARDS
    return TOOL_REWARDS if is_tool_source(dataset) else DEFAULT_REWARDS


def reward_funcs(names: Sequence[str] = DEFAULT_REWARDS, kwargs: dict | None = None) -> dict[str, Callable]:
    """``{name: function}`` for registry names or dotted paths, as ``gdpo train``'s ``reward_funcs`` takes them."""
    from gdpo_trl.rewards import get_reward_funcs

    try:
        return dict(zip(names, get_reward_funcs(list(names), kwargs), strict=True))
    except (ValueError, ImportError) as err:
        raise EvaluationInputError(str(err)) from err


def score_problem(
    index: int, prompt: list[dict], answer: str, completions: Sequence[Completion], rewards: dict[str, Callable]
) -> dict:
    """One ``completions.jsonl`` row: the problem, its completions and each completion's rewards and length.

    Reward functions get TRL's arguments for plain-text completions (``prompts``, ``completions``, and the
    ``answer`` column); one that needs another dataset column cannot be scored here.
    """
    texts = [c.text for c in completions]
    by_reward = {
        name: func(prompts=[prompt] * len(texts), completions=texts, answer=[answer] * len(texts))
        for name, func in rewards.items()
    }
    return {
        "index": index,
        "question": prompt[-1]["content"],
        "answer": answer,
        "completions": texts,
        "rewards": [{name: by_reward[name][i] for name in rewards} for i in range(len(texts))],
        "num_tokens": [c.num_tokens for c in completions],
        "truncated": [c.truncated for c in completions],
    }


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _per_problem_mean(rows: Sequence[dict], value: Callable[[dict, int], float]) -> float:
    """Mean over problems of the mean over each problem's samples, so every problem weighs the same."""
    return _mean(_mean(value(row, i) for i in range(len(row["completions"]))) for row in rows)


def summarize(rows: Sequence[dict]) -> dict:
    """Reduce ``completions.jsonl`` rows (from :func:`score_problem`) to the reported metrics.

    Every metric is averaged within a problem first, then over problems; when all problems have the same number of
    samples this equals the plain mean over samples. A reward that returned None for a sample (not applicable)
    counts as 0. Raises ``ValueError`` for no rows or a row without samples.
    """
    if not rows:
        raise ValueError("no problems to summarize")
    if any(not row["completions"] for row in rows):
        raise ValueError("every problem needs at least one completion")
    names = list(rows[0]["rewards"][0])
    rewards = {
        metric_name(name): _per_problem_mean(rows, lambda row, i, name=name: row["rewards"][i][name] or 0.0)
        for name in names
    }
    return {
        **rewards,
        "mean_completion_tokens": _per_problem_mean(rows, lambda row, i: row["num_tokens"][i]),
        "truncated_fraction": _per_problem_mean(rows, lambda row, i: float(row["truncated"][i])),
        "num_problems": len(rows),
        "num_samples": sum(len(row["completions"]) for row in rows),
    }
