"""Advantage math for GDPO and GRPO: pure tensor functions, no TRL import (GD2PO's masking: :mod:`gdpo_trl.core.gd2po`).

Shapes and conventions shared by every function here:

- ``rewards`` is a float tensor ``[N, K]``: N completions, K reward functions. Rows come in groups of
  ``num_generations`` (G) consecutive completions of the same prompt, so N must be a multiple of G.
- NaN means "this reward does not apply to this completion" (TRL turns a reward function's ``None`` into NaN).
  NaN terms are left out of every mean, std and sum. A row where every reward is NaN is *unscorable*: its
  advantage is 0 and it is left out of the batch statistics.
- ``weights`` is ``[K]`` (a tensor or a sequence of floats).
- Standard deviations are Bessel-corrected (unbiased), as in TRL; a std over fewer than two values is NaN, which
  makes the term it divides drop out of the weighted sum.
- ``eps`` is added to every std before dividing (TRL uses 1e-4), so a reward that is constant in a group gives 0.

Everything is vectorized over rewards and groups: the functions are a handful of tensor ops whatever N and K are.
Token-level (process reward) versions at the end take ``rewards`` ``[N, K, T]`` and return ``[N, T]``; see
:func:`gdpo_token_advantages`.
These semantics equal TRL 1.16's ``multi_objective_aggregation`` branches ``"normalize_then_sum"`` (GDPO) and
``"sum_then_normalize"`` (GRPO); ``tests/core/test_advantages.py`` checks that against TRL's own code path.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

SCALES = ("group", "batch", "none")


def nanstd(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """Bessel-corrected standard deviation ignoring NaNs; NaN where fewer than two values are present."""
    if dim is None:
        x, dim = x.reshape(-1), 0
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    variance = torch.nanmean((x - mean) ** 2, dim=dim, keepdim=True)
    count = (~torch.isnan(x)).sum(dim=dim, keepdim=True)
    # count / (count - 1) in the input's dtype; count <= 1 has no sample std.
    correction = torch.where(count > 1, count / (count - 1).clamp(min=1), torch.full_like(variance, float("nan")))
    std = torch.sqrt(variance * correction)
    return std if keepdim else std.squeeze(dim)


def validate_rewards(
    rewards: torch.Tensor, weights: torch.Tensor | Sequence[float], num_generations: int
) -> torch.Tensor:
    """Check shapes and return ``weights`` as a ``[K]`` tensor on ``rewards``' device and dtype.

    Raises ``ValueError`` naming what is wrong: non-2-D or non-float rewards, ``num_generations < 2``, N not a
    multiple of ``num_generations``, or a weight count different from K.
    """
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 2:
        shape = tuple(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"rewards must be a 2-D tensor [N completions, K rewards], got {shape}.")
    if not rewards.is_floating_point():
        raise ValueError(f"rewards must be a floating-point tensor (NaN marks a missing reward), got {rewards.dtype}.")
    if num_generations < 2:
        raise ValueError(f"num_generations must be at least 2 to normalize within a group, got {num_generations}.")
    n, k = rewards.shape
    if n % num_generations != 0:
        raise ValueError(
            f"The number of completions N={n} is not a multiple of num_generations={num_generations}: "
            "every prompt's group must be complete."
        )
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device).reshape(-1)
    if weights.numel() != k:
        raise ValueError(f"Got {weights.numel()} weights for K={k} rewards: pass one weight per reward function.")
    return weights


def unscorable(rewards: torch.Tensor) -> torch.Tensor:
    """``[N]`` bool: rows where every reward is NaN."""
    return torch.isnan(rewards).all(dim=1)


def in_groups(x: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N, ...]`` -> ``[N / G, G, ...]``."""
    return x.reshape(-1, num_generations, *x.shape[1:])


def normalize_per_group(values: torch.Tensor, num_generations: int, *, eps: float = 1e-4) -> torch.Tensor:
    """``(v - group mean) / (group std + eps)`` for each column of ``values`` ``[N, K]`` -> ``[N, K]``.

    NaN stays NaN, and a column with fewer than two values in a group becomes NaN for that group (no std).
    """
    grouped = in_groups(values, num_generations)
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    std = nanstd(grouped, dim=1, keepdim=True)
    return ((grouped - mean) / (std + eps)).reshape(values.shape)


def center_per_group(values: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``v - group mean`` for each column of ``values`` ``[N, K]`` -> ``[N, K]`` (NaN stays NaN)."""
    grouped = in_groups(values, num_generations)
    return (grouped - torch.nanmean(grouped, dim=1, keepdim=True)).reshape(values.shape)


def _batch_normalize(x: torch.Tensor, eps: float) -> torch.Tensor:
    """``(x - nanmean(x)) / (nanstd(x) + eps)`` over the whole batch ``[N]``."""
    std = nanstd(x) if x.numel() > 1 else torch.zeros((), dtype=x.dtype, device=x.device)
    return (x - torch.nanmean(x)) / (std + eps)


def gdpo_reward_terms(rewards: torch.Tensor, num_generations: int, *, eps: float = 1e-4) -> torch.Tensor:
    """GDPO's per-reward advantages ``[N, K]``: each reward normalized within its group, NaN where it does not apply.

    This is the per-reward view TRL does not expose: ``gdpo_advantages`` is the (batch-normalized) weighted sum of
    these columns.
    """
    return normalize_per_group(rewards, num_generations, eps=eps)


def gdpo_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    eps: float = 1e-4,
    batch_norm: bool = True,
) -> torch.Tensor:
    """GDPO advantages ``[N]`` from rewards ``[N, K]``.

    1. each reward is normalized within its group: ``(r_k - mean_k) / (std_k + eps)``;
    2. the per-reward terms are summed with ``weights`` (NaN terms contribute nothing);
    3. with ``batch_norm=True`` the sum is normalized over the whole batch: ``(s - mean) / (std + eps)``.
       ``batch_norm=False`` returns the weighted sum (the paper's ablation without the final normalization).

    Unscorable rows (every reward NaN) get 0 and are left out of the batch statistics.
    """
    weights = validate_rewards(rewards, weights, num_generations)
    terms = gdpo_reward_terms(rewards, num_generations, eps=eps)
    summed = (terms * weights).nansum(dim=1)
    summed = summed.masked_fill(unscorable(rewards), float("nan"))
    if batch_norm:
        summed = _batch_normalize(summed, eps)
    return torch.nan_to_num(summed, nan=0.0)


def grpo_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    *,
    scale: str = "group",
    eps: float = 1e-4,
) -> torch.Tensor:
    """GRPO advantages ``[N]`` from rewards ``[N, K]``: weighted sum first, then normalization.

    ``s = sum_k w_k r_k`` (NaN terms skipped), advantage ``s - group mean(s)``, divided by ``std + eps`` where
    ``scale`` picks the std: ``"group"`` (within each group), ``"batch"`` (over the whole batch, as in TRL's
    ``scale_rewards="batch"``) or ``"none"`` (no division, Dr. GRPO). Unscorable rows get 0.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}.")
    weights = validate_rewards(rewards, weights, num_generations)
    summed = (rewards * weights).nansum(dim=1).masked_fill(unscorable(rewards), float("nan"))
    advantages = center_per_group(summed.unsqueeze(1), num_generations).squeeze(1)
    if scale == "group":
        std = nanstd(in_groups(summed, num_generations), dim=1, keepdim=True).expand(-1, num_generations).reshape(-1)
        advantages = advantages / (std + eps)
    elif scale == "batch":
        advantages = advantages / (nanstd(summed) + eps)
    return torch.nan_to_num(advantages, nan=0.0)


# --- Token-level (process) advantages ----------------------------------------------------------------------------
# Shapes: ``rewards`` ``[N, K, T]`` holds NaN everywhere except at the token where a scored step of reward k ends (an
# outcome reward is one value at the completion's last valid token); ``completion_mask`` ``[N, T]`` is 1 on real
# completion tokens. Groups are ``num_generations`` consecutive rows, as above.


def validate_token_rewards(
    rewards: torch.Tensor, weights: torch.Tensor | Sequence[float], num_generations: int, completion_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check shapes; return ``weights`` ``[K]`` and the mask as bool ``[N, T]`` on ``rewards``' device.

    Raises ``ValueError`` for a non-3-D or non-float ``rewards``, a mask of another shape, a value at a padding
    position (it would leak into the tokens before it), or anything :func:`validate_rewards` rejects.
    """
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 3:
        shape = tuple(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"rewards must be a 3-D tensor [N completions, K rewards, T tokens], got {shape}.")
    n, k, t = rewards.shape
    weights = validate_rewards(rewards.new_empty(n, k), weights, num_generations)
    if not rewards.is_floating_point():
        raise ValueError(
            f"rewards must be a floating-point tensor (NaN marks 'no step ends here'), got {rewards.dtype}."
        )
    if tuple(completion_mask.shape) != (n, t):
        raise ValueError(f"completion_mask must have shape (N, T) = {(n, t)}, got {tuple(completion_mask.shape)}.")
    mask = completion_mask.to(device=rewards.device).bool()
    if (~torch.isnan(rewards) & ~mask.unsqueeze(1)).any():
        raise ValueError(
            "rewards has a value at a padding position (completion_mask == 0): steps must end on real tokens."
        )
    return weights, mask


def gdpo_token_reward_terms(
    rewards: torch.Tensor, num_generations: int, completion_mask: torch.Tensor, *, eps: float = 1e-4
) -> torch.Tensor:
    """Per-reward token advantages ``[N, K, T]`` before weighting: the process-supervision rule of DeepSeekMath.

    For each reward and group, every non-NaN value of the group's completions is pooled and normalized by the
    pool's mean and Bessel-corrected std (+ ``eps``); a pool of fewer than two values gives 0. Token t of completion
    i then gets the sum of i's normalized values at positions ``>= t`` (a reverse cumulative sum). Padding is 0.
    """
    n, k, t = rewards.shape
    groups = n // num_generations
    # [N, K, T] -> [groups, K, G * T]: one pool per (group, reward).
    pooled = rewards.reshape(groups, num_generations, k, t).transpose(1, 2).reshape(groups, k, num_generations * t)
    mean = torch.nanmean(pooled, dim=2, keepdim=True)
    std = nanstd(pooled, dim=2, keepdim=True)  # NaN for pools of fewer than two values, so they give 0 below
    normalized = torch.nan_to_num((pooled - mean) / (std + eps), nan=0.0)
    normalized = normalized.reshape(groups, k, num_generations, t).transpose(1, 2).reshape(n, k, t)
    returns = normalized.flip(-1).cumsum(-1).flip(-1)
    return returns * completion_mask.to(returns.dtype).unsqueeze(1)


def gdpo_token_advantages(
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    completion_mask: torch.Tensor,
    *,
    eps: float = 1e-4,
    batch_norm: bool = True,
) -> torch.Tensor:
    """GDPO advantages per token ``[N, T]`` from step and outcome rewards ``[N, K, T]``.

    1. :func:`gdpo_token_reward_terms`: each reward's values pooled and normalized per group, summed from each token
       to the end of the completion;
    2. weighted sum over rewards with ``weights`` ``[K]``;
    3. ``batch_norm=True``: ``(x - mean) / (std + eps)`` over every valid token of the batch (Bessel-corrected), as
       verl's masked whitening; ``False``: no batch step.

    Padding positions (``completion_mask == 0``) are 0. With outcome rewards only (one value at each completion's
    last valid token) and ``batch_norm=False``, every valid token of completion i carries
    ``gdpo_advantages(outcomes, weights, num_generations, batch_norm=False)[i]``.
    """
    weights, mask = validate_token_rewards(rewards, weights, num_generations, completion_mask)
    terms = gdpo_token_reward_terms(rewards, num_generations, mask, eps=eps)
    summed = torch.einsum("nkt,k->nt", terms, weights)
    if batch_norm and mask.any():
        valid = summed[mask]
        std = nanstd(valid) if valid.numel() > 1 else torch.zeros((), dtype=summed.dtype, device=summed.device)
        summed = (summed - valid.mean()) / (std + eps)
    return summed * mask.to(summed.dtype)
