"""Building the ``[N, K, T]`` reward tensor of process rewards, gathering it across processes, and its metrics.

Shapes follow ``gdpo_trl.core.advantages``: ``rewards`` ``[N, K, T]`` is NaN except at the token where a scored step ends
(outcome rewards: one value at each completion's last valid token); ``completion_mask`` ``[N, T]``; groups of
``num_generations`` (G) consecutive rows. Pure tensor functions except :func:`gather_token_rewards`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from gdpo_trl.core.advantages import gdpo_token_reward_terms
from gdpo_trl.core.diagnostics import advantage_shares, applied_fraction, mean_distinct_per_group
from gdpo_trl.rewards.process import Steps
from gdpo_trl.trainer.process_rewards import ProcessRewardSlot, step_token_indices
from gdpo_trl.trainer.token_offsets import token_char_ends


def step_rewards(
    steps: Sequence[Steps],
    token_ids: Sequence[Sequence[int]],
    width: int,
    decode: Callable[[list[int]], str],
    char_ends: Sequence[Sequence[int] | None] | None = None,
) -> torch.Tensor:
    """One process reward's steps on this process's completions -> ``[N, width]`` float, NaN where no step ends.

    ``steps[i]`` are completion i's ``(end, score)`` pairs (character offsets in ``decode(token_ids[i])``); each
    lands on the token that completes character ``end - 1``: the first ``j`` with ``char_ends[i][j] >= end``
    (:func:`gdpo_trl.token_offsets.token_char_ends`, computed from ``decode`` where ``char_ends`` or its entry is
    None). Steps of one reward ending in the same token are merged into one value, their mean: the tensor holds one
    value per token.
    """
    rows, columns, scores = [], [], []
    for i, (pairs, ids) in enumerate(zip(steps, token_ids, strict=True)):
        if not pairs:
            continue
        ends = char_ends[i] if char_ends is not None else None
        if ends is None:
            ends = token_char_ends(ids, decode=decode)
        columns += step_token_indices([end for end, _ in pairs], len(ids), ends)
        rows += [i] * len(pairs)
        scores += [score for _, score in pairs]
    total = torch.zeros(len(token_ids), width, dtype=torch.float64)
    count = torch.zeros_like(total)
    index = (torch.tensor(rows, dtype=torch.long), torch.tensor(columns, dtype=torch.long))
    total.index_put_(index, torch.tensor(scores, dtype=torch.float64), accumulate=True)
    count.index_put_(index, torch.ones(len(scores), dtype=torch.float64), accumulate=True)
    return torch.where(count > 0, total / count.clamp(min=1), torch.nan).float()


def local_step_rewards(
    slots: Sequence[ProcessRewardSlot], token_ids: Sequence[Sequence[int]], width: int, tokenizer
) -> tuple[torch.Tensor, torch.Tensor]:
    """This process's steps of every process reward, from their slots, on tokens: ``[N_local, K_p, width]``, and
    ``[K_p, 2]`` totals (number of steps, sum of their scores) as the reward functions returned them. Each
    completion's character ends (:func:`gdpo_trl.token_offsets.token_char_ends`) are computed once, for all slots."""

    def decode(ids):  # as TRL decodes completions for the reward functions
        return tokenizer.decode(ids, skip_special_tokens=True)

    tensors, totals = [], []
    char_ends: list[Sequence[int] | None] = [None] * len(token_ids)
    for slot in slots:
        steps, texts = slot.take()
        check_decoded_texts(texts, token_ids, decode, slot.__name__)
        for i, pairs in enumerate(steps):
            if pairs and char_ends[i] is None:
                char_ends[i] = token_char_ends(token_ids[i], tokenizer, text=texts[i], decode=decode)
        tensors.append(step_rewards(steps, token_ids, width, decode, char_ends))
        totals.append([sum(len(s) for s in steps), sum(score for s in steps for _, score in s)])
    return torch.stack(tensors, dim=1), torch.tensor(totals, dtype=torch.float32)


def check_decoded_texts(
    texts: Sequence[str], token_ids: Sequence[Sequence[int]], decode: Callable[[list[int]], str], name: str
) -> None:
    """Fail, naming the reward, when a completion's text is not what its token ids decode to: steps' character
    offsets could then not be mapped to tokens (e.g. a chat template's response parser split the text)."""
    for i, (text, ids) in enumerate(zip(texts, token_ids, strict=True)):
        decoded = decode(list(ids))
        if decoded != text:
            raise ValueError(
                f"Process reward '{name}': completion {i}'s text is not its decoded token ids ({text[:60]!r} vs "
                f"{decoded[:60]!r}), so step offsets cannot be mapped to tokens. Process rewards need completions "
                "decoded as plain text (no response parsing or tool calls)."
            )


def place_outcomes(outcomes: torch.Tensor, lengths: torch.Tensor, width: int) -> torch.Tensor:
    """Outcome rewards ``[N, K]`` -> ``[N, K, width]``: each value at its completion's last valid token
    (``lengths - 1``), NaN elsewhere. A completion of length 0 has no token to hold a value; its row stays NaN."""
    n, k = outcomes.shape
    placed = torch.full((n, k, width), float("nan"), dtype=outcomes.dtype, device=outcomes.device)
    has_tokens = lengths > 0
    rows = torch.arange(n, device=outcomes.device)[has_tokens]
    placed[rows, :, lengths[has_tokens] - 1] = outcomes[has_tokens]
    return placed


def length_mask(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """``[N, width]`` long: 1 on each completion's first ``lengths[i]`` tokens."""
    return (torch.arange(width, device=lengths.device) < lengths.unsqueeze(1)).long()


def assemble_token_rewards(
    outcomes: torch.Tensor, process: torch.Tensor, process_columns: Sequence[int], lengths: torch.Tensor
) -> torch.Tensor:
    """The full ``[N, K, T]`` tensor from the outcome matrix ``[N, K]`` (process columns ignored there) and the
    process rewards' steps ``[N, K_p, T]`` (in ``process_columns`` order)."""
    rewards = place_outcomes(outcomes, lengths, process.shape[2])
    rewards[:, list(process_columns)] = process.to(rewards.dtype)
    return rewards


def gather_token_rewards(accelerator, process: torch.Tensor, lengths: torch.Tensor):
    """This process's steps ``[N_local, K_p, T_local]`` and completion lengths ``[N_local]`` -> the gathered
    ``[N_global, K_p, T_max]`` and ``[N_global]``, in rank order like TRL's reward matrix. Completions are padded
    per process, so each process pads its tensor to the longest ``T_local`` (with NaN: no step) before gathering."""
    padded = accelerator.pad_across_processes(process, dim=2, pad_index=float("nan"))
    return accelerator.gather(padded), accelerator.gather(lengths)


def completion_means(advantages: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """``[N]``: each completion's mean advantage over its valid tokens (0 without any): the one number per
    completion the completions table and printed samples show in process mode."""
    mask = completion_mask.to(advantages.dtype)
    return (advantages * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)


def pooled_spread(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N / G, K]`` bool: whether each reward takes two different values among all of a group's steps."""
    n, k, t = rewards.shape
    pooled = rewards.reshape(-1, num_generations, k, t).transpose(1, 2).reshape(-1, k, num_generations * t)
    missing = torch.isnan(pooled)
    high = pooled.masked_fill(missing, float("-inf")).amax(dim=2)
    low = pooled.masked_fill(missing, float("inf")).amin(dim=2)
    return high > low


def token_reward_diagnostics(
    rewards: torch.Tensor,
    terms: torch.Tensor,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    weights: torch.Tensor,
    names: Sequence[str],
    process_columns: Sequence[int],
    step_totals: torch.Tensor,
    num_generations: int,
) -> dict[str, float]:
    """Process-mode metrics by name, from the gathered ``rewards`` ``[N, K, T]``, the per-reward token terms
    ``[N, K, T]`` (``gdpo_token_reward_terms``) and the advantages ``[N, T]``.

    Every reward: ``rewards/<name>/frac_zero_std`` (groups where its pooled values are constant),
    ``rewards/<name>/advantage_share`` (share of the absolute token advantage mass, before batch scaling) and
    ``rewards/<name>/applied`` (fraction of completions with at least one value). Process
    rewards also: ``rewards/<name>/step_mean`` (mean score over all steps) and ``rewards/<name>/steps_per_completion``,
    from ``step_totals`` ``[K_p, 2]`` (number of steps and sum of their scores over the batch, per process reward, as
    the reward functions returned them: before steps sharing a token are merged).
    ``frac_reward_zero_std``: groups where every weighted reward is constant. ``advantages/distinct_per_group``:
    distinct per-completion mean advantages per group.
    """
    weights = torch.as_tensor(weights, dtype=terms.dtype, device=terms.device)
    k = rewards.shape[1]
    shares = advantage_shares(terms.transpose(1, 2).reshape(-1, k), weights).tolist()
    spread = pooled_spread(rewards, num_generations)
    zero_std = (~spread).float().mean(dim=0).tolist()
    applied = applied_fraction(rewards).tolist()
    metrics = {}
    for column, (name, share, frac, rows) in enumerate(zip(names, shares, zero_std, applied, strict=True)):
        metrics[f"rewards/{name}/frac_zero_std"] = frac
        metrics[f"rewards/{name}/advantage_share"] = share
        metrics[f"rewards/{name}/applied"] = rows
        if column in process_columns:
            count, total = step_totals[list(process_columns).index(column)].tolist()
            metrics[f"rewards/{name}/step_mean"] = total / count if count else float("nan")
            metrics[f"rewards/{name}/steps_per_completion"] = count / rewards.shape[0]
    metrics["frac_reward_zero_std"] = (~spread[:, weights != 0].any(dim=1)).float().mean().item()
    means = completion_means(advantages, completion_mask)
    metrics["advantages/distinct_per_group"] = mean_distinct_per_group(means, num_generations)
    return metrics


class TokenAdvantages:
    """:class:`gdpo_trl.GDPOTrainer`'s process mode (token-level advantages), as a mixin: it uses the trainer's
    ``accelerator``, ``processing_class``, ``reward_weights``, ``reward_func_names``, ``compute_advantages`` and its
    ``_process_slots``, ``_replace_logged_advantages`` and ``_append_diagnostics``."""

    def _token_advantages(self, output: dict, outcomes: torch.Tensor, ids: list, num_generations: int, mode: str):
        """Process mode: set ``output["advantages"]`` to this process's ``[N_local, T_local]`` token advantages.

        Each process maps its own completions' steps to tokens; the ``[N_local, K_p, T_local]`` step tensors are
        padded to the longest ``T_local`` and gathered, so group and batch statistics are over every process's
        completions, as in a single process; each process then keeps its rows and its own ``T_local`` columns.
        """
        if "tool_mask" in output:
            raise ValueError("Process rewards cannot be used with tool or environment masks (rollout_func env_mask).")
        # TRL saw each process reward as its mean step score; the table shows each completion's mean advantage.
        width, device = output["completion_ids"].shape[1], outcomes.device
        columns, slots = zip(*self._process_slots, strict=True)
        local, totals = local_step_rewards(slots, ids, width, self.processing_class)
        lengths = torch.tensor([len(x) for x in ids], device=device)
        process, lengths = gather_token_rewards(self.accelerator, local.to(device), lengths)
        rewards = assemble_token_rewards(outcomes, process, columns, lengths)
        mask = length_mask(lengths, rewards.shape[2])
        advantages = self.compute_advantages(rewards, num_generations, completion_mask=mask)
        if advantages.shape != mask.shape or not torch.isfinite(advantages).all():
            raise ValueError(
                f"{type(self).__name__}.compute_advantages must return finite token advantages of shape "
                f"{tuple(mask.shape)} with process rewards; got shape {tuple(advantages.shape)}."
            )
        advantages = advantages * mask
        local_advantages = output["advantages"]
        start = self.accelerator.process_index * len(ids)
        output["advantages"] = advantages[start : start + len(ids), :width].to(local_advantages)
        self._replace_logged_advantages(completion_means(advantages, mask))
        if num_generations > 1:
            terms = gdpo_token_reward_terms(rewards, num_generations, mask)
            weights = self.reward_weights.to(device)
            totals = self.accelerator.reduce(totals.to(device), reduction="sum")
            computed = token_reward_diagnostics(
                rewards, terms, advantages, mask, weights, self.reward_func_names, columns, totals, num_generations
            )
            self._append_diagnostics(computed, mode)
