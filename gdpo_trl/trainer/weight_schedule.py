"""Reward weights that move over training (``GDPOConfig.reward_weights_final``)."""

from __future__ import annotations

import torch


def scheduled_weights(start: torch.Tensor, final: torch.Tensor, step: int, max_steps: int) -> torch.Tensor:
    """Weights at optimizer step ``step`` (0-based) of ``max_steps``: ``start`` at the first, ``final`` at the last."""
    progress = min(max(step / max(max_steps - 1, 1), 0.0), 1.0)
    return start + (final - start) * progress
