"""GD2PO: conflict-aware masking on top of GDPO's per-reward group advantages; pure tensor functions, no TRL.

GD2PO (arXiv 2606.16771, reference code github.com/Qwen-Applications/GD2PO, built on verl) starts from GDPO's
per-reward group advantages and masks rollouts whose rewards pull in opposite directions. Restated from the
reference's arithmetic (``GDPO_Filter_GroupRatio`` / ``GDPO_Filter_RatioConflict_GroupRatio`` with verl's
``compute_grpo_outcome_advantage`` and ``masked_whiten``), generalized from its two hard-coded rewards to K weighted
ones. Shapes as in :mod:`gdpo_trl.core.advantages`; ``completion_mask`` ``[N, T]`` is 1 on real completion tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gdpo_trl.core.advantages import in_groups, normalize_per_group, unscorable, validate_rewards

GD2PO_SIGN_EPS = 1e-8  # a weighted per-reward advantage counts as positive above +1e-8, negative below -1e-8
GD2PO_RATIO_EPS = 1e-6  # added to the denominator of the agreement ratio s
GD2PO_WHITEN_EPS = 1e-8  # verl's masked_whiten: (x - mean) * rsqrt(var + 1e-8), and mask sums + 1e-8


def _row_lengths(rewards: torch.Tensor, completion_mask: torch.Tensor | None) -> torch.Tensor:
    """``[N]``: how many times each row counts (its number of completion tokens, or 1 without a mask)."""
    n = rewards.shape[0]
    if completion_mask is None:
        return torch.ones(n, dtype=rewards.dtype, device=rewards.device)
    if completion_mask.dim() != 2 or completion_mask.shape[0] != n:
        raise ValueError(f"completion_mask must have shape (N={n}, T), got {tuple(completion_mask.shape)}.")
    return completion_mask.to(device=rewards.device, dtype=rewards.dtype).sum(dim=1)


def gd2po_reward_terms(rewards: torch.Tensor, num_generations: int, *, eps: float = 1e-4) -> torch.Tensor:
    """GD2PO's per-reward group advantages ``[N, K]``: GDPO's (:func:`gdpo_reward_terms`), except that a reward that
    is constant in a group gives exactly 0 there.

    The mean of identical floats can come out one ulp off (about one value in three for values such as 0.1), so the
    plain arithmetic gives ``+-ulp / eps`` (about 1e-4 with ``eps=1e-4``, 1e-2 with the reference's 1e-6) instead of 0,
    and GD2PO's sign test at ``+-1e-8`` would read that noise as a direction. The reference has that noise; in exact
    arithmetic both give 0. The group max/min comparison used here is exact.
    """
    terms = normalize_per_group(rewards, num_generations, eps=eps)
    grouped = in_groups(rewards, num_generations)
    missing = torch.isnan(grouped)
    high = grouped.masked_fill(missing, float("-inf")).amax(dim=1, keepdim=True)
    low = grouped.masked_fill(missing, float("inf")).amin(dim=1, keepdim=True)
    constant = (high == low).expand_as(grouped).reshape(rewards.shape) & ~torch.isnan(terms)
    return terms.masked_fill(constant, 0.0)


def gd2po_conflicts(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    threshold: float = 0.2,
    eps: float = 1e-4,
    completion_mask: torch.Tensor | None = None,
    ratio_eps: float = GD2PO_RATIO_EPS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Which rollouts are in conflict, and which of them GD2PO masks: ``(conflict [N] bool, masked [N] bool)``.

    With ``t_ik = w_k a_ik L_i`` (``a`` from :func:`gd2po_reward_terms`, ``L_i`` the row's token count with
    ``completion_mask``, else 1; the reference sums each token's advantage over the response): row i is in
    *conflict* when some ``t_ik > 1e-8`` and some ``t_ik < -1e-8`` (NaN terms are neither). Its agreement ratio is
    ``s_i = sum_k t_ik / (sum_k |t_ik| + ratio_eps)`` in (-1, 1); a conflict is *masked* when ``|s_i| < threshold``.
    ``threshold`` is in [0, 1]: 0 masks none, 1 masks every conflict (the reference's hard rule; for a conflict
    ``|s| < 1`` always holds, and at 1 it is not even computed, so rounding cannot keep one).
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1] (0 masks no conflict, 1 masks every one), got {threshold}.")
    weights = validate_rewards(rewards, weights, num_generations)
    lengths = _row_lengths(rewards, completion_mask)
    terms = gd2po_reward_terms(rewards, num_generations, eps=eps) * weights * lengths.unsqueeze(1)
    positive = (terms > GD2PO_SIGN_EPS).any(dim=1)  # NaN compares False: a term that does not apply has no sign
    negative = (terms < -GD2PO_SIGN_EPS).any(dim=1)
    conflict = positive & negative
    if threshold >= 1.0:
        return conflict, conflict.clone()
    ratio = terms.nansum(dim=1) / (terms.abs().nansum(dim=1) + ratio_eps)
    return conflict, conflict & (ratio.abs() < threshold)


def group_keep_ratio(keep: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N]``: for each row, the share of its group's ``num_generations`` rows that ``keep`` ``[N]`` keeps."""
    ratio = in_groups(keep.float(), num_generations).mean(dim=1, keepdim=True)
    return ratio.expand(-1, num_generations).reshape(-1)


def gd2po_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    threshold: float = 0.2,
    eps: float = 1e-4,
    completion_mask: torch.Tensor | None = None,
    ratio_eps: float = GD2PO_RATIO_EPS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GD2PO advantages ``[N]`` and the rows it keeps ``[N]`` (bool) from rewards ``[N, K]``.

    1. per-reward group advantages ``a_ik = (r_ik - mean) / (std + eps)`` (Bessel std; NaN where reward k does not
       apply; a reward constant in a group gives 0): :func:`gd2po_reward_terms`;
    2. conflicts and the masked ones at ``threshold``: :func:`gd2po_conflicts`; ``keep = ~masked``;
    3. ``v_i = (sum_k w_k a_ik) * (kept share of i's group) * keep_i`` (NaN terms skipped);
    4. whitening over the kept rows, with each row counted once, or ``L_i`` times (its tokens) when
       ``completion_mask`` ``[N, T]`` is given, as the reference whitens over kept tokens:
       ``(v - mean) * rsqrt(var + 1e-8)`` with the Bessel-corrected variance (verl's ``masked_whiten``, including
       its ``+ 1e-8`` on the mask sums). Masked rows get 0.

    Unscorable rows (every reward NaN) are not in conflict, so they count as kept in their group's share, but they
    take no part in the whitening and get 0, as in :func:`gdpo_advantages`. With fewer than two kept rows (or
    tokens) to whiten over every advantage is 0 (the reference raises there). The advantage is the same for every
    token of a row, so one value per row is returned; the reference's token advantages are it times the mask.
    ``eps`` defaults to the project's (TRL's) 1e-4; the reference uses 1e-6.
    """
    weights = validate_rewards(rewards, weights, num_generations)
    _, masked = gd2po_conflicts(
        rewards,
        weights,
        num_generations,
        threshold=threshold,
        eps=eps,
        completion_mask=completion_mask,
        ratio_eps=ratio_eps,
    )
    keep = ~masked
    summed = (gd2po_reward_terms(rewards, num_generations, eps=eps) * weights).nansum(dim=1)
    values = summed * group_keep_ratio(keep, num_generations).to(summed.dtype) * keep.to(summed.dtype)
    counted = keep & ~unscorable(rewards)
    units = _row_lengths(rewards, completion_mask) * counted.to(summed.dtype)  # [N]: tokens (or 1) per counted row
    total = units.sum()
    if total <= 1:  # nothing, or a single token, to whiten over
        return torch.zeros_like(summed), keep
    values = torch.where(counted, values, torch.zeros_like(values))
    mean = (values * units).sum() / (total + GD2PO_WHITEN_EPS)
    variance = ((values - mean) ** 2 * units).sum() / (total + GD2PO_WHITEN_EPS) * (total / (total - 1))
    whitened = (values - mean) * torch.rsqrt(variance + GD2PO_WHITEN_EPS)
    return torch.where(counted & (units > 0), whitened, torch.zeros_like(whitened)), keep
