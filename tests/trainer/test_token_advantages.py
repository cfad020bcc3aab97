"""gdpo_token_advantages: the issue's worked example, hand-computed values, and consistency with gdpo_advantages."""

import math
import statistics

import pytest
import torch

from gdpo_trl.core.advantages import gdpo_advantages, gdpo_token_advantages, gdpo_token_reward_terms

NAN = float("nan")


def worked_example():
    """G = 2; reward 0 is an outcome (1, 0), reward 1 a step reward. Completion 0 has 6 tokens, steps ending at
    tokens 2 (score 1) and 5 (score 0); completion 1 has 4 tokens, steps at tokens 1 (score 1) and 3 (score 1)."""
    rewards = torch.full((2, 2, 6), NAN)
    rewards[0, 0, 5], rewards[1, 0, 3] = 1.0, 0.0
    rewards[0, 1, 2], rewards[0, 1, 5], rewards[1, 1, 1], rewards[1, 1, 3] = 1.0, 0.0, 1.0, 1.0
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    return rewards, mask


def test_worked_example_from_the_issue():
    rewards, mask = worked_example()
    advantages = gdpo_token_advantages(rewards, [1.0, 1.0], 2, mask, eps=0.0, batch_norm=False)
    a, b = 1 - math.sqrt(0.5), 0.5 - math.sqrt(0.5)  # 0.2929, -0.2071
    expected = torch.tensor([[-a, -a, -a, -a - 0.5, -a - 0.5, -a - 0.5], [a, a, b, b, 0.0, 0.0]])
    torch.testing.assert_close(advantages, expected)
    assert advantages[0, 3].item() == pytest.approx(-0.7929, abs=1e-4)
    assert advantages[1, 2].item() == pytest.approx(-0.2071, abs=1e-4)


def test_per_reward_terms_of_the_worked_example():
    # Step pool {1, 0, 1, 1}: mean 0.75, Bessel std 0.5 -> 0.5, -1.5, 0.5, 0.5; outcome pool {1, 0} -> +-sqrt(1/2).
    rewards, mask = worked_example()
    terms = gdpo_token_reward_terms(rewards, 2, mask, eps=0.0)
    r = math.sqrt(0.5)
    torch.testing.assert_close(terms[:, 0], torch.tensor([[r] * 6, [-r] * 4 + [0, 0]]))
    torch.testing.assert_close(terms[:, 1], torch.tensor([[-1.0] * 3 + [-1.5] * 3, [1.0, 1.0, 0.5, 0.5, 0, 0]]))


def test_batch_norm_over_valid_tokens_with_bessel():
    rewards, mask = worked_example()
    raw = gdpo_token_advantages(rewards, [1.0, 1.0], 2, mask, eps=1e-4, batch_norm=False)
    values = raw[mask.bool()].tolist()  # the 10 valid tokens; the two padding zeros must not count
    mean, std = statistics.fmean(values), statistics.stdev(values)  # stdev is Bessel-corrected
    normed = gdpo_token_advantages(rewards, [1.0, 1.0], 2, mask, eps=1e-4, batch_norm=True)
    expected = ((raw - mean) / (std + 1e-4)) * mask
    torch.testing.assert_close(normed, expected)
    assert normed[1, 4:].tolist() == [0.0, 0.0]
    assert normed[mask.bool()].mean().item() == pytest.approx(0.0, abs=1e-6)


def test_weights_scale_each_reward():
    rewards, mask = worked_example()
    advantages = gdpo_token_advantages(rewards, [2.0, 0.0], 2, mask, eps=0.0, batch_norm=False)
    r = 2 * math.sqrt(0.5)
    torch.testing.assert_close(advantages, torch.tensor([[r] * 6, [-r] * 4 + [0.0, 0.0]]))


def outcome_tensor(outcomes: torch.Tensor, lengths: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Outcome rewards [N, K] placed at each completion's last valid token of a [N, K, width] tensor."""
    n, k = outcomes.shape
    rewards = torch.full((n, k, width), NAN)
    rewards[torch.arange(n), :, lengths - 1] = outcomes
    mask = (torch.arange(width) < lengths.unsqueeze(1)).int()
    return rewards, mask


def test_outcome_rewards_only_equal_sequence_level_gdpo():
    generator = torch.Generator().manual_seed(0)
    n, k, g, width = 12, 3, 4, 9
    outcomes = torch.randint(0, 3, (n, k), generator=generator).float()
    outcomes[torch.rand(n, k, generator=generator) < 0.25] = NAN  # "does not apply"
    outcomes[5] = NAN  # an unscorable completion: advantage 0
    lengths = torch.randint(1, width + 1, (n,), generator=generator)
    rewards, mask = outcome_tensor(outcomes, lengths, width)
    weights = [1.0, 0.5, 2.0]
    tokens = gdpo_token_advantages(rewards, weights, g, mask, batch_norm=False)
    sequence = gdpo_advantages(outcomes, weights, g, batch_norm=False)
    torch.testing.assert_close(tokens, sequence.unsqueeze(1) * mask)
    assert tokens[5].abs().sum().item() == 0.0


def test_a_reward_with_fewer_than_two_values_in_a_group_contributes_zero():
    # Group 0: reward 1 has a single step (completion 0); group 1: reward 1 has none. Reward 0 has spread in both.
    rewards = torch.full((4, 2, 3), NAN)
    rewards[:, 0, 2] = torch.tensor([1.0, 0.0, 0.0, 1.0])
    rewards[0, 1, 0] = 5.0
    mask = torch.ones(4, 3)
    advantages = gdpo_token_advantages(rewards, [1.0, 1.0], 2, mask, eps=0.0, batch_norm=False)
    r = math.sqrt(0.5)
    torch.testing.assert_close(advantages, torch.tensor([[r] * 3, [-r] * 3, [-r] * 3, [r] * 3]))


def test_a_constant_step_reward_gives_zero_and_no_nan():
    rewards = torch.full((2, 1, 4), NAN)
    rewards[0, 0, [1, 3]] = 1.0
    rewards[1, 0, 2] = 1.0
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    for batch_norm in (False, True):
        advantages = gdpo_token_advantages(rewards, [1.0], 2, mask, batch_norm=batch_norm)
        assert torch.equal(advantages, torch.zeros(2, 4))


def test_step_rewards_give_earlier_tokens_the_credit_of_later_steps():
    # One process reward, G = 2, 3 tokens each: completion 0 scores 1 then 0, completion 1 scores 0 then 1.
    # Pool {1, 0, 0, 1}: mean 0.5, std sqrt(1/3) -> +-sqrt(3)/2.
    rewards = torch.full((2, 1, 3), NAN)
    rewards[0, 0, 0], rewards[0, 0, 2], rewards[1, 0, 1], rewards[1, 0, 2] = 1.0, 0.0, 0.0, 1.0
    advantages = gdpo_token_advantages(rewards, [1.0], 2, torch.ones(2, 3), eps=0.0, batch_norm=False)
    h = math.sqrt(3) / 2
    torch.testing.assert_close(advantages, torch.tensor([[0.0, -h, -h], [0.0, 0.0, h]]))


def test_no_valid_tokens_gives_zeros():
    rewards = torch.full((2, 1, 3), NAN)
    assert torch.equal(gdpo_token_advantages(rewards, [1.0], 2, torch.zeros(2, 3)), torch.zeros(2, 3))


@pytest.mark.parametrize(
    ("rewards", "mask", "message"),
    [
        (torch.zeros(4, 2), torch.ones(4, 2), "3-D tensor"),
        (torch.full((4, 1, 3), NAN), torch.ones(4, 2), "completion_mask must have shape"),
        (torch.full((3, 1, 3), NAN), torch.ones(3, 3), "not a multiple of num_generations"),
        (torch.zeros(4, 1, 3), torch.tensor([[1, 1, 0]] * 4), "padding position"),
    ],
)
def test_bad_inputs_are_named(rewards, mask, message):
    with pytest.raises(ValueError, match=message):
        gdpo_token_advantages(rewards, [1.0], 2, mask)


def test_weight_count_must_match():
    with pytest.raises(ValueError, match="weights for K=1"):
        gdpo_token_advantages(torch.full((2, 1, 3), NAN), [1.0, 1.0], 2, torch.ones(2, 3))
