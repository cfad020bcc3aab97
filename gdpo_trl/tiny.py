"""Moved to :mod:`gdpo_trl.demo.tiny`; this module re-exports it so that existing imports keep working."""

from gdpo_trl.demo.tiny import *  # noqa: F403
from gdpo_trl.demo.tiny import build_model, build_tokenizer, cache_dir, resolve_model, save_tiny_model  # noqa: F401
