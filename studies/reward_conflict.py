"""Where GDPO and GRPO can differ, measured on sampled groups before a study: the pilot's figures.

GDPO and GRPO train alike when the rewards move together: both then rank a group's completions the same way. They can
only differ where rewards pull apart inside a group. So before spending machine days on a study, a pilot samples
groups of completions from the starting model at the study's settings and measures, for a candidate set of rewards:

- each reward's mean and the share of groups in which it is constant (zero spread: no signal under either rule);
- the Pearson correlation between every pair of rewards across completions (1 = one event seen twice);
- the conflict share: completions whose weighted per-reward group advantages pull in opposite directions
  (:func:`gdpo_trl.core.diagnostics.conflict_diagnostics`, what training logs as ``conflict/share``);
- how often GDPO's and GRPO's advantages order two completions of one group differently: ``discordant_pairs`` (one
  rule puts i above j, the other j above i), ``collapsed_pairs`` (GRPO ties a pair that GDPO tells apart: different
  reward combinations with one sum), and ``groups_ranked_differently`` (groups with at least one such pair);
- how differently they weigh the rewards even where they rank alike: each reward's share of the advantage's absolute
  mass under each rule (``advantage_share``: GDPO normalizes a rare reward by its small group spread, so a rare
  correct answer weighs more than under GRPO's sum) and the correlation of the two rules' advantages
  (``advantage_correlation``, over completions in groups where some reward has spread).

Everything is computed from a rewards matrix ``[N, K]`` in groups of ``num_generations`` rows, as the trainer sees it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gdpo_trl.core.advantages import center_per_group, gdpo_advantages, gdpo_reward_terms, grpo_advantages, in_groups
from gdpo_trl.core.diagnostics import (
    advantage_shares,
    conflict_diagnostics,
    frac_zero_std_per_reward,
    group_has_spread,
)

TIE = 1e-6  # advantages closer than this are one value (GDPO's batch normalization leaves float noise)


def pairwise_orders(advantages: torch.Tensor, num_generations: int) -> torch.Tensor:
    """``[N / G, G, G]`` in {-1, 0, 1}: the sign of ``a_i - a_j`` for every pair of completions in each group, with
    differences under :data:`TIE` as 0."""
    grouped = in_groups(advantages, num_generations)
    difference = grouped.unsqueeze(2) - grouped.unsqueeze(1)
    return torch.where(difference.abs() < TIE, torch.zeros_like(difference), difference.sign())


def rank_disagreement(rewards: torch.Tensor, weights: Sequence[float], num_generations: int) -> dict[str, float]:
    """How GDPO's and GRPO's (``scale_rewards="group"``) advantages order each group's completions differently.

    Shares are over the ``G (G - 1) / 2`` unordered pairs of every group, and over groups.
    """
    gdpo = pairwise_orders(gdpo_advantages(rewards, weights, num_generations), num_generations)
    grpo = pairwise_orders(grpo_advantages(rewards, weights, num_generations), num_generations)
    upper = torch.triu(torch.ones(num_generations, num_generations, dtype=torch.bool), diagonal=1)
    discordant = (gdpo * grpo < 0) & upper
    collapsed = (grpo == 0) & (gdpo != 0) & upper
    pairs = upper.sum() * gdpo.shape[0]
    differs = (discordant | collapsed | ((gdpo == 0) & (grpo != 0) & upper)).flatten(1).any(dim=1)
    return {
        "discordant_pairs": (discordant.sum() / pairs).item(),
        "collapsed_pairs": (collapsed.sum() / pairs).item(),
        "groups_ranked_differently": differs.float().mean().item(),
    }


def correlations(rewards: torch.Tensor, names: Sequence[str]) -> dict[str, float | None]:
    """Pearson correlation across completions for every pair of rewards, keyed ``"a~b"``; None where one of them is
    constant over the whole sample (no correlation is defined)."""
    result: dict[str, float | None] = {}
    centered = rewards - rewards.mean(dim=0)
    norms = centered.norm(dim=0)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            defined = norms[i] > 0 and norms[j] > 0
            value = (centered[:, i] @ centered[:, j] / (norms[i] * norms[j])).item() if defined else None
            result[f"{names[i]}~{names[j]}"] = value
    return result


def advantage_weighting(
    rewards: torch.Tensor, names: Sequence[str], weights: Sequence[float], num_generations: int
) -> dict:
    """Each reward's share of the advantage under GDPO (its group-normalized terms) and GRPO (its group-centered
    terms), and the Pearson correlation of the two rules' advantages over completions in groups with any spread
    (None when there are fewer than two such completions or one rule is constant there)."""
    shares = {
        "gdpo": advantage_shares(
            gdpo_reward_terms(rewards, num_generations), torch.tensor(weights, dtype=rewards.dtype)
        ),
        "grpo": advantage_shares(
            center_per_group(rewards, num_generations), torch.tensor(weights, dtype=rewards.dtype)
        ),
    }
    live = group_has_spread(rewards, num_generations).any(dim=1).repeat_interleave(num_generations)
    gdpo = gdpo_advantages(rewards, weights, num_generations)[live]
    grpo = grpo_advantages(rewards, weights, num_generations)[live]
    correlation = None
    if live.sum() >= 2 and gdpo.std() > 0 and grpo.std() > 0:
        correlation = torch.corrcoef(torch.stack([gdpo, grpo]))[0, 1].item()
    return {
        "advantage_share": {rule: dict(zip(names, found.tolist(), strict=True)) for rule, found in shares.items()},
        "advantage_correlation": correlation,
    }


def pilot_figures(
    rewards: torch.Tensor, names: Sequence[str], num_generations: int, weights: Sequence[float] | None = None
) -> dict:
    """Every pilot figure of one candidate: ``rewards`` ``[N, K]`` (float, no NaN) in groups of ``num_generations``
    rows, reward ``names`` in column order, ``weights`` (default all 1)."""
    rewards = rewards.double()
    weights = list(weights) if weights is not None else [1.0] * rewards.shape[1]
    zero_spread = frac_zero_std_per_reward(rewards, num_generations)
    return {
        "completions": rewards.shape[0],
        "groups": rewards.shape[0] // num_generations,
        "rewards": {
            name: {"mean": rewards[:, k].mean().item(), "zero_spread_groups": zero_spread[k].item()}
            for k, name in enumerate(names)
        },
        "correlation": correlations(rewards, names),
        "conflict_share": conflict_diagnostics(rewards, torch.tensor(weights, dtype=rewards.dtype), num_generations)[
            "conflict/share"
        ],
        **rank_disagreement(rewards, weights, num_generations),
        **advantage_weighting(rewards, names, weights, num_generations),
    }
