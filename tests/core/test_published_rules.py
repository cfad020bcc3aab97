"""GDPO's published follow-ups (gdpo_trl.core.published_rules): hand-computed values for every rule, MO-GRPO equal to
GDPO without the batch step, SAW equal to a port of its reference's two estimators (gdpo-h, grpo-h) on 200 random
batteries of ToolRL-like rewards, ODRPO's decomposition, NaN handling, and the options the trainer derives."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
import torch

from gdpo_trl.core import RULES, rule_advantages
from gdpo_trl.core.advantages import gdpo_advantages
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.published_rules import (
    declared_range,
    mo_grpo_advantages,
    odrpo_advantages,
    odrpo_thresholds_for,
    saw_gdpo_advantages,
    saw_grpo_advantages,
    saw_offsets_for,
    saw_weights,
    threshold_table,
)
from gdpo_trl.core.rules import rule_options_for

NAN = float("nan")
NEW_RULES = ("mo_grpo", "saw_gdpo", "saw_grpo", "odrpo")


def test_the_new_rules_are_registered_with_their_sources():
    for name, arxiv in (("mo_grpo", "2509.22047"), ("saw_gdpo", "2606.07705"), ("saw_grpo", "2606.07705")):
        assert arxiv in RULES[name].source
    assert "2605.12667" in RULES["odrpo"].source
    assert RULES["saw_grpo"].per_reward == "centered" and RULES["saw_gdpo"].per_reward == "normalized"
    assert "completion_mask" in RULES["saw_gdpo"].options and "thresholds" in RULES["odrpo"].options


# --- MO-GRPO --------------------------------------------------------------------------------------------------------


def test_mo_grpo_by_hand():
    """One group of four: a = [1, 0, 0, 0] (mean 1/4, std 1/2) and b = [0, 0, 1, 1] (mean 1/2, std 1/sqrt(3)). The
    tolerance is float32's: the Bessel factor is computed from integer counts, as in TRL."""
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    half = math.sqrt(3) / 2  # (1 - 1/2) / (1 / sqrt(3))
    expected = [1.5 - half, -0.5 - half, -0.5 + half, -0.5 + half]
    got = mo_grpo_advantages(rewards, [1.0, 1.0], 4, eps=0.0)
    assert got.tolist() == pytest.approx(expected, rel=1e-7)


def test_mo_grpo_equals_gdpo_without_its_batch_step():
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        rewards = torch.randint(0, 2, (32, 3), generator=generator).double()
        rewards[torch.rand(32, 3, generator=generator) < 0.1] = NAN
        weights = torch.rand(3, generator=generator).tolist()
        expected = gdpo_advantages(rewards, weights, 8, batch_norm=False)
        assert torch.equal(rule_advantages("mo_grpo", rewards, weights, 8), expected)
        assert torch.equal(
            rule_advantages("mo_grpo", rewards, weights, 8), rule_advantages("gdpo_no_batch_norm", rewards, weights, 8)
        )


# --- SAW ------------------------------------------------------------------------------------------------------------

# One group of four: format f = [1, 1, 0, 0] (CV = std / mean = (1/sqrt(3)) / (1/2) = 2/sqrt(3)) and correctness
# c = [3, 3, 3, -3], offset 3 -> [6, 6, 6, 0] (mean 4.5, std 3, CV 2/3). Weights 2 CV_k / (CV_f + CV_c).
SAW_REWARDS = [[1.0, 3.0], [1.0, 3.0], [0.0, 3.0], [0.0, -3.0]]
CV_F, CV_C = 2 / math.sqrt(3), 2 / 3
W_F, W_C = 2 * CV_F / (CV_F + CV_C), 2 * CV_C / (CV_F + CV_C)


def test_saw_weights_by_hand():
    rewards = torch.tensor(SAW_REWARDS, dtype=torch.float64)
    got = saw_weights(rewards, [1.0, 1.0], offsets=[0.0, 3.0])
    assert got.tolist() == pytest.approx([W_F, W_C], rel=1e-7)
    # Without the offset correctness's mean is 1.5 and its CV sqrt(27/3)/1.5 = 2: the offset is what SAW's weights
    # see, as in the reference (+3.0 on a -3..3 correctness).
    unshifted = saw_weights(rewards, [1.0, 1.0])
    assert unshifted.tolist() == pytest.approx([2 * CV_F / (CV_F + 2), 2 * 2 / (CV_F + 2)], rel=1e-7)


def test_saw_grpo_by_hand():
    rewards = torch.tensor(SAW_REWARDS, dtype=torch.float64)
    combined = [W_F * f + W_C * c for f, c in SAW_REWARDS]
    mean = sum(combined) / 4
    std = math.sqrt(sum((x - mean) ** 2 for x in combined) / 3)
    expected = [(x - mean) / std for x in combined]
    got = saw_grpo_advantages(rewards, [1.0, 1.0], 4, offsets=[0.0, 3.0], eps=0.0)
    assert got.tolist() == pytest.approx(expected, rel=1e-7)


def test_saw_gdpo_by_hand():
    """Two groups of two; each reward normalized within its group is +-1/sqrt(2) (or 0 where constant), the weighted
    sum whitened over the four rows with Bessel's correction."""
    rewards = torch.tensor([[1.0, 3.0], [0.0, -3.0], [1.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    f, c = [1.0, 0.0, 1.0, 1.0], [6.0, 0.0, 4.0, 2.0]  # correctness + 3
    cv = []
    for column in (f, c):
        mean = sum(column) / 4
        cv.append(math.sqrt(sum((x - mean) ** 2 for x in column) / 3) / mean)
    w = [2 * x / sum(cv) for x in cv]
    unit = 1 / math.sqrt(2)  # (x - mean) / std for a pair of two different values
    summed = [w[0] * unit + w[1] * unit, -w[0] * unit - w[1] * unit, w[1] * unit, -w[1] * unit]
    mean = sum(summed) / 4
    std = math.sqrt(sum((x - mean) ** 2 for x in summed) / 3)
    expected = [(x - mean) / std for x in summed]
    got = saw_gdpo_advantages(rewards, [1.0, 1.0], 2, offsets=[0.0, 3.0], eps=0.0)
    assert got.tolist() == pytest.approx(expected, rel=1e-6)


def _reference_group_normalize(token_scores, mask, index, epsilon=1e-6):
    """A port, for this test, of verl's GRPO outcome advantage as SAW's fork computes it: per prompt id, the response's
    summed score minus the id's mean over the id's std (torch's unbiased std; an id seen once: mean 0, std 1), then
    spread over the response tokens."""
    scores = token_scores.sum(dim=-1)
    by_id = defaultdict(list)
    for i in range(len(scores)):
        by_id[index[i]].append(scores[i])
    stats = {}
    for key, values in by_id.items():
        values = torch.stack(values)
        stats[key] = (torch.tensor(0.0, dtype=scores.dtype), torch.tensor(1.0, dtype=scores.dtype))
        if len(values) > 1:
            stats[key] = (values.mean(), values.std())
    out = scores.clone()
    for i in range(len(scores)):
        mean, std = stats[index[i]]
        out[i] = (scores[i] - mean) / (std + epsilon)
    return out.unsqueeze(-1) * mask


def _reference_masked_whiten(values, mask):
    """SAW's verl masked_whiten: mask-weighted mean and unbiased variance, (x - mean) * rsqrt(var + 1e-8)."""
    mean = (values * mask).sum() / mask.sum()
    variance = (((values - mean) ** 2) * mask).sum() / mask.sum()
    variance = variance * mask.sum() / (mask.sum() - 1)
    return (values - mean) * torch.rsqrt(variance + 1e-8)


def _reference_saw_weights(seq_correctness, seq_format):
    shifted = seq_correctness + 3.0  # the reference's correctness offset; format's is 0
    cv_c = shifted.std() / (shifted.mean().abs() + 1e-8)
    cv_f = seq_format.std() / (seq_format.mean().abs() + 1e-8)
    total = cv_c + cv_f + 1e-8
    return 2.0 * cv_c / total, 2.0 * cv_f / total


def reference_gdpo_h(correctness, fmt, mask, index):
    """SAW's gdpo-h for two rewards, ported: token-level scores (the score on each response's last token), weights
    from the offset batch CVs, each reward group-normalized, the weighted sum whitened over the response tokens."""
    tokens_c, tokens_f = _token_scores(correctness, mask), _token_scores(fmt, mask)
    w_c, w_f = _reference_saw_weights((tokens_c * mask).sum(-1), (tokens_f * mask).sum(-1))
    adv_c = _reference_group_normalize(tokens_c, mask, index)
    adv_f = _reference_group_normalize(tokens_f, mask, index)
    return _reference_masked_whiten(w_c * adv_c + w_f * adv_f, mask) * mask


def reference_grpo_h(correctness, fmt, mask, index):
    """SAW's grpo-h for two rewards, ported: the weights as gdpo-h's, the weighted raw scores group-normalized."""
    tokens_c, tokens_f = _token_scores(correctness, mask), _token_scores(fmt, mask)
    w_c, w_f = _reference_saw_weights((tokens_c * mask).sum(-1), (tokens_f * mask).sum(-1))
    return _reference_group_normalize(w_c * tokens_c + w_f * tokens_f, mask, index)


def _token_scores(scores, mask):
    last = mask.sum(dim=-1).long() - 1
    tokens = torch.zeros_like(mask)
    tokens[torch.arange(len(scores)), last] = scores
    return tokens


def _battery(generator, groups=4, group_size=8, length=12):
    """A ToolRL-like batch: format in {0, 1}; correctness in [-3, 3] (a third exactly -3, a tenth exactly 3, the rest
    on a grid of partial scores); response lengths 1..length; rows in groups of ``group_size``."""
    n = groups * group_size
    fmt = torch.randint(0, 2, (n,), generator=generator).double()
    correctness = torch.round(torch.rand(n, generator=generator, dtype=torch.float64) * 24) / 4 - 3
    draw = torch.rand(n, generator=generator)
    correctness[draw < 0.33] = -3.0
    correctness[(draw >= 0.33) & (draw < 0.43)] = 3.0
    lengths = torch.randint(1, length + 1, (n,), generator=generator)
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).double()
    index = [i // group_size for i in range(n)]
    return correctness, fmt, mask, index


def test_saw_equals_a_port_of_its_reference_on_200_toolrl_batteries():
    """The project's functions (two rewards in the reference's order correctness, format; their offsets 3 and 0; the
    reference's eps 1e-6; gdpo-h whitened over the tokens) against the port, to 1e-6, token by token."""
    generator = torch.Generator().manual_seed(58)
    checked = 0
    for _ in range(200):
        correctness, fmt, mask, index = _battery(generator)
        rewards = torch.stack([correctness, fmt], dim=1)
        ours_gdpo = saw_gdpo_advantages(rewards, [1.0, 1.0], 8, offsets=[3.0, 0.0], completion_mask=mask, eps=1e-6)
        ours_grpo = saw_grpo_advantages(rewards, [1.0, 1.0], 8, offsets=[3.0, 0.0], eps=1e-6)
        torch.testing.assert_close(
            ours_gdpo.unsqueeze(1) * mask, reference_gdpo_h(correctness, fmt, mask, index), rtol=0, atol=1e-6
        )
        torch.testing.assert_close(
            ours_grpo.unsqueeze(1) * mask, reference_grpo_h(correctness, fmt, mask, index), rtol=0, atol=1e-6
        )
        checked += 1
    assert checked == 200


def test_saw_weights_leave_out_weightless_and_missing_rewards():
    rewards = torch.tensor([[1.0, 0.0, 5.0], [0.0, 1.0, 5.0], [1.0, NAN, 1.0], [0.0, NAN, 2.0]])
    weights = saw_weights(rewards, [1.0, 1.0, 0.0])
    assert weights[2] == 0 and weights[:2].sum().item() == pytest.approx(2.0, rel=1e-6)  # K' = 2 weighted rewards
    constant = saw_weights(torch.ones(4, 2), [1.0, 1.0])
    assert constant.tolist() == [0.0, 0.0]  # no spread anywhere: CV 0, every weight 0


# --- ODRPO ----------------------------------------------------------------------------------------------------------


def test_odrpo_by_hand():
    """One reward on -3..3, one group of four: [3, 0.5, -1, -3]. Indicators at -2 and -1 are [1, 1, 1, 0] (normalized
    [1/2, 1/2, 1/2, -3/2]), at 0 [1, 1, 0, 0] (+-sqrt(3)/2), at 1, 2, 3 [1, 0, 0, 0] ([3/2, -1/2, -1/2, -1/2])."""
    rewards = torch.tensor([[3.0], [0.5], [-1.0], [-3.0]], dtype=torch.float64)
    half = math.sqrt(3) / 2
    expected = [1 + half + 4.5, 1 + half - 1.5, 1 - half - 1.5, -3 - half - 1.5]
    assert odrpo_advantages(rewards, [1.0], 4, eps=0.0).tolist() == pytest.approx(expected, rel=1e-7)
    given = odrpo_advantages(rewards, [1.0], 4, thresholds=[[-2, -1, 0, 1, 2, 3]], eps=0.0)
    assert given.tolist() == pytest.approx(expected, rel=1e-7)
    # One threshold at 0: the indicator [1, 1, 0, 0] alone.
    assert odrpo_advantages(rewards, [2.0], 4, thresholds=[[0.0]], eps=0.0).tolist() == pytest.approx(
        [2 * half, 2 * half, -2 * half, -2 * half], rel=1e-7
    )


def test_odrpo_on_zero_one_rewards_is_mo_grpo():
    generator = torch.Generator().manual_seed(1)
    rewards = torch.randint(0, 2, (32, 3), generator=generator).double()
    rewards[5, 1] = NAN
    weights = [1.0, 6.0, 1.0]
    torch.testing.assert_close(odrpo_advantages(rewards, weights, 8), mo_grpo_advantages(rewards, weights, 8))


def test_odrpo_whole_levels_of_a_reward_times_six_are_weight_six():
    """H10b's equivalence: correctness on 0/6 split at 1..6 is correctness on 0/1 split at 1 with weight 6."""
    generator = torch.Generator().manual_seed(2)
    rewards = torch.randint(0, 2, (32, 3), generator=generator).double()
    scaled = rewards.clone()
    scaled[:, 1] *= 6
    torch.testing.assert_close(odrpo_advantages(scaled, [1, 1, 1], 8), odrpo_advantages(rewards, [1, 6, 1], 8))


def test_odrpo_default_thresholds_are_every_whole_level_in_the_batch():
    rewards = torch.tensor([[-3.0, 0.0], [2.5, 1.0], [NAN, 1.0], [0.0, 0.0]])
    table = threshold_table(rewards)
    assert table[0].tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]
    assert table[1, 0].item() == 1.0 and torch.isnan(table[1, 1:]).all()
    mixed = threshold_table(rewards, [[0.5], None])
    assert mixed[0, 0].item() == 0.5 and torch.isnan(mixed[0, 1:]).all() and mixed[1, 0].item() == 1.0


# --- NaN, shapes, options -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", NEW_RULES)
def test_a_missing_reward_drops_out_and_unscorable_rows_get_zero(rule):
    rewards = torch.tensor([[1.0, NAN], [0.0, NAN], [1.0, 2.0], [0.0, -1.0], [NAN, NAN], [NAN, NAN]])
    advantages = rule_advantages(rule, rewards, [1.0, 1.0], 2)
    assert advantages.shape == (6,) and torch.isfinite(advantages).all()
    assert advantages[4:].tolist() == [0.0, 0.0]
    # In the first group only the first reward applies: its own sign decides.
    assert advantages[0] > 0 > advantages[1]


def test_options_from_the_config_and_the_declared_ranges():
    def tool_correctness(completions, **kwargs):
        return [0.0] * len(completions)

    tool_correctness.reward_range = (-3.0, 3.0)

    class Checked:  # the trainer's wrapper keeps the reward in .func
        func = tool_correctness

    def plain(completions, **kwargs):
        return [0.0] * len(completions)

    assert declared_range(Checked()) == (-3.0, 3.0) and declared_range(plain) is None
    names = ["tool_correctness", "plain"]
    assert saw_offsets_for(names, [(-3.0, 3.0), None], None) == [3.0, 0.0]
    assert saw_offsets_for(names, [(-3.0, 3.0), None], {"plain": 1.5}) == [3.0, 1.5]
    assert odrpo_thresholds_for(names, None) is None
    assert odrpo_thresholds_for(names, {"plain": [0.5]}) == [None, [0.5]]

    class Config:
        saw_offsets = {"plain": 2.0}
        odrpo_thresholds = None
        reward_weights = None

    assert rule_options_for("saw_gdpo", [Checked(), plain], names, Config()) == {"offsets": [3.0, 2.0]}
    assert rule_options_for("odrpo", [Checked(), plain], names, Config()) == {}
    Config.saw_offsets = {"typo": 1.0}
    with pytest.raises(InputError, match="typo"):
        rule_options_for("saw_grpo", [Checked(), plain], names, Config())


def test_the_shipped_rewards_declare_their_ranges():
    from gdpo_trl.rewards import get_reward_func

    assert declared_range(get_reward_func("tool_correctness")) == (-3.0, 3.0)
    for name in ("tool_format", "format", "correctness", "integer"):
        assert declared_range(get_reward_func(name)) == (0.0, 1.0)
