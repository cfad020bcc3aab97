"""Every multi-reward advantage rule by name: ``RULES`` and ``rule_advantages``; pure tensor functions, no TRL import.

One table, used alike by ``GDPOTrainer.compute_advantages`` (the rule that trains), ``gdpo pilot`` (every rule
compared with GRPO on the same sampled rewards) and anyone subclassing the trainer::

    from gdpo_trl.core import RULES, rule_advantages

    advantages = rule_advantages("gdpo", rewards, weights, num_generations)  # rewards [N, K] -> [N]

Shapes and NaN handling are those of :mod:`gdpo_trl.core.advantages`: ``rewards`` ``[N, K]`` in groups of
``num_generations`` consecutive rows, NaN meaning "this reward does not apply", ``weights`` ``[K]``; every rule returns
``[N]`` finite advantages, 0 on unscorable rows (every reward NaN).

A recipe names a rule through TRL's ``multi_objective_aggregation`` field (with ``scale_rewards`` and
``gdpo_batch_norm`` for the variants TRL spells that way): :func:`rule_for_settings` is that translation, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from gdpo_trl.core.advantages import gdpo_advantages, grpo_advantages
from gdpo_trl.core.gd2po import gd2po_advantages


@dataclass(frozen=True)
class Rule:
    """One advantage rule.

    - ``name``: its key in :data:`RULES` (what ``rule_advantages`` and ``gdpo pilot`` call it);
    - ``compute(rewards [N, K], weights [K], num_generations, **options) -> [N]``;
    - ``summary``: what it does, in one line (the pilot's table, the docs);
    - ``source``: where it is defined (paper, arXiv id);
    - ``options``: the keyword options ``compute`` takes beyond the three positional arguments;
    - ``per_reward``: which per-reward parts its advantage is a weighted sum of, for the shares each reward drives:
      ``"normalized"`` (each reward normalized within its group, GDPO's terms) or ``"centered"`` (each reward minus
      its group mean, GRPO's).
    """

    name: str
    compute: Callable[..., torch.Tensor]
    summary: str
    source: str
    options: tuple[str, ...] = ()
    per_reward: str = "normalized"


def _grpo(rewards, weights, num_generations, *, scale: str = "group", eps: float = 1e-4):
    return grpo_advantages(rewards, weights, num_generations, scale=scale, eps=eps)


def _grpo_no_std(rewards, weights, num_generations, *, eps: float = 1e-4):
    return grpo_advantages(rewards, weights, num_generations, scale="none", eps=eps)


def _gdpo(rewards, weights, num_generations, *, eps: float = 1e-4):
    return gdpo_advantages(rewards, weights, num_generations, eps=eps, batch_norm=True)


def _gdpo_no_batch_norm(rewards, weights, num_generations, *, eps: float = 1e-4):
    return gdpo_advantages(rewards, weights, num_generations, eps=eps, batch_norm=False)


def _gd2po(rewards, weights, num_generations, *, threshold: float = 0.2, completion_mask=None, eps: float = 1e-4):
    advantages, _ = gd2po_advantages(
        rewards, weights, num_generations, threshold=threshold, completion_mask=completion_mask, eps=eps
    )
    return advantages


RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule(
            "grpo",
            _grpo,
            "weighted sum of the rewards, normalized within each group (scale: group std, batch std or none)",
            "DeepSeekMath, arXiv 2402.03300",
            ("scale", "eps"),
            per_reward="centered",
        ),
        Rule(
            "grpo_no_std",
            _grpo_no_std,
            "weighted sum of the rewards minus its group mean, no division (Dr. GRPO)",
            "Understanding R1-Zero-Like Training, arXiv 2503.20783",
            ("eps",),
            per_reward="centered",
        ),
        Rule(
            "gdpo",
            _gdpo,
            "each reward normalized within its group, weighted sum, normalized over the batch",
            "GDPO, arXiv 2601.05242",
            ("eps",),
        ),
        Rule(
            "gdpo_no_batch_norm",
            _gdpo_no_batch_norm,
            "each reward normalized within its group, weighted sum, no batch step (GDPO's ablation)",
            "GDPO, arXiv 2601.05242",
            ("eps",),
        ),
        Rule(
            "gd2po",
            _gd2po,
            "GDPO's per-reward terms, rollouts whose rewards conflict masked, whitened over the kept tokens",
            "GD2PO, arXiv 2606.16771",
            ("threshold", "completion_mask", "eps"),
        ),
    )
}


def rule_advantages(
    rule: str | Rule,
    rewards: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    num_generations: int,
    **options,
) -> torch.Tensor:
    """Advantages ``[N]`` of the rule named ``rule`` (a key of :data:`RULES`, or a :class:`Rule`) from ``rewards``
    ``[N, K]``, ``weights`` ``[K]`` and groups of ``num_generations`` rows; ``options`` are the rule's own
    (``Rule.options``). An unknown rule or option raises ``ValueError`` naming the ones there are."""
    if isinstance(rule, str):
        if rule not in RULES:
            raise ValueError(f"Unknown advantage rule {rule!r}: use one of {sorted(RULES)}.")
        rule = RULES[rule]
    unknown = sorted(set(options) - set(rule.options))
    if unknown:
        raise ValueError(f"Rule {rule.name!r} takes no option {unknown}; its options are {list(rule.options)}.")
    return rule.compute(rewards, weights, num_generations, **options)


def rule_for_settings(
    aggregation: str, num_rewards: int, *, scale_rewards: str = "group", gdpo_batch_norm: bool = True
) -> tuple[str, dict]:
    """The rule (a key of :data:`RULES`) and its options that a run's settings name.

    ``aggregation`` is ``multi_objective_aggregation``: TRL's ``"sum_then_normalize"`` is GRPO (``scale_rewards``
    ``"none"`` is ``grpo_no_std``), ``"normalize_then_sum"`` GDPO (``gdpo_batch_norm=False``:
    ``gdpo_no_batch_norm``), any other key of :data:`RULES` is that rule. With a single reward, GDPO and GD2PO reduce
    to GRPO with ``scale_rewards``, as in the paper's reference code (per-reward and summed normalization coincide).
    """
    single = num_rewards == 1 and aggregation in ("normalize_then_sum", "gd2po")
    if aggregation == "sum_then_normalize" or single:
        return ("grpo_no_std", {}) if scale_rewards == "none" else ("grpo", {"scale": scale_rewards})
    if aggregation == "normalize_then_sum":
        return ("gdpo", {}) if gdpo_batch_norm else ("gdpo_no_batch_norm", {})
    if aggregation in RULES:
        return aggregation, {}
    raise ValueError(
        f"multi_objective_aggregation={aggregation!r} names no rule: use 'normalize_then_sum', "
        f"'sum_then_normalize' or one of {sorted(RULES)}."
    )
