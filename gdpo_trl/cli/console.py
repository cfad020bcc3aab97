"""What a training run prints: logging set-up, known library noise silenced, and a compact line per logged step.

Transformers' progress bar prints every logged step as a Python dict (about 40 keys for GDPO) into the bar;
:class:`CompactProgress` prints the few numbers a person watches instead, while ``report_to`` trackers and
``trainer_state.json`` still get every metric.
"""

from __future__ import annotations

import logging
import re
import sys
import warnings

# Warnings raised inside libraries about their own internals, which a user of gdpo-trl cannot act on.
KNOWN_NOISE = (
    # TRL 1.16 sets `gradient_checkpointing`, which transformers 5 renamed to `activation_checkpointing`.
    (FutureWarning, r"`(is_)?gradient_checkpointing.*` is deprecated"),
    # DeepSpeed (ZeRO-3) calls torch's collectives under their old names; torch 2.13 renamed them.
    (FutureWarning, r"`torch\.distributed\.(all_gather_into_tensor|reduce_scatter_tensor)` is deprecated"),
    (FutureWarning, r"`torch\.distributed\._(all_gather|reduce_scatter)_base` is a private function"),
)
# Log records of libraries that say nothing a user can act on: (logger name, message prefix).
KNOWN_LOG_NOISE = (
    # DeepSpeed, imported by transformers and accelerate whenever it is installed, on every CPU-only process.
    ("DeepSpeed", "Setting accelerator to CPU."),
)
# Completions printed per logged step when `log_completions` is on and no `num_completions_to_print` is set: TRL
# prints the whole batch otherwise (hundreds of rows per step).
DEFAULT_COMPLETIONS_TO_PRINT = 4


class _DropKnownRecords(logging.Filter):
    """Drops a logger's records that start with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefixes)


def quiet_known_warnings() -> None:
    """Silence :data:`KNOWN_NOISE` and :data:`KNOWN_LOG_NOISE` (and only those), in this process. Every entry point
    calls it first: ``gdpo`` itself, and ``gdpo_trl.cli.train``'s ``main`` in each process accelerate starts. The log
    filters sit on the named loggers, so they hold for loggers a library creates later under that name."""
    for category, message in KNOWN_NOISE:
        warnings.filterwarnings("ignore", message=message, category=category)
    by_logger: dict[str, tuple[str, ...]] = {}
    for name, prefix in KNOWN_LOG_NOISE:
        by_logger[name] = by_logger.get(name, ()) + (prefix,)
    for name, prefixes in by_logger.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropKnownRecords) for f in logger.filters):
            logger.addFilter(_DropKnownRecords(prefixes))


def setup_logging(level: int) -> None:
    """Log to stdout at ``level`` (the Trainer's level for this process: quieter on non-main ranks)."""
    import datasets
    import transformers

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    logging.getLogger("gdpo_trl").setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)


def bound_completions_logging(args) -> None:
    """With ``log_completions`` on and no ``num_completions_to_print``, print :data:`DEFAULT_COMPLETIONS_TO_PRINT`."""
    if getattr(args, "log_completions", False) and args.num_completions_to_print is None:
        args.num_completions_to_print = DEFAULT_COMPLETIONS_TO_PRINT


_REWARD = re.compile(r"rewards/(.+?)(?:_reward)?/mean")


def format_loss(value: float) -> str:
    """A loss for the step line: four decimals, or two significant digits when that would print a small nonzero loss
    as ``0.0000`` (``3.2e-05``)."""
    if value != 0 and abs(value) < 5e-4:
        return f"{value:.1e}"
    return f"{value:.4f}"


def compact_line(logs: dict, step: int, max_steps: int) -> str | None:
    """One line for a Trainer log entry: step, each reward's mean, the total, completion length and loss; or None for
    an entry without a reward (e.g. the final runtime summary, which the Trainer prints itself)."""
    rewards = [(m.group(1), value) for key, value in logs.items() if (m := _REWARD.fullmatch(key))]
    if not rewards:
        return None
    parts = [f"step {step}/{max_steps}", " ".join(f"{name} {format_value(value, '.2f')}" for name, value in rewards)]
    for key, label, spec in (("reward", "total", ".2f"), ("completions/mean_length", "len", ".1f")):
        if key in logs:
            parts.append(f"{label} {format_value(logs[key], spec)}")
    if "loss" in logs:
        loss = logs["loss"]
        parts.append(f"loss {format_loss(loss) if _is_number(loss) else NO_VALUE}")
    return " | ".join(parts)


# What the step line shows for a metric without a value: TRL logs None for a reward that returned None/NaN for every
# completion of the logged steps (it applied to no row), and such a step still trains on the other rewards.
NO_VALUE = "n/a"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and value == value  # NaN != NaN


def format_value(value, spec: str) -> str:
    """``value`` formatted with ``spec``, or :data:`NO_VALUE` for None or NaN."""
    return f"{value:{spec}}" if _is_number(value) else NO_VALUE


def use_compact_progress(trainer) -> None:
    """Replace the Trainer's progress bar by one that prints :func:`compact_line` above the bar."""
    from transformers.trainer_callback import ProgressCallback

    class CompactProgress(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and self.training_bar is not None and logs:
                line = compact_line(logs, state.global_step, state.max_steps)
                if line is not None:
                    self.training_bar.write(line)

    if trainer.pop_callback(ProgressCallback) is not None:  # absent with disable_tqdm: then print nothing extra
        trainer.add_callback(CompactProgress)
