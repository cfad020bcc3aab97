"""Counting distinct advantage groups: how much reward information survives normalization.

The GDPO paper (arXiv 2601.05242, Figure 3) argues that GRPO collapses distinct combinations of rewards onto the
same advantages, because it sums the rewards of a completion *before* normalizing within the group. GDPO normalizes
every reward separately within the group and sums afterwards, which keeps more distinct advantage patterns.

This module counts, for binary (0/1) rewards, how many distinct advantage patterns each method can produce for one
group of ``G`` completions scored by ``K`` rewards. A *pattern* is the group's advantage vector, rounded to 6 decimals
and sorted, so that reordering the completions does not create a new pattern.

Every method is permutation-equivariant over completions (permuting the completions permutes their advantages), so
the set of sorted patterns only depends on the *multiset* of reward rows in the group. We therefore enumerate the
``C(2**K + G - 1, G)`` multisets of rows instead of all ``2**(G*K)`` assignments, which is exact much further (see
:func:`advantage_group_count`).
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np

METHODS = ("grpo", "grpo_no_std", "gdpo")

# Upper bound on the number of float64 reward entries materialized per chunk (~64 MiB per array).
_CHUNK_ELEMENTS = 2**23


@dataclass(frozen=True)
class AdvantageGroupCount:
    """Result of :func:`advantage_group_count`.

    Attributes:
        count: Number of distinct advantage patterns found.
        exact: ``True`` if every reward assignment was covered, so ``count`` is exact. ``False`` if random assignments
            were sampled instead, in which case ``count`` is only a lower bound on the true number.
        num_evaluated: Number of groups whose advantages were computed (multisets if exact, samples otherwise).
    """

    count: int
    exact: bool
    num_evaluated: int


def group_advantages(rewards: np.ndarray, method: str) -> np.ndarray:
    """Advantages of a batch of groups, with no epsilon and all reward weights equal to 1.

    Args:
        rewards: Array of shape ``(..., G, K)``: ``K`` rewards for each of the ``G`` completions of each group.
        method: ``"grpo"`` (normalize the summed reward), ``"grpo_no_std"`` (only subtract the group mean of the summed
            reward) or ``"gdpo"`` (normalize each reward within the group, then sum; before batch normalization).

    Returns:
        Array of shape ``(..., G)``. Standard deviations are Bessel-corrected (like ``torch.std``); wherever one is
        zero the normalized value is defined as 0 instead of dividing by an epsilon.
    """
    _check_method(method)
    rewards = np.asarray(rewards, dtype=np.float64)
    if method == "gdpo":
        return _normalize(rewards, axis=-2).sum(axis=-1)
    summed = rewards.sum(axis=-1)
    if method == "grpo_no_std":
        return summed - summed.mean(axis=-1, keepdims=True)
    return _normalize(summed, axis=-1)


def advantage_group_count(
    num_rewards: int,
    num_generations: int,
    method: str,
    *,
    max_exact: int = 2**22,
    num_samples: int = 200_000,
    seed: int = 0,
) -> AdvantageGroupCount:
    """Count the distinct advantage patterns one group can take under binary rewards.

    The count is exact whenever the number of multisets of reward rows, ``C(2**K + G - 1, G)``, is at most
    ``max_exact``. With the default ``max_exact = 2**22`` that covers:

    ====  ========================
    K     exact for G up to
    ====  ========================
    1     about 4 million
    2     291
    3     25
    4     10
    5     6
    6     4
    ====  ========================

    Each multiset costs O(G * K), so the largest exact cases take time: K=3, G=25 (3.4M multisets) runs in about
    50 s on one CPU core, while the cases of the paper's Figure 3 take milliseconds.

    Beyond that, ``num_samples`` uniformly random assignments (seeded by ``seed``) are drawn and the number of
    distinct patterns among them is returned with ``exact=False``: it is a LOWER BOUND, never an estimate of the
    true count.

    Args:
        num_rewards: Number of rewards per completion ``K`` (>= 1).
        num_generations: Number of completions per group ``G`` (>= 2).
        method: One of ``"grpo"``, ``"grpo_no_std"``, ``"gdpo"`` (see :func:`group_advantages`).
        max_exact: Largest number of multisets to enumerate exactly before falling back to sampling.
        num_samples: Number of random assignments to draw in the fallback.
        seed: Seed of the fallback sampler.
    """
    _check_method(method)
    if isinstance(num_rewards, bool) or not isinstance(num_rewards, int) or num_rewards < 1:
        raise ValueError(f"num_rewards must be an integer >= 1, got {num_rewards!r}")
    if isinstance(num_generations, bool) or not isinstance(num_generations, int) or num_generations < 2:
        raise ValueError(
            f"num_generations must be an integer >= 2 (one completion has no group), got {num_generations!r}"
        )

    num_rows = 2**num_rewards  # every possible 0/1 reward row of one completion
    chunk = max(1, _CHUNK_ELEMENTS // (num_generations * num_rewards))
    num_multisets = math.comb(num_rows + num_generations - 1, num_generations)
    if num_multisets <= max_exact:
        chunks = _multiset_chunks(num_rewards, num_generations, chunk)
        num_evaluated, exact = num_multisets, True
    else:
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1 when the exact count is out of reach, got {num_samples!r}")
        chunks = _sampled_chunks(num_rewards, num_generations, chunk, num_samples, seed)
        num_evaluated, exact = num_samples, False

    patterns = np.empty((0, num_generations))
    for rewards in chunks:
        new = advantage_patterns(group_advantages(rewards, method))
        patterns = np.unique(np.concatenate([patterns, new]), axis=0)
    return AdvantageGroupCount(count=len(patterns), exact=exact, num_evaluated=num_evaluated)


def count_distinct_advantage_groups(num_rewards: int, num_generations: int, method: str, **options) -> int:
    """Like :func:`advantage_group_count` (``options``: ``max_exact``, ``num_samples``, ``seed``), but return only
    the count.

    Warns (``UserWarning``) when the count is a sampled lower bound rather than exact, so it is never silently
    approximate.
    """
    result = advantage_group_count(num_rewards, num_generations, method, **options)
    if not result.exact:
        warnings.warn(
            f"K={num_rewards}, G={num_generations}: too many groups to enumerate, {result.count} is a lower bound "
            f"from {result.num_evaluated} samples",
            stacklevel=2,
        )
    return result.count


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def _normalize(x: np.ndarray, axis: int) -> np.ndarray:
    """(x - mean) / std along ``axis``, 0 where std is 0 (all values equal carry no signal)."""
    centered = x - x.mean(axis=axis, keepdims=True)
    std = x.std(axis=axis, ddof=1, keepdims=True)
    return np.divide(centered, std, out=np.zeros_like(centered), where=std > 0)


def advantage_patterns(advantages: np.ndarray) -> np.ndarray:
    """Unique rounded, sorted advantage vectors of a batch of groups."""
    # Float noise of either sign (e.g. -1e-17) rounds to -0.0 or 0.0. Adding 0.0 turns -0.0 into 0.0, so equal patterns
    # are also equal byte for byte (hashing, bytes-based dedup) and print the same.
    rounded = np.round(advantages, 6) + 0.0
    return np.unique(np.sort(rounded, axis=-1), axis=0)


def _multiset_chunks(num_rewards: int, size: int, chunk: int):
    """Yield every multiset of ``size`` reward rows as 0/1 arrays of shape (<= chunk, size, num_rewards)."""
    # Row id r stands for the reward row whose reward j is bit j of r.
    combos = itertools.combinations_with_replacement(range(2**num_rewards), size)
    bits = np.arange(num_rewards)
    while True:
        flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, chunk)), dtype=np.int64)
        if flat.size == 0:
            return
        yield (flat.reshape(-1, size, 1) >> bits) & 1


def _sampled_chunks(num_rewards: int, size: int, chunk: int, num_samples: int, seed: int):
    """Yield ``num_samples`` uniformly random 0/1 groups of shape (size, num_rewards), in chunks."""
    rng = np.random.default_rng(seed)
    for start in range(0, num_samples, chunk):
        yield rng.integers(0, 2, size=(min(chunk, num_samples - start), size, num_rewards), dtype=np.int8)
