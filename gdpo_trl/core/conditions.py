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
        threshold = spec.get("threshold", 1.0)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
            # A NaN threshold compares False with every score: the reward would be 0 for the whole run.
            raise InputError(
                f"Bad reward condition {spec!r}: threshold must be a finite number, e.g. 1.0 (got {threshold!r})."
            )
        return str(spec["on"]), float(threshold)
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
        canonical(str(target)): canonical(parse_condition(spec)[0])
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
