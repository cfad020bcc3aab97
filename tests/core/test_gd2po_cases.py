"""GD2PO's masking (gdpo_trl.core.gd2po) on hand-computed cases, its edge cases and errors, and the config choice that
selects it (its reference restatement: test_gd2po.py)."""

import math

import pytest
import torch

from gdpo_trl.core.advantages import gdpo_reward_terms
from gdpo_trl.core.gd2po import gd2po_advantages, gd2po_conflicts, gd2po_reward_terms, group_keep_ratio

NAN = float("nan")
THRESHOLDS = (0.0, 0.05, 0.2, 0.5, 0.9, 1.0)


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
    with pytest.raises(InputError, match=r"or one of \['gd2po', 'mo_grpo'"):
        GDPOConfig(multi_objective_aggregation="gd3po", **cpu)
