"""Known library noise, silenced: warnings and log records that libraries emit about their own internals.

A user of gdpo-trl cannot act on them, and they bury the lines that matter. ``gdpo``'s entry points install the
filters first; :class:`~gdpo_trl.core.config.GDPOConfig` installs them too, so the Python API (``GDPOTrainer`` in a
notebook) is as quiet as the command. Only the messages listed here are filtered; every other warning still shows.
"""

from __future__ import annotations

import logging
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


class _DropKnownRecords(logging.Filter):
    """Drops a logger's records that start with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefixes)


def quiet_known_warnings() -> None:
    """Silence :data:`KNOWN_NOISE` and :data:`KNOWN_LOG_NOISE` (and only those), in this process. Every entry point
    calls it first (``gdpo`` itself, ``gdpo_trl.cli.train``'s ``main`` in each process accelerate starts), and so does
    ``GDPOConfig``. The log filters sit on the named loggers, so they hold for loggers a library creates later under
    that name."""
    for category, message in KNOWN_NOISE:
        warnings.filterwarnings("ignore", message=message, category=category)
    by_logger: dict[str, tuple[str, ...]] = {}
    for name, prefix in KNOWN_LOG_NOISE:
        by_logger[name] = by_logger.get(name, ()) + (prefix,)
    for name, prefixes in by_logger.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropKnownRecords) for f in logger.filters):
            logger.addFilter(_DropKnownRecords(prefixes))
