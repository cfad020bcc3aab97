"""Moved to :mod:`gdpo_trl.demo.warmstart`; this module re-exports it so that existing imports keep working."""

from gdpo_trl.demo.warmstart import *  # noqa: F403
from gdpo_trl.demo.warmstart import Recipe, build_warmstart, load_warmstart_dataset, main, measure_rewards  # noqa: F401

if __name__ == "__main__":  # `python -m gdpo_trl.warmstart PATH` as before
    main()
