"""Reward functions that misbehave, for the bad-input tests (named by dotted path in recipes, so importable by the
processes a launch starts). ``RANK`` is the global rank under a launcher; the ``rank1_*`` rewards misbehave only on
rank 1 and score like :func:`tests.helpers.toy.parity_reward` elsewhere."""

import os
import signal
import sys
import time

from tests.helpers.toy import parity_reward


def never_applies_reward(completions, **kwargs):
    """None for every completion: the reward applies to no row of any batch."""
    return [None] * len(completions)


async def never_applies_async_reward(completions, **kwargs):
    return [None] * len(completions)


def raising_reward(completions, **kwargs):
    raise KeyError("gold")


def exiting_reward(completions, **kwargs):
    sys.exit(3)


def process_exit_reward(completions, **kwargs):
    os._exit(3)


def slow_reward(completions, **kwargs):
    """Takes ``SLOW_REWARD_SECONDS`` seconds (default 1), then scores like parity_reward."""
    time.sleep(float(os.environ.get("SLOW_REWARD_SECONDS", "1")))
    return parity_reward(completions)


def _on_rank_1() -> bool:
    return os.environ.get("RANK") == "1"


def rank1_raising_reward(completions, **kwargs):
    if _on_rank_1():
        raise KeyError("gold")
    return parity_reward(completions)


def rank1_hanging_reward(completions, **kwargs):
    if _on_rank_1():
        time.sleep(60)  # past the test's reward_timeout; ends by itself
    return parity_reward(completions)


def rank1_killed_reward(completions, **kwargs):
    if _on_rank_1():
        os.kill(os.getpid(), signal.SIGKILL)  # no handler runs: only the launcher can tell
    return parity_reward(completions)


def color_reward(completions, color, **kwargs):
    """Requires a 'color' column: 1.0 where the completion names the row's color."""
    return [float(str(c_color) in str(c)) for c, c_color in zip(completions, color, strict=True)]
