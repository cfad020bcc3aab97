"""The pilot's figures against hand-computed groups (docs: studies/reward_conflict.py)."""

import pytest
import torch

from studies.reward_conflict import correlations, pilot_figures, rank_disagreement


def test_grpo_collapses_two_reward_combinations_that_gdpo_tells_apart():
    # Sums 1, 1, 1, 0: GRPO ties (1,0) with (0,1). GDPO: r1 -> [1.5, -.5, -.5, -.5], r2 -> [-.866, .866, .866, -.866],
    # sums [0.634, 0.366, 0.366, -1.366]: completion 0 above 1 and 2; no pair in opposite order.
    rewards = torch.tensor([[1.0, 0], [0, 1], [0, 1], [0, 0]])
    assert rank_disagreement(rewards, [1, 1], 4) == pytest.approx(
        {"discordant_pairs": 0.0, "collapsed_pairs": 2 / 6, "groups_ranked_differently": 1.0}
    )


def test_rewards_on_different_scales_are_ordered_oppositely():
    # r1 in {0, 2}, r2 in {0, 1}. GRPO sums [0, 1, 2, 2]: completion 1 below 2 and 3. GDPO: r1 -> [-.866, -.866,
    # .866, .866], r2 -> [-.5, 1.5, -.5, -.5], sums [-1.366, .634, .366, .366]: completion 1 above 2 and 3.
    rewards = torch.tensor([[0.0, 0], [0, 1], [2, 0], [2, 0]])
    assert rank_disagreement(rewards, [1, 1], 4) == pytest.approx(
        {"discordant_pairs": 2 / 6, "collapsed_pairs": 0.0, "groups_ranked_differently": 1.0}
    )


def test_rewards_that_move_together_are_ranked_alike():
    rewards = torch.tensor([[1.0, 1], [0, 0], [1, 1], [0, 0], [1, 1], [1, 1], [0, 0], [1, 1]])
    figures = pilot_figures(rewards, ["a", "b"], 4)
    assert figures["discordant_pairs"] == figures["collapsed_pairs"] == figures["groups_ranked_differently"] == 0
    assert figures["correlation"] == {"a~b": pytest.approx(1.0)}
    assert figures["conflict_share"] == 0.0
    assert figures["rewards"]["a"] == {"mean": 0.625, "zero_spread_groups": 0.0}
    assert (figures["completions"], figures["groups"]) == (8, 2)


def test_zero_spread_and_undefined_correlation():
    rewards = torch.tensor([[1.0, 0], [1, 1], [1, 0], [1, 1]])  # a constant everywhere: no correlation, no signal
    figures = pilot_figures(rewards, ["a", "b"], 2)
    assert figures["rewards"]["a"]["zero_spread_groups"] == 1.0
    assert figures["rewards"]["b"]["zero_spread_groups"] == 0.0
    assert correlations(rewards, ["a", "b"]) == {"a~b": None}


def test_each_rules_weighting_of_the_rewards():
    # GDPO terms: r1 [1.5, -.5, -.5, -.5] (mass 3), r2 [-.866, .866, .866, -.866] (mass 3.464); GRPO's centered
    # terms: r1 [.75, -.25, -.25, -.25] (mass 1.5), r2 [-.5, .5, .5, -.5] (mass 2).
    rewards = torch.tensor([[1.0, 0], [0, 1], [0, 1], [0, 0]])
    found = pilot_figures(rewards, ["a", "b"], 4)
    assert found["advantage_share"]["gdpo"] == pytest.approx(
        {"a": 3 / (3 + 2 * 3**0.5), "b": 2 * 3**0.5 / (3 + 2 * 3**0.5)}, rel=1e-4  # eps 1e-4 in each std
    )
    assert found["advantage_share"]["grpo"] == pytest.approx({"a": 1.5 / 3.5, "b": 2 / 3.5})
    # GDPO [0.634, 0.366, 0.366, -1.366] batch-normalized, GRPO sums [1, 1, 1, 0] normalized: positively related
    gdpo = torch.tensor([0.634, 0.366, 0.366, -1.366])
    grpo = torch.tensor([1.0, 1, 1, 0])
    assert found["advantage_correlation"] == pytest.approx(
        torch.corrcoef(torch.stack([gdpo, grpo]))[0, 1].item(), abs=1e-3
    )
    assert pilot_figures(torch.tensor([[1.0, 0], [1, 0]]), ["a", "b"], 2)["advantage_correlation"] is None
