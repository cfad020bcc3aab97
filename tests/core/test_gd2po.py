"""GD2PO's conflict-aware masking (gdpo_trl.core.gd2po.gd2po_advantages) against a plain-loop restatement of its
reference code (hand-computed cases: test_gd2po_cases.py).

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

from gdpo_trl.core.gd2po import gd2po_advantages

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
