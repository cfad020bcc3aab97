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

from gdpo_trl.core.advantages import center_per_group, gdpo_advantages, gdpo_reward_terms, grpo_advantages
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.gd2po import gd2po_advantages
from gdpo_trl.core.published_rules import (
    declared_range,
    mo_grpo_advantages,
    odrpo_advantages,
    odrpo_reward_terms,
    odrpo_thresholds_for,
    saw_gdpo_advantages,
    saw_grpo_advantages,
    saw_offsets_for,
    saw_weights,
)


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
      its group mean, GRPO's);
    - ``parts``: for a rule whose per-reward parts or weights are its own (SAW's batch weights, ODRPO's threshold
      sums), ``parts(rewards, weights, num_generations, **options) -> (terms [N, K], weights [K])`` whose weighted
      sum is its advantage before any batch step; None: ``per_reward``'s terms with the run's weights.
    """

    name: str
    compute: Callable[..., torch.Tensor]
    summary: str
    source: str
    options: tuple[str, ...] = ()
    per_reward: str = "normalized"
    parts: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None = None


def _grpo(rewards, weights, num_generations, *, scale: str = "group", eps: float = 1e-4):
    return grpo_advantages(rewards, weights, num_generations, scale=scale, eps=eps)


def _grpo_no_std(rewards, weights, num_generations, *, eps: float = 1e-4):
    return grpo_advantages(rewards, weights, num_generations, scale="none", eps=eps)


def _gdpo(rewards, weights, num_generations, *, eps: float = 1e-4):
    return gdpo_advantages(rewards, weights, num_generations, eps=eps, batch_norm=True)


def _gdpo_no_batch_norm(rewards, weights, num_generations, *, eps: float = 1e-4):
    return gdpo_advantages(rewards, weights, num_generations, eps=eps, batch_norm=False)


def _mo_grpo(rewards, weights, num_generations, *, eps: float = 1e-4):
    return mo_grpo_advantages(rewards, weights, num_generations, eps=eps)


def _gd2po(rewards, weights, num_generations, *, threshold: float = 0.2, completion_mask=None, eps: float = 1e-4):
    advantages, _ = gd2po_advantages(
        rewards, weights, num_generations, threshold=threshold, completion_mask=completion_mask, eps=eps
    )
    return advantages


def _saw_gdpo(rewards, weights, num_generations, *, offsets=None, completion_mask=None, eps: float = 1e-4):
    return saw_gdpo_advantages(
        rewards, weights, num_generations, offsets=offsets, completion_mask=completion_mask, eps=eps
    )


def _saw_grpo(rewards, weights, num_generations, *, offsets=None, eps: float = 1e-4):
    return saw_grpo_advantages(rewards, weights, num_generations, offsets=offsets, eps=eps)


def _odrpo(rewards, weights, num_generations, *, thresholds=None, eps: float = 1e-4):
    return odrpo_advantages(rewards, weights, num_generations, thresholds=thresholds, eps=eps)


def _saw_gdpo_parts(rewards, weights, num_generations, *, offsets=None, completion_mask=None, eps: float = 1e-4):
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device)
    terms = gdpo_reward_terms(rewards, num_generations, eps=eps)
    return terms, weights * saw_weights(rewards, weights, offsets=offsets)


def _saw_grpo_parts(rewards, weights, num_generations, *, offsets=None, eps: float = 1e-4):
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device)
    return center_per_group(rewards, num_generations), weights * saw_weights(rewards, weights, offsets=offsets)


def _odrpo_parts(rewards, weights, num_generations, *, thresholds=None, eps: float = 1e-4):
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device)
    return odrpo_reward_terms(rewards, num_generations, thresholds, eps=eps), weights


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
        Rule(
            "mo_grpo",
            _mo_grpo,
            "each reward normalized within its group, weighted sum, no batch step (= gdpo_no_batch_norm)",
            "MO-GRPO, arXiv 2509.22047",
            ("eps",),
        ),
        Rule(
            "saw_gdpo",
            _saw_gdpo,
            "GDPO's per-reward terms weighted by each reward's batch coefficient of variation, whitened (gdpo-h)",
            "SAW, arXiv 2606.07705 (estimator gdpo-h)",
            ("offsets", "completion_mask", "eps"),
            parts=_saw_gdpo_parts,
        ),
        Rule(
            "saw_grpo",
            _saw_grpo,
            "rewards weighted by their batch coefficient of variation, summed, normalized within each group (grpo-h)",
            "SAW, arXiv 2606.07705 (estimator grpo-h)",
            ("offsets", "eps"),
            per_reward="centered",
            parts=_saw_grpo_parts,
        ),
        Rule(
            "odrpo",
            _odrpo,
            "each reward split into indicators 1[r >= t], each normalized within its group, summed (no batch step)",
            "ODRPO, arXiv 2605.12667",
            ("thresholds", "eps"),
            parts=_odrpo_parts,
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


def rule_options_for(rule: str, reward_funcs: Sequence[Callable], names: Sequence[str], config) -> dict:
    """The options a run's ``config`` gives ``rule`` beyond :func:`rule_for_settings`': SAW's ``offsets`` (from
    ``config.saw_offsets`` and each reward's declared range, :func:`gdpo_trl.core.published_rules.saw_offsets_for`)
    and ODRPO's ``thresholds`` (``config.odrpo_thresholds``, :func:`~gdpo_trl.core.published_rules.odrpo_thresholds_for`),
    one entry per reward in the order of ``names``. A name that is not a reward raises :class:`InputError` naming
    the field."""
    takes = RULES[rule].options
    ranges = [declared_range(func) for func in reward_funcs]
    options = {}
    try:
        if "offsets" in takes:
            options["offsets"] = saw_offsets_for(names, ranges, getattr(config, "saw_offsets", None))
        if "thresholds" in takes:
            thresholds = odrpo_thresholds_for(names, getattr(config, "odrpo_thresholds", None))
            if thresholds is not None:
                options["thresholds"] = thresholds
    except ValueError as error:
        raise InputError(str(error)) from None
    return options


def rule_parts(
    rule: str, rewards: torch.Tensor, weights: torch.Tensor, num_generations: int, options: dict
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(terms [N, K], weights [K])`` whose weighted sum is ``rule``'s advantage before its batch step, for the
    shares each reward drives (:func:`gdpo_trl.core.diagnostics.reward_diagnostics`); None where the rule's parts are
    its ``per_reward`` terms with the run's weights."""
    parts = RULES[rule].parts
    if parts is None:
        return None
    return parts(rewards, weights, num_generations, **{k: v for k, v in options.items() if k != "scale"})
