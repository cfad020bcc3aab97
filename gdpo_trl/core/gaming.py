"""The gaming watch's rule (docs/gaming.md): an easier reward rises while the hardest does not and the completions
get shorter, over a window of logged steps.

Pure and stdlib-only: it reads the per-step metrics a run logs (``rewards/<name>/mean``, ``completions/mean_length``),
one dict per logged step as in a Trainer's ``log_history``, so the trainer's callback
(:mod:`gdpo_trl.trainer.gaming_watch`) and ``gdpo gaming`` on a saved run (:mod:`gdpo_trl.results.gaming`) apply
the same code to the same numbers.

The remedy it points to is the GDPO paper's conditioned reward (arXiv 2601.05242, Sec. 3.2, Eq. 8).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gdpo_trl.core.errors import InputError

LENGTH = "completions/mean_length"
REWARD_MEAN = re.compile(r"rewards/(.+)/mean")
METRICS = ("gaming/fired", "gaming/easy_rise", "gaming/hard_rise", "gaming/length_change")


@dataclass(frozen=True)
class GamingRule:
    """The thresholds (docs/gaming.md fixes the defaults).

    Attributes:
        window: logged steps compared, the first half against the second (even, at least 2). Default 4.
        rise: how much an easier reward's mean must rise. Default 0.25.
        hard_rise: the hardest reward rises by less than this. Default 0.05.
        hard_ceiling: the hardest reward's second-half mean is below this (still unmet). Default 0.5.
        length_drop: the mean completion length falls by at least this fraction. Default 0.25.
    """

    window: int = 4
    rise: float = 0.25
    hard_rise: float = 0.05
    hard_ceiling: float = 0.5
    length_drop: float = 0.25

    def __post_init__(self):
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 2 or self.window % 2:
            raise InputError(f"gaming watch: window must be an even number of steps >= 2, got {self.window!r}")
        for name in ("rise", "hard_rise", "hard_ceiling", "length_drop"):
            if not math.isfinite(getattr(self, name)):
                raise InputError(f"gaming watch: {name} must be a finite number, got {getattr(self, name)!r}")
        if not 0.0 <= self.length_drop < 1.0:
            raise InputError(f"gaming watch: length_drop is a fraction in [0, 1), got {self.length_drop!r}")


@dataclass(frozen=True)
class GamingCheck:
    """The rule at one step: whether it fired, and the numbers that decided it (halves' means per reward)."""

    step: int
    fired: bool
    hardest: str
    risen: tuple[str, ...]  # the easier rewards that rose by at least `rise`, largest rise first
    easy_rise: float  # the largest rise of a reward other than the hardest
    hard_rise: float
    length_change: float  # second half's mean length / first half's - 1
    halves: dict[str, tuple[float, float]] = field(default_factory=dict)  # metric -> (first-half, second-half) mean

    def metrics(self) -> dict[str, float]:
        """The ``gaming/*`` values logged for this step."""
        values = (float(self.fired), self.easy_rise, self.hard_rise, self.length_change)
        return dict(zip(METRICS, values, strict=True))


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def training_entries(log_history: Sequence[Mapping]) -> list[Mapping]:
    """The logged training steps of a ``log_history``: entries with a step, a finite mean length and a reward mean
    (the final summary and evaluation entries have neither)."""
    return [
        entry
        for entry in log_history
        if _finite(entry.get("step"))
        and _finite(entry.get(LENGTH))
        and any(REWARD_MEAN.fullmatch(key) for key in entry)
    ]


def check_window(entries: Sequence[Mapping], rule: GamingRule = GamingRule()) -> GamingCheck | None:
    """The rule on one window (``rule.window`` consecutive logged steps, oldest first); ``None`` where it cannot be
    judged: fewer entries, fewer than two rewards with a finite mean at every step, or no finite length."""
    if len(entries) != rule.window:
        return None
    half = rule.window // 2
    names = [m.group(1) for key in entries[-1] if (m := REWARD_MEAN.fullmatch(key))]
    names = [name for name in names if all(_finite(e.get(f"rewards/{name}/mean")) for e in entries)]
    if len(names) < 2 or not all(_finite(e.get(LENGTH)) for e in entries):
        return None
    halves = {}
    for key in [f"rewards/{name}/mean" for name in names] + [LENGTH]:
        values = [float(e[key]) for e in entries]
        halves[key] = (_mean(values[:half]), _mean(values[half:]))
    window_mean = {name: sum(halves[f"rewards/{name}/mean"]) / 2 for name in names}
    hardest = min(names, key=lambda name: window_mean[name])  # min keeps the first on a tie
    rises = {name: halves[f"rewards/{name}/mean"][1] - halves[f"rewards/{name}/mean"][0] for name in names}
    easier = sorted((name for name in names if name != hardest), key=lambda name: -rises[name])
    risen = tuple(name for name in easier if rises[name] >= rule.rise)
    first_length, second_length = halves[LENGTH]
    length_change = second_length / first_length - 1.0 if first_length > 0 else 0.0
    fired = (
        bool(risen)
        and rises[hardest] < rule.hard_rise
        and halves[f"rewards/{hardest}/mean"][1] < rule.hard_ceiling
        and first_length > 0
        and second_length <= (1.0 - rule.length_drop) * first_length
    )
    return GamingCheck(
        step=int(entries[-1]["step"]),
        fired=fired,
        hardest=hardest,
        risen=risen,
        easy_rise=rises[easier[0]],
        hard_rise=rises[hardest],
        length_change=length_change,
        halves=halves,
    )


def scan(log_history: Sequence[Mapping], rule: GamingRule = GamingRule()) -> list[GamingCheck]:
    """The rule at every logged training step from the ``window``-th on, as the watch in the run applies it."""
    entries = training_entries(log_history)
    checks = (check_window(entries[end - rule.window : end], rule) for end in range(rule.window, len(entries) + 1))
    return [check for check in checks if check is not None]


def warning_text(check: GamingCheck) -> str:
    """The one line the watch prints when it first fires."""

    def moved(key: str) -> str:
        first, second = check.halves[key]
        return f"{first:.2f} -> {second:.2f}"

    rose = ", ".join(f"{name} {moved(f'rewards/{name}/mean')}" for name in check.risen)
    first_length, second_length = check.halves[LENGTH]
    return (
        f"gaming watch: at step {check.step}, {rose} rose while the hardest reward, {check.hardest}, went "
        f"{moved(f'rewards/{check.hardest}/mean')} and the mean completion length fell {first_length:.0f} -> "
        f"{second_length:.0f} tokens: the policy may be collecting the easier rewards without the hard one. Look at "
        "its completions; try reward_conditions (pay the easier rewards only where the hard one is met, the GDPO "
        "paper's Eq. 8) or, on GSM8K, the reasoning_format reward (docs/gaming.md)."
    )
