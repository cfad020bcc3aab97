"""Moved to :mod:`gdpo_trl.demo.warmstart`; this module re-exports it so that existing imports keep working."""

from gdpo_trl.demo.warmstart import *  # noqa: F403
from gdpo_trl.demo.warmstart import (  # noqa: F401
    FORMAT_BREAKS,
    NON_INTEGER_STYLES,
    Recipe,
    TraceMix,
    build_warmstart,
    gold_answer,
    load_warmstart_dataset,
    main,
    make_trace,
    measure_rewards,
    reasoning,
    sft_dataset,
    train_warmstart,
    warmstart_problems,
    weights_checksum,
)

if __name__ == "__main__":  # `python -m gdpo_trl.warmstart PATH` as before
    main()
