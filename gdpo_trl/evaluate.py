"""Moved to the :mod:`gdpo_trl.eval` package; this module re-exports it so that existing imports keep working."""

from gdpo_trl.eval import *  # noqa: F403
from gdpo_trl.eval import __all__  # noqa: F401
