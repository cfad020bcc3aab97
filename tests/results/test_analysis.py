"""Tests for gdpo_trl.results.analysis: distinct advantage patterns under GRPO, GRPO without std, and GDPO."""

import itertools
import statistics

import numpy as np
import pytest

from gdpo_trl.results.analysis import (
    METHODS,
    AdvantageGroupCount,
    advantage_group_count,
    count_distinct_advantage_groups,
    group_advantages,
)


def _normalized(values):
    """Plain-Python (v - mean) / stdev, with 0 when stdev is 0 (no epsilon)."""
    mean = statistics.mean(values)
    std = statistics.stdev(values)
    return [0.0 if std == 0 else (v - mean) / std for v in values]


def _naive_advantages(group, method):
    """Reference advantages for one group, a list of G reward rows (lists of K ints), written independently."""
    num_rewards = len(group[0])
    if method == "gdpo":
        per_reward = [_normalized([row[k] for row in group]) for k in range(num_rewards)]
        return [sum(per_reward[k][i] for k in range(num_rewards)) for i in range(len(group))]
    sums = [sum(row) for row in group]
    if method == "grpo":
        return _normalized(sums)
    mean = statistics.mean(sums)
    return [s - mean for s in sums]


def _naive_count(num_rewards, num_generations, method):
    """Brute force over all 2**(G*K) 0/1 assignments, no multiset shortcut."""
    patterns = set()
    for flat in itertools.product((0, 1), repeat=num_generations * num_rewards):
        group = [list(flat[i * num_rewards : (i + 1) * num_rewards]) for i in range(num_generations)]
        # + 0.0 turns -0.0 into 0.0 (they compare equal in a set anyway; kept for clarity).
        patterns.add(tuple(sorted(round(a, 6) + 0.0 for a in _naive_advantages(group, method))))
    return len(patterns)


def test_paper_two_rewards_two_completions():
    # Paper's example: K=2 rewards, G=2 completions. GRPO only sees "tie" or "one is better" (±1/sqrt(2));
    # GDPO also tells "better on one reward" from "better on both"; so does GRPO without std (±0.5 vs ±1).
    assert count_distinct_advantage_groups(2, 2, "grpo") == 2
    assert count_distinct_advantage_groups(2, 2, "gdpo") == 3
    assert count_distinct_advantage_groups(2, 2, "grpo_no_std") == 3
    for method in METHODS:
        assert count_distinct_advantage_groups(2, 2, method) == _naive_count(2, 2, method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("num_rewards", "num_generations"), [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 2), (3, 3)])
def test_matches_naive_brute_force(num_rewards, num_generations, method):
    result = advantage_group_count(num_rewards, num_generations, method)
    assert result.exact
    assert result.count == _naive_count(num_rewards, num_generations, method)


def test_matches_naive_largest_case():
    # One larger case (4096 assignments per method), to exercise the multiset shortcut where it saves the most.
    for method in METHODS:
        assert count_distinct_advantage_groups(3, 4, method) == _naive_count(3, 4, method)


@pytest.mark.parametrize("num_generations", [2, 3, 4, 8])
def test_single_reward_gdpo_equals_grpo(num_generations):
    # With one reward there is nothing to decouple: GDPO is GRPO.
    assert count_distinct_advantage_groups(1, num_generations, "gdpo") == count_distinct_advantage_groups(
        1, num_generations, "grpo"
    )
    rewards = np.random.default_rng(0).integers(0, 2, size=(50, num_generations, 1))
    np.testing.assert_allclose(group_advantages(rewards, "gdpo"), group_advantages(rewards, "grpo"))


def test_single_reward_counts():
    # With one 0/1 reward, a group is fixed (up to order) by its number of ones j in 0..G. j = 0 and j = G both give
    # all-zero advantages; each j in 1..G-1 has exactly j positive entries, hence its own pattern: G patterns.
    for num_generations in range(2, 7):
        for method in METHODS:
            assert count_distinct_advantage_groups(1, num_generations, method) == num_generations


def test_group_advantages_by_hand():
    group = np.array([[1, 0], [0, 0], [1, 1]])
    # Sums 1, 0, 2: mean 1, stdev 1.
    np.testing.assert_allclose(group_advantages(group, "grpo"), [0.0, -1.0, 1.0])
    np.testing.assert_allclose(group_advantages(group, "grpo_no_std"), [0.0, -1.0, 1.0])
    # Reward 0: (1, 0, 1) -> mean 2/3, stdev 1/sqrt(3); reward 1: (0, 0, 1) -> mean 1/3, stdev 1/sqrt(3).
    r3 = 3**0.5
    expected = [(1 / 3) * r3 + (-1 / 3) * r3, (-2 / 3) * r3 + (-1 / 3) * r3, (1 / 3) * r3 + (2 / 3) * r3]
    np.testing.assert_allclose(group_advantages(group, "gdpo"), expected, atol=1e-12)
    # Zero spread gives zero advantage, not NaN.
    np.testing.assert_array_equal(group_advantages(np.ones((3, 2)), "grpo"), np.zeros(3))
    np.testing.assert_array_equal(group_advantages(np.ones((3, 2)), "gdpo"), np.zeros(3))


def test_sampling_fallback_is_a_labelled_lower_bound():
    exact = advantage_group_count(3, 4, "gdpo")
    sampled = advantage_group_count(3, 4, "gdpo", max_exact=0, num_samples=200, seed=1)
    assert isinstance(sampled, AdvantageGroupCount)
    assert exact.exact and not sampled.exact
    assert sampled.num_evaluated == 200
    assert 0 < sampled.count <= exact.count
    # Same seed, same answer.
    assert advantage_group_count(3, 4, "gdpo", max_exact=0, num_samples=200, seed=1) == sampled
    # Enough samples of a tiny case find every pattern.
    assert advantage_group_count(2, 2, "gdpo", max_exact=0, num_samples=1000).count == 3
    with pytest.warns(UserWarning, match="lower bound"):
        count_distinct_advantage_groups(3, 4, "gdpo", max_exact=0, num_samples=10)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((2, 2, "dapo"), "method"),
        ((2, 1, "grpo"), "num_generations"),
        ((2, 0, "gdpo"), "num_generations"),
        ((0, 2, "gdpo"), "num_rewards"),
        ((1.5, 2, "gdpo"), "num_rewards"),
    ],
)
def test_invalid_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        count_distinct_advantage_groups(*args)
    with pytest.raises(ValueError, match=match):
        advantage_group_count(*args)


def test_invalid_sample_count():
    with pytest.raises(ValueError, match="num_samples"):
        advantage_group_count(3, 4, "gdpo", max_exact=0, num_samples=0)


def test_negative_zero_is_not_a_new_pattern():
    # Tiny float noise of either sign rounds to a zero; patterns must hold no -0.0, which differs from 0.0 as bytes.
    from gdpo_trl.results.analysis import advantage_patterns

    patterns = advantage_patterns(np.array([[-0.0, 1.0], [0.0, 1.0], [-1e-17, 1.0], [1e-17, 1.0]]))
    assert len(patterns) == 1
    assert not np.signbit(patterns).any()
    assert len({row.tobytes() for row in patterns}) == 1
