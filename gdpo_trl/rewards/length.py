"""Length reward: 1.0 when a completion is at most ``max_tokens`` tokens long.

On its own this is an easy reward that a policy can satisfy by saying nothing; the GDPO paper (Eq. 8) pays it only
when the hard reward is met, see :func:`gdpo_trl.rewards.conditioned.conditioned`.
"""

from __future__ import annotations

DEFAULT_MAX_TOKENS = 512


def length_reward(completions, completion_ids=None, max_tokens: int = DEFAULT_MAX_TOKENS, **kwargs) -> list[float]:
    """1.0 for each completion of at most ``max_tokens`` tokens (read from ``completion_ids``), else 0.0.

    TRL passes ``completion_ids`` (one list of token ids per completion). Set ``max_tokens`` from a recipe with
    ``reward_kwargs: {length: {max_tokens: 256}}``, or in Python with ``functools.partial``.
    """
    if completion_ids is None:
        raise ValueError(
            "length_reward counts tokens from `completion_ids`, which TRL passes to reward functions; "
            "call it with completion_ids=[...] (one list of token ids per completion)."
        )
    if max_tokens < 1:
        raise ValueError(f"length_reward needs max_tokens >= 1, got {max_tokens}.")
    return [1.0 if len(ids) <= max_tokens else 0.0 for ids in completion_ids]
