"""Moved to :mod:`gdpo_trl.demo.warmstart`; this module re-exports it so that existing imports keep working."""

from gdpo_trl.demo.warmstart import *  # noqa: F403
from gdpo_trl.demo.warmstart import Recipe, build_warmstart, load_warmstart_dataset, measure_rewards  # noqa: F401
