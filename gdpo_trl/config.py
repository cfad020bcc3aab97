"""``GDPOConfig``: TRL's ``GRPOConfig`` with GDPO as the default and its settings checked at construction."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from trl import GRPOConfig

AGGREGATIONS = ("normalize_then_sum", "sum_then_normalize")
SCALES = ("group", "batch", "none")


@dataclass
class GDPOConfig(GRPOConfig):
    r"""
    Configuration for [`GDPOTrainer`]: every [`trl.GRPOConfig`] field, plus the fields below.

    Differences from `GRPOConfig`:

        multi_objective_aggregation (`str`, *optional*, defaults to `"normalize_then_sum"`):
            How several rewards become one advantage. `"normalize_then_sum"` is GDPO: each reward is normalized
            within its group, the weighted sum is then normalized over the batch. `"sum_then_normalize"` is GRPO:
            rewards are summed, then normalized within the group as `scale_rewards` says. Checked at construction
            (TRL only fails at the first generation step). With a single reward function the trainer always uses
            GRPO, as the paper's reference code does.
        scale_rewards (`str`, *optional*, defaults to `"group"`):
            As in TRL: `"group"`, `"batch"` or `"none"`. Used by GRPO and by the single-reward fallback; under GDPO
            each reward is divided by its own group std by definition, so another value warns that it has no
            effect there.

    Parameters that control GDPO:

        gdpo_batch_norm (`bool`, *optional*, defaults to `True`):
            Normalize the weighted sum of per-reward advantages over the whole batch (GDPO's last step). `False`
            gives the paper's ablation "GDPO without batch normalization".
    """

    multi_objective_aggregation: str = field(
        default="normalize_then_sum",
        metadata={
            "help": "How several rewards become one advantage: 'normalize_then_sum' (GDPO, default: normalize each "
            "reward within its group, sum with reward_weights, normalize the sum over the batch) or "
            "'sum_then_normalize' (GRPO: sum the weighted rewards, then normalize as scale_rewards says). With one "
            "reward function GRPO is used either way.",
            "choices": list(AGGREGATIONS),
        },
    )
    gdpo_batch_norm: bool = field(
        default=True,
        metadata={
            "help": "GDPO only: normalize the weighted sum of per-reward advantages over the whole batch. False is "
            "the paper's ablation without this step."
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if self.multi_objective_aggregation not in AGGREGATIONS:
            raise ValueError(
                f"multi_objective_aggregation={self.multi_objective_aggregation!r} is not supported: use "
                "'normalize_then_sum' (GDPO) or 'sum_then_normalize' (GRPO)."
            )
        if self.scale_rewards not in SCALES:
            raise ValueError(f"scale_rewards={self.scale_rewards!r} is not supported: use one of {list(SCALES)}.")
        if self.multi_objective_aggregation == "normalize_then_sum" and self.scale_rewards != "group":
            warnings.warn(
                f"scale_rewards={self.scale_rewards!r} has no effect under GDPO (multi_objective_aggregation="
                "'normalize_then_sum') with two or more reward functions: each reward is divided by its own group "
                "std by definition. It is only used when a single reward function falls back to GRPO. For GRPO "
                "without std, set multi_objective_aggregation='sum_then_normalize' and scale_rewards='none'.",
                UserWarning,
                stacklevel=3,
            )
