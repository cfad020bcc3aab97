"""Moved to :mod:`gdpo_trl.demo.synthetic`; this module re-exports it so that existing imports keep working."""

from gdpo_trl.demo.synthetic import *  # noqa: F403
from gdpo_trl.demo.synthetic import TEMPLATES, generate_problems, load_synthetic  # noqa: F401
