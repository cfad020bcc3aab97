"""The ``reward_conditions`` field's values (the GDPO paper's Eq. 8), parsed and checked without the reward registry.

A condition is a reward name, or ``{"on": name, "threshold": t}``. The wrapper that applies it is
:func:`gdpo_trl.rewards.conditioned.conditioned`; this module only reads the config's spelling of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from gdpo_trl.core.errors import InputError


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


def check_condition_graph(conditions: Mapping | None, canonical: Callable[[str], str] = str) -> None:
    """Raise ``InputError`` for a reward conditioned on itself or a cycle (``a`` on ``b`` and ``b`` on ``a``).

    A condition gates a reward on another reward's raw value; a loop has no order in which the gates make sense,
    and a reward gated on itself only pays when it already pays (a silent threshold). Names are compared after
    ``canonical`` (the trainer passes one mapping registry names to function names, so ``length`` and
    ``length_reward`` are the same reward; ``GDPOConfig`` checks the names as written).
    """
    edges = {
        canonical(str(target)): canonical(parse_condition(spec)[0]) for target, spec in (conditions or {}).items()
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
