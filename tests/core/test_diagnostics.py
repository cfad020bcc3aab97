"""gdpo_trl.core.diagnostics against values worked out by hand on batches small enough to check on paper."""

import math

import pytest
import torch

from gdpo_trl.core.advantages import gdpo_advantages
from gdpo_trl.core.diagnostics import (
    advantage_shares,
    frac_groups_without_signal,
    frac_zero_std_per_reward,
    group_has_spread,
    mean_distinct_per_group,
    reward_diagnostics,
)

NAN = float("nan")
# Two groups of G=2 completions, two rewards. Group 0: both rewards vary, in opposite directions (their sum is
# constant). Group 1: both rewards constant.
REWARDS = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])


def test_group_has_spread():
    rewards = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    assert group_has_spread(rewards, 2).tolist() == [[False, True], [True, False]]
    # Fewer than two valid values in a group: no spread, whatever the one value is.
    assert group_has_spread(torch.tensor([[NAN], [1.0], [NAN], [NAN]]), 2).tolist() == [[False], [False]]


def test_frac_zero_std_per_reward():
    rewards = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [2.0, 3.0], [2.0, 3.0]])
    # reward 0 constant in groups 0 and 2 of 3; reward 1 constant in groups 1 and 2.
    assert frac_zero_std_per_reward(rewards, 2).tolist() == pytest.approx([2 / 3, 2 / 3])


def test_frac_groups_without_signal_gdpo_vs_grpo():
    weights = torch.tensor([1.0, 1.0])
    # GDPO: group 0 has signal (each reward varies), group 1 none. GRPO: the sum is 1, 1 and 2, 2: no group has any.
    assert frac_groups_without_signal(REWARDS, weights, 2, gdpo=True) == 0.5
    assert frac_groups_without_signal(REWARDS, weights, 2, gdpo=False) == 1.0
    # A reward with weight 0 gives no signal even where it varies.
    rewards = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    assert frac_groups_without_signal(rewards, torch.tensor([1.0, 0.0]), 2, gdpo=True) == 0.5
    assert frac_groups_without_signal(rewards, torch.tensor([0.0, 1.0]), 2, gdpo=True) == 0.5
    assert frac_groups_without_signal(rewards, torch.tensor([1.0, 1.0]), 2, gdpo=True) == 0.0


def test_advantage_shares():
    terms = torch.tensor([[1.0, -2.0], [NAN, 2.0]])
    # weighted |terms|: reward 0: 1 (the NaN counts 0); reward 1: 0.5 * (2 + 2) = 2; total 3.
    assert advantage_shares(terms, torch.tensor([1.0, 0.5])).tolist() == pytest.approx([1 / 3, 2 / 3])
    assert advantage_shares(torch.zeros(2, 2), torch.tensor([1.0, 1.0])).tolist() == [0.0, 0.0]


def test_mean_distinct_per_group():
    assert mean_distinct_per_group(torch.tensor([0.5, 0.5, -1.0, 1.0]), 2) == 1.5
    assert mean_distinct_per_group(torch.tensor([0.0, -0.0, 1e-9, 0.0]), 2) == 1.0  # signed zero, rounding
    assert mean_distinct_per_group(torch.tensor([3.0, 2.0, 1.0]), 3) == 3.0


def test_reward_diagnostics_by_hand():
    weights = torch.tensor([1.0, 2.0])
    advantages = gdpo_advantages(REWARDS, weights, 2)
    metrics = reward_diagnostics(REWARDS, advantages, weights, ["a", "b"], 2, gdpo=True)
    # Group 0, per reward: values (1, 0) and (0, 1), mean 0.5, Bessel std sqrt(0.5): terms +-0.5 / (sqrt(0.5) + 1e-4),
    # equal in size for both rewards, so the shares are the weights' shares. Group 1 is constant: terms 0.
    assert metrics["rewards/a/advantage_share"] == pytest.approx(1 / 3)
    assert metrics["rewards/b/advantage_share"] == pytest.approx(2 / 3)
    assert metrics["rewards/a/frac_zero_std"] == metrics["rewards/b/frac_zero_std"] == 0.5
    assert metrics["frac_reward_zero_std"] == 0.5
    # GDPO rows: t - 2t = -t and -t + 2t = t in group 0 (2 distinct values), 0 and 0 in group 1 (1 value); the batch
    # (-t, t, 0, 0) has mean 0 and Bessel std sqrt(2 t^2 / 3), so group 0 becomes -+sqrt(3/2) (up to the 1e-4 eps).
    assert advantages.tolist() == pytest.approx([-math.sqrt(1.5), math.sqrt(1.5), 0.0, 0.0], rel=1e-3)
    assert metrics["advantages/distinct_per_group"] == 1.5
    # GRPO on the same rewards: sums 1 and 2 in group 0 (2 values), 3 and 3 in group 1 (1 value).
    assert metrics["advantages/distinct_per_group_grpo"] == 1.5
