"""GD2PO's conflict-aware masking (gdpo_trl.core.gd2po.gd2po_advantages) against hand-computed values and
against a plain-loop restatement of its reference code.

The restatement below follows the reference (github.com/Qwen-Applications/GD2PO,
safe-alignment/verl/trainer/ppo/ray_trainer.py: ``GDPO_Filter_GroupRatio`` for the hard rule and
``GDPO_Filter_RatioConflict_GroupRatio`` for the ratio rule, with verl's ``compute_grpo_outcome_advantage`` and
``masked_whiten``) step by step on token-level lists, in Python floats, one rollout and one token at a time; it was
written from reading that code, not copied. Its only extensions are the ones the reference has no case for: K
weighted rewards instead of two unweighted ones, NaN rewards (left out of the group statistics as in GDPO, a row with
every reward NaN left out of the whitening) and a single token to whiten over (the reference raises; 0 here).
"""

import math
import random

import pytest
import torch

from gdpo_trl.core.advantages import gdpo_reward_terms
from gdpo_trl.core.gd2po import gd2po_advantages, gd2po_conflicts, gd2po_reward_terms, group_keep_ratio

NAN = float("nan")
THRESHOLDS = (0.0, 0.05, 0.2, 0.5, 0.9, 1.0)


# --- the reference, restated with loops ----------------------------------------------------------------------------


def ref_group_advantage(scores, num_generations, eps):
    """verl's compute_grpo_outcome_advantage for one reward: per group (index = row // G) mean and unbiased std,
    (score - mean) / (std + eps). NaN scores are left out of their group's statistics and stay NaN; a group with
    fewer than two values gives NaN (no std), as GDPO's NaN rule."""
    out = [NAN] * len(scores)
    for start in range(0, len(scores), num_generations):
        idx = [i for i in range(start, start + num_generations) if not math.isnan(scores[i])]
        if len(idx) < 2:
            continue
        mean = sum(scores[i] for i in idx) / len(idx)
        std = math.sqrt(sum((scores[i] - mean) ** 2 for i in idx) / (len(idx) - 1))
        for i in idx:
            out[i] = (scores[i] - mean) / (std + eps)
    return out


def ref_masked_whiten(values, mask):
    """verl's masked_whiten on token lists: mean = sum / (count + 1e-8), Bessel-corrected variance (its mean also over
    count + 1e-8), (x - mean) * rsqrt(var + 1e-8). The caller multiplies by the mask afterwards."""
    count = sum(m for row in mask for m in row)
    total = sum(v * m for vrow, mrow in zip(values, mask, strict=True) for v, m in zip(vrow, mrow, strict=True))
    mean = total / (count + 1e-8)
    square = sum(
        (v - mean) ** 2 * m for vrow, mrow in zip(values, mask, strict=True) for v, m in zip(vrow, mrow, strict=True)
    )
    variance = square / (count + 1e-8) * (count / (count - 1))
    scale = 1.0 / math.sqrt(variance + 1e-8)
    return [[(v - mean) * scale for v in vrow] for vrow in values]


def reference_gd2po(rewards, weights, num_generations, threshold, eps, lengths=None, ratio_eps=1e-6):
    """Token advantages ``[N][T]`` and keep flags ``[N]`` as the reference computes them. ``lengths`` None: one-token
    responses."""
    n, k = len(rewards), len(weights)
    width = max(lengths) if lengths else 1
    lengths = lengths or [1] * n
    mask = [[1.0 if t < lengths[i] else 0.0 for t in range(width)] for i in range(n)]
    # Per reward: the group advantage, weighted, spread over the response's tokens (scores.unsqueeze(-1) * mask).
    token_adv = []
    for j in range(k):
        a = ref_group_advantage([row[j] for row in rewards], num_generations, eps)
        token_adv.append([[weights[j] * a[i] * mask[i][t] for t in range(width)] for i in range(n)])
    # Rollout-level advantage per reward: the sum over the response's tokens (NaN: does not apply, no sign).
    rollout = [[sum(token_adv[j][i]) for j in range(k)] for i in range(n)]
    keep = []
    for i in range(n):
        present = [x for x in rollout[i] if not math.isnan(x)]
        conflict = any(x > 1e-8 for x in present) and any(x < -1e-8 for x in present)
        if threshold >= 1.0:  # GDPO_Filter_GroupRatio: every conflict is masked
            masked = conflict
        else:  # GDPO_Filter_RatioConflict_GroupRatio
            s = sum(present) / (sum(abs(x) for x in present) + ratio_eps)
            masked = conflict and abs(s) < threshold
        keep.append(not masked)
    ratio = []
    for i in range(n):
        start = i - i % num_generations
        ratio.append(sum(keep[start : start + num_generations]) / num_generations)
    scorable = [not all(math.isnan(r) for r in row) for row in rewards]
    summed = [
        [sum(token_adv[j][i][t] for j in range(k) if not math.isnan(token_adv[j][i][t])) for t in range(width)]
        for i in range(n)
    ]
    values = [[summed[i][t] * ratio[i] * keep[i] * mask[i][t] for t in range(width)] for i in range(n)]
    whiten_mask = [[keep[i] * scorable[i] * mask[i][t] for t in range(width)] for i in range(n)]
    if sum(map(sum, whiten_mask)) <= 1:
        return [[0.0] * width for _ in range(n)], keep
    whitened = ref_masked_whiten(values, whiten_mask)
    return [[whitened[i][t] * whiten_mask[i][t] for t in range(width)] for i in range(n)], keep


# --- batteries -----------------------------------------------------------------------------------------------------


def battery(seed: int, k: int, dtype=torch.float64):
    """Rewards with many ties (values on a dyadic grid, so every group mean is exact in floats), zero-spread groups,
    anti-correlated groups (every rollout in conflict), NaN entries and unscorable rows; random weights."""
    rng = random.Random(seed)
    g = rng.choice([2, 3, 4, 6, 8])
    groups = rng.randint(1, 6)
    grid = rng.choice([[0.0, 1.0], [0.0, 0.25, 0.5, 1.0], [0.0, 1.0, 2.0, 3.0], [-1.0, 0.0, 0.5]])
    rows = []
    for _ in range(groups):
        kind = rng.random()
        for _ in range(g):
            row = [rng.choice(grid) for _ in range(k)]
            rows.append(row)
        block = rows[-g:]
        if kind < 0.2:  # reward 1 mirrors reward 0: every rollout with spread is in conflict
            for row in block:
                row[1] = 1.0 - row[0]
        elif kind < 0.35:  # reward 0 constant in the group
            for row in block:
                row[0] = block[0][0]
        elif kind < 0.45:  # everything constant
            for row in block:
                row[:] = block[0]
    for row in rows:
        for j in range(k):
            if rng.random() < 0.1:
                row[j] = NAN
        if rng.random() < 0.05:
            row[:] = [NAN] * k
    weights = [rng.choice([1.0, 1.0, 0.5, 2.0, 0.0, -1.0]) for _ in range(k)]
    if not any(weights):
        weights[0] = 1.0
    return torch.tensor(rows, dtype=dtype), weights, g


def _check(rewards, weights, g, threshold, eps, lengths=None, abs_tol=1e-6):
    mask = None
    if lengths is not None:
        width = max(max(lengths), 1)
        mask = (torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)).long()
    ours, keep = gd2po_advantages(rewards, weights, g, threshold=threshold, eps=eps, completion_mask=mask)
    expected, ref_keep = reference_gd2po(rewards.tolist(), weights, g, threshold, eps, lengths)
    assert keep.tolist() == ref_keep
    tokens = ours.unsqueeze(1) * (mask if mask is not None else torch.ones(len(ours), 1))
    assert tokens.tolist() == [pytest.approx(row, abs=abs_tol) for row in expected]


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_equals_the_reference_per_row(k, threshold):
    for seed in range(40):
        rewards, weights, g = battery(1000 * k + seed, k)
        for eps in (1e-6, 1e-4):
            _check(rewards, weights, g, threshold, eps)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_equals_the_reference_per_token(k, threshold):
    for seed in range(25):
        rewards, weights, g = battery(5000 * k + seed, k)
        rng = random.Random(seed)
        lengths = [rng.choice([0, 1, 1, 2, 3, 5, 8]) for _ in range(len(rewards))]
        _check(rewards, weights, g, threshold, 1e-6, lengths)


def test_equals_the_reference_in_float32():
    # TRL's reward matrix is float32: same decisions, same values to 1e-5 (float32 rounding).
    for seed in range(60):
        rewards, weights, g = battery(9000 + seed, 2 + seed % 2, dtype=torch.float32)
        _check(rewards, weights, g, 0.2, 1e-4, abs_tol=1e-5)


def test_equals_the_reference_on_continuous_rewards():
    # No ties: conflicts decided by the ratio, not by zeros.
    gen = torch.Generator().manual_seed(0)
    for seed in range(30):
        g, k = 4 + seed % 5, 2 + seed % 2
        rewards = torch.rand(g * 3, k, generator=gen, dtype=torch.float64)
        for threshold in THRESHOLDS:
            _check(rewards, [1.0] * k, g, threshold, 1e-6)


# --- hand-computed values ------------------------------------------------------------------------------------------

# One group of four, two rewards (the GDPO paper's example): rows 0 and 1 disagree exactly (s = 0).
EXAMPLE = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])


def test_hand_computed_example():
    # a = +-0.5 / sqrt(1/3) = +-0.866 per reward. Rows 0, 1: conflict with s = 0, masked at any threshold > 0; the
    # group keeps 1/2; v = (0, 0, 1.732 / 2, -1.732 / 2); whitened over the two kept rows: mean 0, variance
    # 2 * 0.75 / 2 * 2 = 1.5, so +-0.866 / sqrt(1.5) = +-sqrt(1/2).
    advantages, keep = gd2po_advantages(EXAMPLE, [1.0, 1.0], 4, eps=0.0)
    assert keep.tolist() == [False, False, True, True]
    assert advantages.tolist() == pytest.approx([0.0, 0.0, math.sqrt(0.5), -math.sqrt(0.5)], abs=1e-6)
    # Threshold 0 masks nothing: v = (0, 0, 1.732, -1.732) over four rows, variance 6 / 4 * 4 / 3 = 2.
    advantages, keep = gd2po_advantages(EXAMPLE, [1.0, 1.0], 4, threshold=0.0, eps=0.0)
    assert keep.all()
    assert advantages.tolist() == pytest.approx([0.0, 0.0, math.sqrt(1.5), -math.sqrt(1.5)], abs=1e-6)


def test_hand_computed_ratio_threshold():
    # Group of two, rewards (1, 0) and (0, 0.5) with weights (1, 3): a = (+-0.707, -+0.707) per reward, weighted
    # t = (0.707, -2.121) and (-0.707, 2.121): s = -+1.414 / 2.828 = -+0.5 for both rows.
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.5]])
    conflict, masked = gd2po_conflicts(rewards, [1.0, 3.0], 2, threshold=0.49, eps=0.0)
    assert conflict.tolist() == [True, True]
    assert masked.tolist() == [False, False]  # |s| = 0.5 is not below 0.49
    # ratio_eps (1e-6) in the denominator puts |s| just under 0.5: masked at 0.5, as in the reference.
    assert gd2po_conflicts(rewards, [1.0, 3.0], 2, threshold=0.5, eps=0.0)[1].tolist() == [True, True]
    # Whole group masked: nothing left to whiten, every advantage 0.
    advantages, keep = gd2po_advantages(rewards, [1.0, 3.0], 2, threshold=0.5, eps=0.0)
    assert advantages.tolist() == [0.0, 0.0] and keep.tolist() == [False, False]


def test_group_share_scales_a_group_before_whitening():
    # Group A (rows 0-3): the paper's example, keeps 1/2. Group B (rows 4-7): both rewards agree, keeps all.
    rewards = torch.cat([EXAMPLE, torch.tensor([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])])
    advantages, keep = gd2po_advantages(rewards, [1.0, 1.0], 4, eps=0.0)
    assert keep.tolist() == [False, False, True, True, True, True, True, True]
    assert group_keep_ratio(keep, 4).tolist() == [0.5] * 4 + [1.0] * 4
    # B's rows are twice A's kept rows before whitening (same sums, A halved): so after it too (mean 0).
    assert advantages[4].item() == pytest.approx(2 * advantages[2].item(), abs=1e-6)


def test_threshold_one_masks_every_conflict_zero_none():
    gen = torch.Generator().manual_seed(1)
    rewards = torch.rand(64, 3, generator=gen)
    conflict, masked = gd2po_conflicts(rewards, [1.0, 1.0, 1.0], 8, threshold=1.0)
    assert conflict.any() and torch.equal(conflict, masked)
    conflict, masked = gd2po_conflicts(rewards, [1.0, 1.0, 1.0], 8, threshold=0.0)
    assert conflict.any() and not masked.any()
    # Monotone: a higher threshold masks a superset.
    previous = torch.zeros(64, dtype=torch.bool)
    for threshold in THRESHOLDS:
        masked = gd2po_conflicts(rewards, [1.0, 1.0, 1.0], 8, threshold=threshold)[1]
        assert not (previous & ~masked).any()
        previous = masked


def test_zero_weight_and_nan_terms_have_no_direction():
    rewards = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, NAN], [0.0, NAN]])
    # Reward 1 varies only in the first group; weight 0 turns it off: no conflict anywhere.
    assert not gd2po_conflicts(rewards, [1.0, 0.0], 2, threshold=1.0)[0].any()
    conflict, _ = gd2po_conflicts(rewards, [1.0, 1.0], 2, threshold=1.0)
    assert conflict.tolist() == [True, True, False, False]  # the second group's reward 1 does not apply


def test_unscorable_rows_are_kept_but_get_zero():
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0], [NAN, NAN], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    advantages, keep = gd2po_advantages(rewards, [1.0, 1.0], 3, threshold=1.0)
    assert keep[2] and advantages[2] == 0.0


def test_constant_reward_gives_exact_zero():
    # Identical floats whose mean comes out an ulp off: GDPO's terms show the noise, GD2PO's are exactly 0, so the
    # 1e-8 sign test cannot read a direction into them.
    rewards = torch.tensor([[0.1, 1.0], [0.1, 0.0], [0.1, 1.0], [0.1, 0.0], [0.1, 1.0]], dtype=torch.float32)
    noisy = gdpo_reward_terms(rewards, 5, eps=1e-6)[:, 0]
    assert gd2po_reward_terms(rewards, 5, eps=1e-6)[:, 0].tolist() == [0.0] * 5
    assert not gd2po_conflicts(rewards, [1.0, 1.0], 5, threshold=1.0)[0].any()
    assert noisy.abs().max() >= 0.0  # (whatever the rounding does there)


def test_single_token_to_whiten_gives_zero():
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    mask = torch.tensor([[1, 0], [0, 0]])
    advantages, keep = gd2po_advantages(rewards, [1.0, 1.0], 2, completion_mask=mask)
    assert keep.all() and advantages.tolist() == [0.0, 0.0]


def test_tokens_weigh_long_rollouts_in_the_whitening():
    # Same rewards, different lengths: the token-weighted mean moves toward the long rollout, so values differ from
    # the per-row whitening.
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    per_row, _ = gd2po_advantages(rewards, [1.0, 1.0], 2)
    mask = torch.tensor([[1] * 6, [1, 0, 0, 0, 0, 0], [1] * 6, [1, 0, 0, 0, 0, 0]])
    per_token, _ = gd2po_advantages(rewards, [1.0, 1.0], 2, completion_mask=mask)
    assert per_row.tolist() != pytest.approx(per_token.tolist())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"threshold": 1.5}, "threshold must be in \\[0, 1\\]"),
        ({"threshold": -0.1}, "threshold must be in \\[0, 1\\]"),
        ({"completion_mask": torch.ones(3, 2)}, "completion_mask must have shape"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gd2po_advantages(EXAMPLE, [1.0, 1.0], 4, **kwargs)


# --- the config choice ---------------------------------------------------------------------------------------------


def test_config_accepts_gd2po_and_checks_its_threshold(tmp_path):
    from gdpo_trl import GDPOConfig
    from gdpo_trl.core.errors import InputError

    cpu = dict(output_dir=str(tmp_path), use_cpu=True, bf16=False)
    config = GDPOConfig(multi_objective_aggregation="gd2po", **cpu)
    assert config.gd2po_threshold == 0.2
    assert GDPOConfig(multi_objective_aggregation="gd2po", gd2po_threshold="1e-1", **cpu).gd2po_threshold == 0.1
    for value in (1.5, -0.1, "high", float("nan")):
        with pytest.raises(InputError, match=r"^gd2po_threshold=.*must be a number in \[0, 1\]"):
            GDPOConfig(multi_objective_aggregation="gd2po", gd2po_threshold=value, **cpu)
    with pytest.raises(
        InputError, match="gdpo_batch_norm=false has no effect with multi_objective_aggregation='gd2po'"
    ):
        GDPOConfig(multi_objective_aggregation="gd2po", gdpo_batch_norm=False, **cpu)
    with pytest.raises(InputError, match="or 'gd2po' \\(GD2PO\\)"):
        GDPOConfig(multi_objective_aggregation="gd3po", **cpu)
