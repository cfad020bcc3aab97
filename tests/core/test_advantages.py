"""The advantage functions against hand-computed values and against TRL 1.16's own formulas."""

import math

import pytest
import torch
from trl.trainer.utils import nanstd as trl_nanstd

from gdpo_trl.core.advantages import gdpo_advantages, gdpo_reward_terms, grpo_advantages, nanstd

EPS = 1e-4
NAN = float("nan")
# The paper's worked example: two rewards, one group of four completions.
EXAMPLE = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])


def test_worked_example_grpo_collapses_the_first_two():
    # Sums (1, 1, 2, 0): group mean 1, unbiased std sqrt(2/3).
    std = math.sqrt(2 / 3)
    expected = [0.0, 0.0, 1 / (std + EPS), -1 / (std + EPS)]
    advantages = grpo_advantages(EXAMPLE, [1.0, 1.0], 4)
    assert advantages.tolist() == pytest.approx(expected, abs=1e-6)
    assert advantages[0] == advantages[1]  # (1,0) and (0,1) look the same to GRPO


def test_worked_example_gdpo_terms_differ():
    # Each reward is (1, 0, 1, 0) or (0, 1, 1, 0) in the group: mean 0.5, unbiased std sqrt(1/3).
    t = 0.5 / (math.sqrt(1 / 3) + EPS)
    terms = gdpo_reward_terms(EXAMPLE, 4)
    assert terms.flatten().tolist() == pytest.approx([t, -t, -t, t, t, t, -t, -t], abs=1e-6)
    assert not torch.equal(terms[0], terms[1])  # GDPO keeps the two combinations apart per reward
    summed = [0.0, 0.0, 2 * t, -2 * t]
    assert gdpo_advantages(EXAMPLE, [1, 1], 4, batch_norm=False).tolist() == pytest.approx(summed, abs=1e-6)
    batch_std = math.sqrt(8 * t * t / 3)
    expected = [x / (batch_std + EPS) for x in summed]
    assert gdpo_advantages(EXAMPLE, [1, 1], 4).tolist() == pytest.approx(expected, abs=1e-6)


def test_weights_scale_each_term():
    t = 0.5 / (math.sqrt(1 / 3) + EPS)
    advantages = gdpo_advantages(EXAMPLE, [2.0, 0.5], 4, batch_norm=False)
    assert advantages.tolist() == pytest.approx([1.5 * t, -1.5 * t, 2.5 * t, -2.5 * t], abs=1e-6)


def test_constant_reward_gives_zero_term():
    rewards = torch.tensor([[1.0, 3.0], [0.0, 3.0], [1.0, 3.0], [0.0, 3.0]])
    terms = gdpo_reward_terms(rewards, 2)
    assert terms[:, 1].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert terms[:, 0].tolist() == pytest.approx([0.5 / (math.sqrt(0.5) + EPS), -0.5 / (math.sqrt(0.5) + EPS)] * 2)


def test_raw_scale_of_a_reward_does_not_matter_under_gdpo():
    torch.manual_seed(0)
    rewards = torch.rand(32, 3)
    scaled = rewards * torch.tensor([1.0, 100.0, 1.0])
    assert torch.allclose(
        gdpo_advantages(rewards, [1, 1, 1], 8, eps=0), gdpo_advantages(scaled, [1, 1, 1], 8, eps=0), atol=1e-5
    )


def test_nan_terms_drop_out_and_unscorable_rows_get_zero():
    rewards = torch.tensor(
        [
            [1.0, NAN],  # group 1: reward 2 applies to one completion only -> no std -> its term drops out
            [0.0, 5.0],
            [NAN, NAN],  # group 2: an unscorable row
            [1.0, 2.0],
            [0.0, 4.0],
            [1.0, 0.0],
        ]
    )
    summed = gdpo_advantages(rewards, [1, 1], 3, batch_norm=False)
    t1 = 0.5 / (math.sqrt(0.5) + EPS)  # group 1, reward 1: (1, 0, nan... ) -> first group is rows 0-2
    # Group 1 (rows 0-2): reward 1 = (1, 0, nan): mean .5, std sqrt(.5); reward 2 = (nan, 5, nan): one value -> NaN.
    # Group 2 (rows 3-5): reward 1 = (1, 0, 1): mean 2/3, std sqrt(1/3); reward 2 = (2, 4, 0): mean 2, std 2.
    s = math.sqrt(1 / 3) + EPS
    expected = [t1, -t1, 0.0, (1 / 3) / s + 0 / (2 + EPS), (-2 / 3) / s + 2 / (2 + EPS), (1 / 3) / s - 2 / (2 + EPS)]
    assert summed.tolist() == pytest.approx(expected, abs=1e-5)
    # Batch statistics leave the unscorable row out, and it stays at 0.
    scorable = torch.tensor([e for i, e in enumerate(expected) if i != 2], dtype=torch.float64)
    normalized = (scorable - scorable.mean()) / (scorable.std() + EPS)
    advantages = gdpo_advantages(rewards, [1, 1], 3)
    assert advantages[2] == 0.0
    assert advantages[[0, 1, 3, 4, 5]].tolist() == pytest.approx(normalized.tolist(), abs=1e-5)


def test_grpo_scales():
    rewards = torch.tensor([[1.0], [0.0], [3.0], [3.0]])
    assert grpo_advantages(rewards, [1], 2, scale="none").tolist() == [0.5, -0.5, 0.0, 0.0]
    g = 0.5 / (math.sqrt(0.5) + EPS)
    assert grpo_advantages(rewards, [1], 2, scale="group").tolist() == pytest.approx([g, -g, 0.0, 0.0])
    batch_std = torch.tensor([1.0, 0.0, 3.0, 3.0]).std().item()
    b = 0.5 / (batch_std + EPS)
    assert grpo_advantages(rewards, [1], 2, scale="batch").tolist() == pytest.approx([b, -b, 0.0, 0.0])


def test_grpo_unscorable_row():
    rewards = torch.tensor([[1.0, NAN], [NAN, NAN], [0.0, 2.0], [1.0, 1.0]])
    advantages = grpo_advantages(rewards, [1, 1], 2, scale="none")
    # Group 1: sums (1, nan) -> mean 1 -> (0, 0). Group 2: sums (2, 2) -> 0.
    assert advantages.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_nanstd_matches_torch_std_without_nans():
    x = torch.randn(5, 7)
    assert torch.allclose(nanstd(x, dim=1), x.std(dim=1))
    assert torch.isnan(nanstd(torch.tensor([1.0, NAN])))


# TRL 1.16's inline branches of GRPOTrainer._generate_and_score_completions, restated with TRL's own nanstd as the
# oracle. The trainer tests also compare against TRL's real method; this one sweeps many random cases quickly.
def trl_normalize_then_sum(rewards, weights, g):
    grouped = rewards.view(-1, g, rewards.shape[1])
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = trl_nanstd(grouped, dim=1, keepdim=True)
    reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, rewards.shape[1])
    summed = (reward_k * weights.unsqueeze(0)).nansum(dim=1)
    summed[torch.isnan(rewards).all(dim=1)] = torch.nan
    advantages = (summed - torch.nanmean(summed)) / (trl_nanstd(summed) + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


def trl_sum_then_normalize(rewards, weights, g, scale):
    summed = (rewards * weights.unsqueeze(0)).nansum(dim=1)
    summed[torch.isnan(rewards).all(dim=1)] = torch.nan
    mean = torch.nanmean(summed.view(-1, g), dim=1).repeat_interleave(g)
    if scale == "batch":
        std = trl_nanstd(summed).expand_as(summed)
    else:
        std = trl_nanstd(summed.view(-1, g), dim=1).repeat_interleave(g)
    advantages = summed - mean
    if scale != "none":
        advantages = advantages / (std + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


def random_rewards(seed, groups, g, k, nan_frac):
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.randint(0, 3, (groups * g, k), generator=gen).float() * torch.rand(k, generator=gen)
    rewards[torch.rand(rewards.shape, generator=gen) < nan_frac] = NAN
    return rewards


@pytest.mark.parametrize("seed", range(20))
def test_matches_trl_formulas_on_random_rewards(seed):
    g, k = [(2, 2), (4, 3), (8, 2), (16, 4)][seed % 4]
    rewards = random_rewards(seed, 6, g, k, nan_frac=[0.0, 0.2, 0.6][seed % 3])
    weights = torch.rand(k, generator=torch.Generator().manual_seed(seed)) + 0.1
    assert torch.allclose(gdpo_advantages(rewards, weights, g), trl_normalize_then_sum(rewards, weights, g), atol=1e-5)
    for scale in ("group", "batch", "none"):
        ours = grpo_advantages(rewards, weights, g, scale=scale)
        assert torch.allclose(ours, trl_sum_then_normalize(rewards, weights, g, scale), atol=1e-5)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: gdpo_advantages(torch.zeros(4), [1.0], 2), "2-D"),
        (lambda: gdpo_advantages(torch.zeros(4, 2, dtype=torch.long), [1, 1], 2), "floating-point"),
        (lambda: gdpo_advantages(torch.zeros(4, 2), [1, 1], 1), "at least 2"),
        (lambda: gdpo_advantages(torch.zeros(6, 2), [1, 1], 4), "N=6 is not a multiple of num_generations=4"),
        (lambda: gdpo_advantages(torch.zeros(4, 2), [1, 1, 1], 2), "3 weights for K=2"),
        (lambda: grpo_advantages(torch.zeros(4, 2), [1, 1], 2, scale="std"), "scale must be one of"),
    ],
)
def test_invalid_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()
