"""What ``GDPOTrainer`` needs for GD2PO (``multi_objective_aggregation: gd2po``) beyond the pure function
:func:`gdpo_trl.core.gd2po.gd2po_advantages`: the token counts of every process's completions.

GD2PO's reference whitens over the kept *tokens*, so the rule needs each gathered completion's number of trained
tokens. TRL computes advantages from the gathered ``[N_global, K]`` rewards and each process keeps its slice; each
process gathers the lengths too, so every process computes the same keep mask and advantages on the same numbers and
its slice is consistent with the others'.
"""

from __future__ import annotations

import torch

from gdpo_trl.trainer.token_rewards import length_mask


def gathered_completion_mask(accelerator, output: dict) -> torch.Tensor:
    """``[N_global, T]`` long: 1 on the first ``L_i`` positions of each gathered completion, ``L_i`` its number of
    trained tokens (TRL's ``completion_mask``, times ``tool_mask`` where tools inserted results the model did not
    write, as TRL's loss counts them). Only the counts matter to GD2PO: a row's advantage is the same on every token.
    """
    mask = output["completion_mask"]
    if output.get("tool_mask") is not None:
        mask = mask * output["tool_mask"]
    lengths = accelerator.gather(mask.sum(dim=1))
    return length_mask(lengths, int(lengths.max().item()) if lengths.numel() else 0)
