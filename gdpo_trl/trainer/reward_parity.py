"""Multi-process parity for a reward that says nothing (issue 31): warned once, as with one process.

``CheckedReward`` (:mod:`gdpo_trl.trainer.reward_checks`) warned when one call returned None/NaN for every
completion it was given. Under N processes each process calls it with its own share of the batch, and only the main
process's warnings reach the console, so a reward that said nothing on rank 1 alone went unreported (issue 31: one
process warns, two do not). TRL 1.16's ``GRPOTrainer._calculate_rewards(inputs, prompts, completions,
completion_ids_list)`` returns the rewards **gathered across processes** (``[N_global, K]``, rank order, each
process's ``len(prompts)`` rows contiguous, None as NaN), so the check moves there: every process sees every
process's rows, and the main process warns once per reward, naming the process whose rows were all None/NaN. With
one process the rows are the same ones the call returned, so the warning is the same.
"""

from __future__ import annotations

import warnings

import torch

from gdpo_trl.trainer.reward_checks import CheckedReward


def silent_slices(rewards: torch.Tensor, per_process: int) -> dict[int, list[int]]:
    """``{reward column: [process indices whose rows are all NaN]}`` for the gathered ``rewards``."""
    found: dict[int, list[int]] = {}
    if per_process <= 0:
        return found
    empty = torch.isnan(rewards).reshape(-1, per_process, rewards.shape[1]).all(dim=1)  # [processes, K]
    for process, column in empty.nonzero().tolist():
        found.setdefault(column, []).append(process)
    return found


class GatheredRewardWarnings:
    """Mixin for ``GRPOTrainer`` (listed before it): the None/NaN-batch warning from the gathered rewards."""

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        checked = {k: f for k, f in enumerate(self.reward_funcs) if isinstance(f, CheckedReward)}
        for func in checked.values():
            func.local_warning = False  # warned here instead, once for every process
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        processes = self.accelerator.num_processes
        for column, ranks in silent_slices(rewards, len(prompts)).items():
            func = checked.get(column)
            if func is None or func.warned_empty:
                continue
            func.warned_empty = True  # on every process, so that none warns later
            if self.accelerator.is_main_process:
                where = "" if processes == 1 else f" on process {ranks[0]} of {processes}"
                warnings.warn(
                    f"Reward function '{func.__name__}' returned None/NaN for all {len(prompts)} completions of a "
                    f"batch{where}: it adds nothing to that batch's advantages, and training goes on. Expected where a "
                    f"reward scores one task of several (`rewards/{func.__name__}/applied` logs the share of rows it "
                    "applied to); otherwise check its inputs (dataset columns, completion format). Warned once per "
                    "reward.",
                    UserWarning,
                    stacklevel=2,
                )
        return rewards
