"""Per-step diagnostics of the reward matrix and the advantages: pure tensor functions, no TRL import.

Shapes follow ``gdpo_trl.core.advantages``: ``rewards`` is ``[N, K]`` in groups of ``num_generations`` (G) consecutive
rows, NaN meaning "does not apply".
"""

from __future__ import annotations

import torch

from gdpo_trl.core.advantages import center_per_group, gdpo_reward_terms, grpo_advantages
from gdpo_trl.core.gd2po import gd2po_conflicts, group_keep_ratio


def group_has_spread(values: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N / G, K]`` bool: whether each column of ``values`` ``[N, K]`` takes two different values in each group.

    Compares the group max with the group min rather than testing ``std == 0``: a std of identical floats can come
    out as 1e-8 instead of 0, a max/min comparison is exact. Groups with fewer than two non-NaN values have no spread.
    """
    grouped = values.reshape(-1, num_generations, values.shape[1])
    missing = torch.isnan(grouped)
    high = grouped.masked_fill(missing, float("-inf")).amax(dim=1)
    low = grouped.masked_fill(missing, float("inf")).amin(dim=1)
    return high > low


def frac_zero_std_per_reward(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[K]``: for each reward, the fraction of groups in which it gives no signal: it is constant there, or it
    applies to fewer than two of the group's completions (a group it does not apply to at all counts too)."""
    return (~group_has_spread(rewards, num_generations)).float().mean(dim=0)


def applied_fraction(rewards: torch.Tensor) -> torch.Tensor:
    """``[K]``: for each reward, the fraction of the ``N`` rows of ``rewards`` ``[N, K]`` (or ``[N, K, T]``: a row
    counts when any of its T values is set) where it applies, i.e. is not NaN. 0 when it applied to no row: then it
    added nothing to the batch's advantages (TRL logs its mean as None)."""
    present = ~torch.isnan(rewards)
    if present.dim() == 3:
        present = present.any(dim=2)
    return present.float().mean(dim=0)


def frac_groups_without_signal(
    rewards: torch.Tensor, weights: torch.Tensor, num_generations: int, *, gdpo: bool
) -> float:
    """Fraction of groups whose advantage before batch scaling is zero for every completion.

    GDPO (``gdpo=True``): a group gives no signal when every reward with a non-zero weight is constant in it.
    GRPO: when the weighted sum of rewards is constant in it. This is the group-level ``frac_reward_zero_std`` that
    TRL 1.16 computes from the batch std under ``normalize_then_sum`` (and so reports as always 0 or 1).
    """
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device)
    if gdpo:
        spread = group_has_spread(rewards, num_generations)[:, weights != 0]
        return (~spread.any(dim=1)).float().mean().item()
    summed = (rewards * weights).nansum(dim=1).masked_fill(torch.isnan(rewards).all(dim=1), float("nan"))
    return (~group_has_spread(summed.unsqueeze(1), num_generations)[:, 0]).float().mean().item()


def advantage_shares(terms: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``[K]``: the share of the advantage's absolute mass that each reward contributes; sums to 1 (or all 0).

    ``terms`` ``[N, K]`` are the per-reward parts whose weighted sum is the advantage before batch scaling: GDPO's
    group-normalized rewards, or GRPO's group-centered rewards. Share of reward k is
    ``sum_i |w_k t_ik| / sum_i sum_j |w_j t_ij|``; NaN terms count as 0.
    """
    weights = torch.as_tensor(weights, dtype=terms.dtype, device=terms.device)
    mass = torch.nan_to_num(terms * weights, nan=0.0).abs().sum(dim=0)
    total = mass.sum()
    return mass / total if total > 0 else torch.zeros_like(mass)


def mean_distinct_per_group(advantages: torch.Tensor, num_generations: int, *, decimals: int = 6) -> float:
    """Mean number of distinct advantage values per group of ``advantages`` ``[N]``, after rounding to ``decimals``.

    G means every completion of a group got its own advantage; 1 means the group collapsed to a single value.
    """
    rounded = torch.round(advantages.reshape(-1, num_generations).double(), decimals=decimals)
    ordered = rounded.sort(dim=1).values
    changes = (ordered[:, 1:] != ordered[:, :-1]).sum(dim=1)  # -0.0 == 0.0, so signed zeros count once
    return (changes + 1).double().mean().item()


def conflict_diagnostics(
    rewards: torch.Tensor,
    weights: torch.Tensor,
    num_generations: int,
    *,
    threshold: float = 0.2,
    completion_mask: torch.Tensor | None = None,
    keep: torch.Tensor | None = None,
) -> dict[str, float]:
    """Per-step conflict metrics of a batch, whatever rule trains (GDPO, GRPO or GD2PO).

    A rollout is in conflict when its weighted per-reward group advantages (GDPO's terms, the same under every
    rule) pull in opposite directions (:func:`gdpo_trl.core.gd2po.gd2po_conflicts`).

    - ``conflict/share``: the share of the batch's rollouts in conflict;
    - ``conflict/masked_share``: the share GD2PO's rule would mask at ``threshold`` (under GD2PO: masks);
    - with ``keep`` ``[N]`` (GD2PO's kept rows): ``conflict/kept_share`` (share of rollouts kept),
      ``conflict/group_keep_ratio`` (mean over groups of the share each keeps; equal to the kept share, since every
      group has ``num_generations`` rows, and logged under the reference's name) and
      ``conflict/group_keep_ratio_min`` (the group that kept least).
    """
    conflict, masked = gd2po_conflicts(
        rewards, weights, num_generations, threshold=threshold, completion_mask=completion_mask
    )
    metrics = {"conflict/share": conflict.float().mean().item(), "conflict/masked_share": masked.float().mean().item()}
    if keep is not None:
        ratio = group_keep_ratio(keep, num_generations)
        metrics["conflict/kept_share"] = keep.float().mean().item()
        metrics["conflict/group_keep_ratio"] = ratio.mean().item()
        metrics["conflict/group_keep_ratio_min"] = ratio.min().item()
    return metrics


def reward_diagnostics(
    rewards: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    names: list[str],
    num_generations: int,
    *,
    gdpo: bool,
    grpo_scale: str = "group",
    conflict_threshold: float = 0.2,
    completion_mask: torch.Tensor | None = None,
    keep: torch.Tensor | None = None,
    parts: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> dict[str, float]:
    """Every per-step metric ``GDPOTrainer`` logs on top of TRL's, by metric name.

    ``rewards`` ``[N, K]`` and ``advantages`` ``[N]`` are the gathered batch; ``gdpo`` says which rule made the
    advantages (it picks the per-reward terms the shares are taken of; GD2PO's are GDPO's); ``grpo_scale`` is the
    ``scale_rewards`` used for the GRPO comparison count. With two or more rewards, :func:`conflict_diagnostics` at
    ``conflict_threshold`` (with ``completion_mask`` and GD2PO's ``keep`` where GD2PO trains). ``parts`` (a rule's
    own ``(terms [N, K], weights [K])``: SAW's batch weights, ODRPO's threshold sums) replaces the terms and weights
    the advantage shares are taken of; SAW's weights are also logged, as ``rewards/<name>/rule_weight``.
    """
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device)
    if parts is not None:
        terms, share_weights = parts
    elif gdpo:
        terms, share_weights = gdpo_reward_terms(rewards, num_generations), weights
    else:
        terms, share_weights = center_per_group(rewards, num_generations), weights
    metrics = {}
    if parts is not None and not torch.equal(share_weights, weights):
        for name, weight in zip(names, share_weights.tolist(), strict=True):
            metrics[f"rewards/{name}/rule_weight"] = weight
    shares = advantage_shares(terms, share_weights).tolist()
    zero_std = frac_zero_std_per_reward(rewards, num_generations).tolist()
    applied = applied_fraction(rewards).tolist()
    for name, share, frac, rows in zip(names, shares, zero_std, applied, strict=True):
        metrics[f"rewards/{name}/frac_zero_std"] = frac
        metrics[f"rewards/{name}/advantage_share"] = share
        metrics[f"rewards/{name}/applied"] = rows
    metrics["frac_reward_zero_std"] = frac_groups_without_signal(rewards, weights, num_generations, gdpo=gdpo)
    grpo = grpo_advantages(rewards, weights, num_generations, scale=grpo_scale)
    metrics["advantages/distinct_per_group"] = mean_distinct_per_group(advantages, num_generations)
    metrics["advantages/distinct_per_group_grpo"] = mean_distinct_per_group(grpo, num_generations)
    if rewards.shape[1] > 1:
        metrics.update(
            conflict_diagnostics(
                rewards,
                weights,
                num_generations,
                threshold=conflict_threshold,
                completion_mask=completion_mask,
                keep=keep,
            )
        )
    return metrics
