"""A reward that gives no signal is named (issue 40): one that scores every completion of each group alike.

Group-relative advantages (GRPO, GDPO, GD2PO) come from the differences within a group, so a reward with zero spread
in every group teaches nothing, whatever the cause: GSM8K rewards on the shop agent's rollouts scored 0 on every
completion of a whole run, and the run said nothing. :class:`ZeroSpread` follows each reward over the training
batches (gathered, so every process decides alike) and warns once when a reward had no spread in any group for
:data:`SILENT_BATCHES` batches in a row: at the start of a run, and again if a later stretch goes silent after the
reward had spread. ``rewards/<name>/frac_zero_std`` logs the same thing per step.
"""

from __future__ import annotations

import warnings

import torch

SILENT_BATCHES = 3  # batches in a row with no spread in any group before the warning


def silent_columns(rewards: torch.Tensor, num_generations: int) -> list[bool]:
    """Per reward column of ``rewards`` ``[N, K]``: no group has two different values (NaN ignored), and some group
    has a value (a reward that applies to no row is warned about as None/NaN elsewhere)."""
    groups = rewards.reshape(-1, num_generations, rewards.shape[1])
    valid = ~torch.isnan(groups)
    high = torch.where(valid, groups, -torch.inf).amax(dim=1)
    low = torch.where(valid, groups, torch.inf).amin(dim=1)
    spread = (valid.sum(dim=1) >= 2) & (high > low)  # [groups, K]
    return [bool(not spread[:, k].any() and valid[:, :, k].any()) for k in range(rewards.shape[1])]


class ZeroSpread:
    """Counts, per reward, the training batches in a row in which it had no spread; warns once per silent stretch."""

    def __init__(self, names: list[str]):
        self.names = list(names)
        self.streak = [0] * len(self.names)

    def check(self, rewards: torch.Tensor, num_generations: int, warn: bool) -> None:
        """After a training batch: ``rewards`` gathered ``[N, K]``; ``warn`` on the main process only."""
        if rewards.dim() != 2 or num_generations < 2 or rewards.shape[1] != len(self.names):
            return
        for k, silent in enumerate(silent_columns(rewards, num_generations)):
            self.streak[k] = self.streak[k] + 1 if silent else 0
            if self.streak[k] == SILENT_BATCHES and warn:
                values = rewards[:, k][~torch.isnan(rewards[:, k])].unique().tolist()
                shown = f" (every value {values[0]:g})" if len(values) == 1 else ""
                warnings.warn(
                    f"Reward '{self.names[k]}' scored every completion of each group alike for {SILENT_BATCHES} "
                    f"batches in a row{shown}: it gives no signal, so it trains nothing. Likely it cannot read these "
                    "completions (a GSM8K reward on tool-call or agent rollouts, a format the model never writes), or "
                    f"every completion already meets it; rewards/{self.names[k]}/frac_zero_std logs it per step. "
                    "Warned again only if it goes silent again after giving signal.",
                    UserWarning,
                    stacklevel=2,
                )
