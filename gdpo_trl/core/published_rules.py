"""GDPO's published follow-ups as pure tensor functions: MO-GRPO, SAW (``gdpo-h``, ``grpo-h``) and ODRPO; no TRL import.

Shapes and NaN handling are those of :mod:`gdpo_trl.core.advantages`: ``rewards`` ``[N, K]`` in groups of
``num_generations`` (G) consecutive rows, NaN meaning "this reward does not apply" (left out of every mean, std and
sum), ``weights`` ``[K]``; every rule returns ``[N]``, 0 on unscorable rows (every reward NaN). Each rule is restated
from its source's arithmetic (facts and formulas, no code copied) and generalized from the source's rewards to K
weighted ones where the source fixes fewer:

- **MO-GRPO** (Ichihara et al., "MO-GRPO: Mitigating Reward Hacking of Group Relative Policy Optimization on
  Multi-Objective Problems", arXiv 2509.22047): each reward normalized within its group by its own mean and std,
  then summed. No batch step, so it is GDPO's ablation without batch normalization (:func:`mo_grpo_advantages`).
- **SAW** (He, Bi et al., "SAW: Stage-Aware Dynamic Weighting for Multi-Objective Reinforcement Learning in Large
  Language Models", arXiv 2606.07705; reference code github.com/Zhaolutuan/SAW, ``verl/trainer/ppo/ray_trainer.py``,
  estimators ``gdpo-h`` and ``grpo-h``, two rewards hard-coded): weights from each reward's coefficient of variation
  over the batch, after an offset, held fixed (no gradient): :func:`saw_weights`. ``gdpo-h`` whitens the SAW-weighted
  sum of GDPO's per-reward group advantages (:func:`saw_gdpo_advantages`); ``grpo-h`` normalizes the SAW-weighted
  sum of the raw rewards within each group (:func:`saw_grpo_advantages`).
- **ODRPO** (Patel, Wang, Dhillon, "ODRPO: Ordinal Decompositions of Discrete Rewards for Robust Policy
  Optimization", arXiv 2605.12667): a discrete reward split into ordinal indicators ``1[r >= t]``, one group
  advantage per threshold, summed (:func:`odrpo_advantages`). The public material (the abstract; no code) fixes the
  decomposition and the sum; the per-threshold estimator used here is GRPO's group normalization, the estimator the
  paper starts from (it names GRPO and MaxRL as the estimators a noisy reward corrupts), and the thresholds are given
  per reward (default: every whole number, which for a reward on whole levels is every level above its lowest). Both
  are this project's reading, stated in ``docs/rules.md``.

Left out, because the public material leaves a step undefined (``docs/rules.md``): RDPO (arXiv 2605.13641; its
"magnitude-aware quantile normalization" and the covariance its Mahalanobis whitening uses are not defined in the
abstract, and no code is public) and DVAO (arXiv 2605.25604; secondary summaries disagree on whether a reward's
within-group variance raises or lowers its weight, and neither the paper's formula nor code was reachable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

from gdpo_trl.core.advantages import (
    gdpo_advantages,
    grpo_advantages,
    nanstd,
    normalize_per_group,
    unscorable,
    validate_rewards,
)

SAW_CV_EPS = 1e-8  # SAW's reference: CV = std / (|mean| + 1e-8), and 1e-8 added to the sum of the CVs
SAW_WHITEN_EPS = 1e-8  # the reference's masked_whiten (its verl version): (x - mean) * rsqrt(var + 1e-8)


# --- MO-GRPO -----------------------------------------------------------------------------------------------------


def mo_grpo_advantages(
    rewards: torch.Tensor, weights: torch.Tensor | Sequence[float], num_generations: int, *, eps: float = 1e-4
) -> torch.Tensor:
    """MO-GRPO advantages ``[N]``: ``sum_k w_k (r_k - group mean_k) / (group std_k + eps)``, no batch step.

    By definition the same computation as ``gdpo_advantages(..., batch_norm=False)`` (GDPO's ablation), which the
    tests check value for value; MO-GRPO gives it its own name and paper.
    """
    return gdpo_advantages(rewards, weights, num_generations, eps=eps, batch_norm=False)


# --- SAW: statistics-aware weighting -----------------------------------------------------------------------------


def saw_weights(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    *,
    offsets: torch.Tensor | Sequence[float] | None = None,
) -> torch.Tensor:
    """SAW's per-reward weights ``[K]`` from the batch: ``w_k = K' CV_k / (sum_j CV_j + 1e-8)``.

    ``CV_k = std_k / (|mean_k| + 1e-8)`` of reward k plus ``offsets[k]`` (default 0) over every row where it applies
    (Bessel-corrected std, as torch's and the reference's), NaN rows left out. The sum and the count ``K'`` run over
    the rewards with a non-zero weight in ``weights`` (the reference has two rewards, both weighted, so ``K' = 2``);
    a reward with weight 0, or with fewer than two values in the batch, gets ``w_k = 0``. A constant reward has
    ``CV = 0`` and so weight 0. The weights are computed without gradient and detached.
    """
    n, k = rewards.shape
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device).reshape(-1)
    shift = torch.zeros(k, dtype=rewards.dtype, device=rewards.device)
    if offsets is not None:
        shift = torch.as_tensor(offsets, dtype=rewards.dtype, device=rewards.device).reshape(-1)
        if shift.numel() != k:
            raise ValueError(f"Got {shift.numel()} SAW offsets for K={k} rewards: pass one offset per reward.")
    with torch.no_grad():
        shifted = rewards.detach() + shift
        mean = torch.nanmean(shifted, dim=0)
        std = nanstd(shifted, dim=0)
        cv = torch.nan_to_num(std / (mean.abs() + SAW_CV_EPS), nan=0.0)
        active = weights != 0
        cv = torch.where(active, cv, torch.zeros_like(cv))
        count = active.sum().to(rewards.dtype)
        return (count * cv / (cv.sum() + SAW_CV_EPS)).detach()


def whiten(values: torch.Tensor, counted: torch.Tensor, completion_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``(v - mean) * rsqrt(var + 1e-8)`` over the ``counted`` rows of ``values`` ``[N]`` (Bessel-corrected var).

    With ``completion_mask`` ``[N, T]`` each row counts once per completion token, as verl's ``masked_whiten`` over
    the response mask in SAW's reference (the advantage is the same on every token of a row); else once. Rows not
    counted get 0, and so does every row when fewer than two units (rows or tokens) are counted.
    """
    units = counted.to(values.dtype)
    if completion_mask is not None:
        if completion_mask.dim() != 2 or completion_mask.shape[0] != values.shape[0]:
            raise ValueError(
                f"completion_mask must have shape (N={values.shape[0]}, T), got {tuple(completion_mask.shape)}."
            )
        units = units * completion_mask.to(device=values.device, dtype=values.dtype).sum(dim=1)
    total = units.sum()
    if total <= 1:
        return torch.zeros_like(values)
    safe = torch.where(counted, values, torch.zeros_like(values))
    mean = (safe * units).sum() / total
    variance = ((safe - mean) ** 2 * units).sum() / total * (total / (total - 1))
    whitened = (safe - mean) * torch.rsqrt(variance + SAW_WHITEN_EPS)
    return torch.where(counted & (units > 0), whitened, torch.zeros_like(whitened))


def saw_gdpo_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    offsets: torch.Tensor | Sequence[float] | None = None,
    completion_mask: torch.Tensor | None = None,
    eps: float = 1e-4,
) -> torch.Tensor:
    """SAW's ``gdpo-h`` advantages ``[N]``.

    1. ``A_k``: each reward normalized within its group, ``(r_k - mean) / (std + eps)`` (GDPO's terms; NaN where
       reward k does not apply);
    2. ``s = sum_k w_k * saw_k * A_k`` with the user's ``weights`` and :func:`saw_weights` (``offsets``);
    3. :func:`whiten` over the scorable rows (per token with ``completion_mask``, as the reference).

    ``eps`` is the project's (TRL's) 1e-4; the reference's group normalization uses 1e-6.
    """
    weights = validate_rewards(rewards, weights, num_generations)
    combined = weights * saw_weights(rewards, weights, offsets=offsets)
    summed = (normalize_per_group(rewards, num_generations, eps=eps) * combined).nansum(dim=1)
    return whiten(summed, ~unscorable(rewards), completion_mask)


def saw_grpo_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    offsets: torch.Tensor | Sequence[float] | None = None,
    eps: float = 1e-4,
) -> torch.Tensor:
    """SAW's ``grpo-h`` advantages ``[N]``: GRPO's group normalization of ``sum_k w_k * saw_k * r_k``.

    The weights come from the offset rewards (:func:`saw_weights`); the sum is of the raw rewards, as in the
    reference (an offset would cancel in the group normalization anyway). Unscorable rows get 0.
    """
    weights = validate_rewards(rewards, weights, num_generations)
    combined = weights * saw_weights(rewards, weights, offsets=offsets)
    return grpo_advantages(rewards, combined, num_generations, scale="group", eps=eps)


# --- ODRPO: ordinal decomposition --------------------------------------------------------------------------------


def threshold_table(rewards: torch.Tensor, thresholds: Sequence[Sequence[float] | None] | None = None) -> torch.Tensor:
    """``[K, L]`` thresholds, one row per reward of ``rewards`` ``[N, K]``, padded with NaN (a NaN threshold adds 0).

    ``thresholds[k]`` lists reward k's; None (for that reward, or ``thresholds`` itself) means every whole number
    ``t`` with ``min(r_k) < t <= max(r_k)`` over the batch. That is the same as every whole number at all: a threshold
    outside a group's values gives an indicator constant in the group, which adds 0. So for rewards on whole levels
    (0/1, -3..3, a 1-10 rubric) it is ODRPO's full decomposition; a reward on fractional levels needs its own list.
    """
    n, k = rewards.shape
    if thresholds is None:
        thresholds = [None] * k
    if len(thresholds) != k:
        raise ValueError(f"Got ODRPO thresholds for {len(thresholds)} rewards, K={k}: pass one list (or None) each.")
    present = ~torch.isnan(rewards)
    low = torch.floor(rewards.masked_fill(~present, float("inf")).amin(dim=0))  # [K]; inf where never present
    high = torch.floor(rewards.masked_fill(~present, float("-inf")).amax(dim=0))
    counts = torch.where(present.any(dim=0), (high - low).clamp(min=0), torch.zeros_like(low))
    counts = torch.tensor(
        [len(row) if row is not None else int(count) for row, count in zip(thresholds, counts.tolist(), strict=True)]
    )
    width = max(int(counts.max().item()) if k else 0, 1)
    steps = torch.arange(1, width + 1, dtype=rewards.dtype, device=rewards.device)
    table = torch.where(present.any(dim=0), low, torch.zeros_like(low)).unsqueeze(1) + steps  # [K, L]: low + 1, ...
    table = table.masked_fill(steps.unsqueeze(0) > counts.to(table.device).unsqueeze(1), float("nan"))
    for index, row in enumerate(thresholds):  # K short lists of settings, not data: at most one small copy each
        if row is not None:
            table[index] = float("nan")
            if len(row):
                table[index, : len(row)] = torch.as_tensor(list(row), dtype=rewards.dtype, device=rewards.device)
    return table


def odrpo_reward_terms(
    rewards: torch.Tensor,
    num_generations: int,
    thresholds: Sequence[Sequence[float] | None] | None = None,
    *,
    eps: float = 1e-4,
) -> torch.Tensor:
    """ODRPO's per-reward parts ``[N, K]``: ``sum_t (b_t - group mean(b_t)) / (group std(b_t) + eps)`` with
    ``b_t = 1[r_k >= t]`` for each threshold t of reward k (:func:`threshold_table`).

    An indicator that is constant in a group adds 0 there; NaN where reward k does not apply, or where the group
    has fewer than two of its values.
    """
    n, k = rewards.shape
    table = threshold_table(rewards, thresholds)  # [K, L]
    missing = torch.isnan(rewards).unsqueeze(2)  # [N, K, 1]
    indicators = (rewards.unsqueeze(2) >= table.unsqueeze(0)).to(rewards.dtype)  # [N, K, L]; NaN threshold -> 0
    indicators = indicators.masked_fill(missing, float("nan"))
    levels = table.shape[1]
    normalized = normalize_per_group(indicators.reshape(n, k * levels), num_generations, eps=eps)
    normalized = normalized.reshape(n, k, levels)
    summed = torch.nan_to_num(normalized, nan=0.0).sum(dim=2)
    no_std = torch.isnan(normalized).all(dim=2)
    return summed.masked_fill(no_std, float("nan"))


def odrpo_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    thresholds: Sequence[Sequence[float] | None] | None = None,
    eps: float = 1e-4,
) -> torch.Tensor:
    """ODRPO advantages ``[N]``: ``sum_k w_k * odrpo_reward_terms[:, k]`` (NaN parts skipped), no batch step.

    With a single threshold per reward on 0/1 rewards this is MO-GRPO (each indicator is the reward itself).
    """
    weights = validate_rewards(rewards, weights, num_generations)
    terms = odrpo_reward_terms(rewards, num_generations, thresholds, eps=eps)
    summed = (terms * weights).nansum(dim=1).masked_fill(unscorable(rewards), float("nan"))
    return torch.nan_to_num(summed, nan=0.0)


# --- Rule options from the rewards' declared ranges --------------------------------------------------------------


def declared_range(func: Callable) -> tuple[float, float] | None:
    """The ``(lowest, highest)`` value a reward function declares in its ``reward_range`` attribute, looked up
    through wrappers that keep the wrapped callable in ``.func`` (``functools.partial``, the trainer's checked
    rewards); None where it declares none."""
    seen = 0
    while func is not None and seen < 10:
        declared = getattr(func, "reward_range", None)
        if declared is not None:
            low, high = declared
            return float(low), float(high)
        func, seen = getattr(func, "func", None), seen + 1
    return None


def saw_offsets_for(
    names: Sequence[str], ranges: Sequence[tuple[float, float] | None], given: Mapping[str, float] | None
) -> list[float]:
    """SAW's offset per reward: ``given[name]`` where set, else minus the reward's declared minimum (so the offset
    reward starts at 0, as the reference's ``+3.0`` on a -3..3 correctness and ``0`` on a 0/1 format), else 0."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"saw_offsets names {unknown}, which are not among the run's rewards {list(names)}.")
    return [
        float(given[n]) if n in given else (-r[0] if r is not None else 0.0)
        for n, r in zip(names, ranges, strict=True)
    ]


def odrpo_thresholds_for(
    names: Sequence[str], given: Mapping[str, Sequence[float]] | None
) -> list[list[float] | None] | None:
    """ODRPO's thresholds per reward, in the order of ``names``: ``given[name]`` where set, else None (every whole
    level, :func:`threshold_table`); None when nothing is given. A name that is not a reward raises ``ValueError``."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"odrpo_thresholds names {unknown}, which are not among the run's rewards {list(names)}.")
    if not given:
        return None
    return [[float(t) for t in given[name]] if name in given else None for name in names]
