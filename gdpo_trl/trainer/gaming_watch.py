"""The gaming watch in a run (docs/gaming.md): a ``TrainerCallback`` that applies
:func:`gdpo_trl.core.gaming.check_window` to the run's own logged metrics at every logged step.

At ``on_step_end`` of a step that will be logged (``control.should_log``, set by transformers'
``DefaultFlowCallback``, which runs before this one), the trainer's ``_metrics["train"]`` holds exactly what
``GRPOTrainer.log`` is about to average and log for the step. The watch takes the same means (NaN dropped, as TRL
does), keeps the last ``window`` of them, and appends its ``gaming/*`` values to ``_metrics["train"]``, so they are
logged with the step like every other metric (``trainer_state.json``, the console, trackers). The first firing is
warned about once, by the main process; a resumed run reads its window back from its state. Every process computes the same values (TRL gathers rewards and lengths
before it logs them), so no process waits for another.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections import deque

from transformers import TrainerCallback

from gdpo_trl.core.gaming import LENGTH, REWARD_MEAN, GamingRule, check_window, training_entries, warning_text

__all__ = ["GamingWatch"]


def _logged_mean(values) -> float | None:
    finite = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None


class GamingWatch(TrainerCallback):
    """Watch a GRPO/GDPO trainer's logged rewards for an easy reward collected without the hard one."""

    def __init__(self, trainer, rule: GamingRule | None = None):
        self._trainer = weakref.ref(trainer)  # the trainer holds this callback: no strong cycle
        self.rule = rule or GamingRule()
        self.entries: deque = deque(maxlen=self.rule.window)
        self.first_firing: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        # A resumed run: its state's logged steps fill the window, and a firing before the stop is not warned again.
        history = training_entries(state.log_history or [])
        self.entries.extend(
            {key: value for key, value in entry.items() if key in ("step", LENGTH) or REWARD_MEAN.fullmatch(key)}
            for entry in history[-self.rule.window :]
        )
        fired = [entry["step"] for entry in state.log_history or [] if entry.get("gaming/fired") == 1.0]
        self.first_firing = fired[0] if fired else None

    def on_step_end(self, args, state, control, **kwargs):
        trainer = self._trainer()
        if trainer is None or not control.should_log:
            return
        metrics = trainer._metrics["train"]
        entry = {"step": state.global_step}
        for key, values in list(metrics.items()):
            if key == LENGTH or REWARD_MEAN.fullmatch(key):
                mean = _logged_mean(values)
                if mean is not None:
                    entry[key] = mean
        self.entries.append(entry)
        check = check_window(list(self.entries), self.rule)
        if check is None:
            return
        for key, value in check.metrics().items():
            metrics[key].append(value)
        if check.fired and self.first_firing is None:
            self.first_firing = check.step
            if state.is_world_process_zero:
                # From this module, so that gdpo train prints it as one line (cli/console.py: the package's warnings)
                warnings.warn(warning_text(check), UserWarning, stacklevel=1)
