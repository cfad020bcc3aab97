"""Train and eval splits of the demo's generated tasks, held out by content.

An item is held out when a hash of its content falls in one bucket of :data:`EVAL_BUCKETS`, so the two splits never
share an item whatever seeds either side is drawn with: the warm starts' SFT draws from ``"train"``, RL and
``gdpo eval`` from ``"eval"``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

EVAL_BUCKETS = 8  # one item in 8 is held out


def is_held_out(key: str) -> bool:
    """Whether the item with content ``key`` belongs to the ``"eval"`` split."""
    return int(hashlib.sha1(key.encode()).hexdigest(), 16) % EVAL_BUCKETS == 0


def check_split(n: int, split: str) -> None:
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")


def draw_split(
    task: str, n: int, seed: int, split: str, draw: Callable[[random.Random], dict], key: Callable[[dict], str]
) -> list[dict]:
    """``n`` items of ``split``: ``draw(rng)`` makes one item from a generator seeded by ``(task, seed, split)``, and
    an item is kept when :func:`is_held_out` of ``key(item)`` matches the split."""
    check_split(n, split)
    rng = random.Random(f"{task}:{seed}:{split}")
    items: list[dict] = []
    while len(items) < n:
        item = draw(rng)
        if is_held_out(key(item)) == (split == "eval"):
            items.append(item)
    return items
