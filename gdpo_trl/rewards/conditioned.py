"""Conditioned rewards (the GDPO paper's Eq. 8): an easy reward only counts once a hard one is met.

    length_if_correct = conditioned(length_reward, on=correctness_reward, threshold=1.0)

pays ``length_reward``'s value where ``correctness_reward >= 1.0`` and 0.0 elsewhere. Without the condition a policy
collects the easy reward first (short answers) and neglects the hard one. The same wrapper serves Python users and
the ``reward_conditions`` field of ``GDPOConfig`` (``GDPOTrainer`` applies it when it is built).

Both functions are called on the whole batch, so the condition's reward is computed once more than when it is also
a reward of its own; GSM8K's rewards cost microseconds per completion, so this is simpler than sharing the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from gdpo_trl.errors import InputError
from gdpo_trl.rewards import REWARD_FUNCS, get_reward_func, reward_name, unwrap_partial


class ConditionedReward:
    """``reward`` where ``on`` scores at least ``threshold``, else 0.0. Picklable; named ``<reward>_if_<on>``.

    ``None`` from ``reward`` stays ``None`` (does not apply). ``None`` from ``on`` counts as the condition not met.
    """

    def __init__(self, reward: Callable, on: Callable, threshold: float = 1.0):
        if not callable(reward) or not callable(on):
            raise TypeError("conditioned() needs two callables: the reward and the reward it is conditioned on.")
        self.reward, self.on, self.threshold = reward, on, float(threshold)
        self.__name__ = f"{reward_name(reward)}_if_{reward_name(on)}"

    def __call__(self, completions, **kwargs) -> list[float | None]:
        values = self.reward(completions=completions, **kwargs)
        gates = self.on(completions=completions, **kwargs)
        if len(gates) != len(values):
            raise ValueError(
                f"{self.__name__}: the condition {reward_name(self.on)} returned {len(gates)} values for {len(values)}."
            )
        return [
            None if value is None else (value if gate is not None and gate >= self.threshold else 0.0)
            for value, gate in zip(values, gates, strict=True)
        ]

    def __repr__(self) -> str:
        return f"conditioned({reward_name(self.reward)}, on={reward_name(self.on)}, threshold={self.threshold})"


def conditioned(reward: Callable, on: Callable, threshold: float = 1.0) -> ConditionedReward:
    """``reward`` counted only where ``on`` is at least ``threshold`` (default 1.0), else 0.0."""
    return ConditionedReward(reward, on, threshold)


def parse_condition(spec) -> tuple[str, float]:
    """A ``reward_conditions`` value -> ``(condition name, threshold)``.

    Accepted forms: ``"correctness"`` (threshold 1.0) or ``{"on": "correctness", "threshold": 0.5}``.
    """
    if isinstance(spec, str):
        return spec, 1.0
    if isinstance(spec, Mapping) and "on" in spec and set(spec) <= {"on", "threshold"}:
        return str(spec["on"]), parse_threshold(spec.get("threshold", 1.0), spec["on"])
    raise InputError(
        f"Bad reward condition {spec!r}: use a reward name ('correctness') or "
        "{'on': 'correctness', 'threshold': 1.0}."
    )


def parse_threshold(value, on) -> float:
    """A condition's threshold as a finite float; NaN (never met), an infinity or a non-number names the condition."""
    try:
        threshold = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        threshold = math.nan
    if not math.isfinite(threshold):
        raise InputError(
            f"reward_conditions: the threshold of the condition on {on!r} is {value!r}; it must be a finite number "
            "(a NaN or infinite threshold is never met, so the conditioned reward would always pay 0)."
        )
    return threshold


def canonical_name(name: str) -> str:
    """The function name behind a registry name (``length`` -> ``length_reward``), else ``name`` itself."""
    func = REWARD_FUNCS.get(name)
    return reward_name(func) if func is not None else name


def check_condition_graph(conditions: Mapping | None) -> None:
    """Raise ``InputError`` for a reward conditioned on itself or a cycle (``a`` on ``b`` and ``b`` on ``a``).

    A condition gates a reward on another reward's raw value; a loop has no order in which the gates make sense,
    and a reward gated on itself only pays when it already pays (a silent threshold). Names are compared after
    mapping registry names to function names, so ``length`` and ``length_reward`` are the same reward.
    """
    edges = {
        canonical_name(str(target)): canonical_name(parse_condition(spec)[0])
        for target, spec in (conditions or {}).items()
    }
    for start in edges:
        path, node = [start], edges[start]
        while node in edges and node not in path:
            path.append(node)
            node = edges[node]
        if node == start:
            loop = " -> ".join([*path, start])
            what = "on itself" if len(path) == 1 else "in a cycle"
            raise InputError(
                f"reward_conditions: {start!r} is conditioned {what} ({loop}); a condition must name another reward "
                "that is not, in turn, conditioned on it."
            )


def apply_reward_conditions(reward_funcs: list, conditions: Mapping | None) -> list:
    """Wrap the rewards named in ``conditions`` (``{reward: condition}``) with :func:`conditioned`.

    A name matches a reward function's ``__name__`` (``length_reward``) or its registry name (``length``). The
    condition is looked up the same way among ``reward_funcs`` first, then in the registry or as a dotted path, so it
    need not be a reward of its own. Unknown names are errors that list the reward functions present.
    """
    if not conditions:
        return reward_funcs
    check_condition_graph(conditions)

    def index_of(name):
        for i, func in enumerate(reward_funcs):
            if callable(func) and (reward_name(func) == name or REWARD_FUNCS.get(name) is unwrap_partial(func)):
                return i
        return None

    present = [reward_name(f) for f in reward_funcs if callable(f)]
    funcs = list(reward_funcs)
    for target, spec in conditions.items():
        on_name, threshold = parse_condition(spec)
        i = index_of(target)
        if i is None:
            raise InputError(
                f"reward_conditions names {target!r}, which is not one of the reward functions {present}."
            )
        j = index_of(on_name)
        on = reward_funcs[j] if j is not None else get_reward_func(on_name)
        funcs[i] = conditioned(funcs[i], on=on, threshold=threshold)
    return funcs
