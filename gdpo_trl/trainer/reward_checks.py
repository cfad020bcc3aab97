"""Checks around every plain reward function, so a faulty one is named instead of silently skewing training.

``check_reward_funcs`` wraps each callable in ``CheckedReward`` (or ``CheckedAsyncReward``), which:

- names the function when it raises (``RewardFunctionError``, the original exception chained);
- rejects an output that is not one number (or None) per completion: a dict (TRL would score its keys), a string, a
  wrong length, an infinity, or a value beyond float32's range (TRL stores rewards as float32, where it becomes an
  infinity and then NaN in the advantages);
- warns once per function when it returns None/NaN for a whole batch (the reward then adds nothing to that batch's
  advantages);
- stops a call that takes longer than ``timeout`` seconds (``GDPOConfig.reward_timeout``) with an error naming it,
  instead of hanging training. A sync function runs in a daemon thread for that, which is abandoned on timeout
  (Python cannot kill a thread; training stops anyway).

Reward models (``str`` ids, ``nn.Module``) are left to TRL, and so are objects marked ``is_process_reward = True``,
whose outputs are per-token (``(end, score)`` pairs) and checked where they are used.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import threading
import warnings
from collections.abc import Mapping

import torch
from torch import nn
from trl.trainer.utils import get_callable_name, is_async_callable

from gdpo_trl.core.errors import GDPOError, InputError

FLOAT32_MAX = torch.finfo(torch.float32).max


class RewardFunctionError(GDPOError, RuntimeError):
    """A reward function raised; the message names it and the original exception is chained."""


class RewardOutputError(InputError):
    """A reward function returned something that is not one finite number (or None) per completion."""


class RewardTimeoutError(InputError):
    """A reward function call took longer than ``reward_timeout``."""


def as_float(value) -> float | None:
    """A reward value as a Python float (None stays None); a 1-element tensor is unwrapped."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(type(value).__name__)


def check_reward_output(output, num_completions: int, name: str) -> bool:
    """Raise ``RewardOutputError`` naming the function when ``output`` is not one finite float32 number (or None)
    per completion. Returns whether every value is None or NaN (the reward says nothing about this batch)."""
    if isinstance(output, (str, bytes, Mapping)) or not hasattr(output, "__len__"):
        raise RewardOutputError(
            f"Reward function '{name}' returned {type(output).__name__}; it must return a list with one float "
            f"(or None) per completion ({num_completions} here)."
        )
    if len(output) != num_completions:
        raise RewardOutputError(
            f"Reward function '{name}' returned {len(output)} values for {num_completions} completions; it must "
            "return exactly one float (or None, meaning 'does not apply') per completion, in order."
        )
    empty = True
    for i, value in enumerate(output):
        try:
            number = as_float(value)
        except TypeError:
            number = math.inf  # reported below with the value itself
        if number is None or math.isnan(number):
            continue
        empty = False
        if math.isinf(number) or abs(number) > FLOAT32_MAX:
            raise RewardOutputError(
                f"Reward function '{name}' returned {value!r} for completion {i}; each value must be a finite "
                f"number within float32's range (|x| <= {FLOAT32_MAX:.3g}), or None when the reward does not apply."
            )
    return empty


def call_with_timeout(func, kwargs: dict, timeout: float | None, name: str):
    """``func(**kwargs)``, raising ``RewardTimeoutError`` after ``timeout`` seconds (None or 0: no limit)."""
    if not timeout:
        return func(**kwargs)
    result = {}
    grad_enabled = torch.is_grad_enabled()  # grad mode is per thread: keep the caller's

    def run():
        try:
            with torch.set_grad_enabled(grad_enabled):
                result["value"] = func(**kwargs)
        except BaseException as error:  # noqa: BLE001 - handed back to the calling thread
            result["error"] = error

    thread = threading.Thread(target=run, name=f"reward-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise timeout_error(name, timeout)
    if "error" in result:
        raise result["error"]
    return result["value"]


def timeout_error(name: str, timeout: float) -> RewardTimeoutError:
    return RewardTimeoutError(
        f"Reward function '{name}' took longer than reward_timeout={timeout:g} s on one batch; fix it, or raise "
        "reward_timeout (0 for no limit) if it is just slow."
    )


class CheckedReward:
    """Wraps a reward function so an exception, a malformed output or a hang names the function.

    A class rather than a closure so it stays picklable, and with the wrapped function's ``__name__`` so TRL logs it
    under the same metric name (``rewards/<name>/mean``).
    """

    def __init__(self, func, timeout: float | None = None):
        self.func = func
        self.timeout = timeout
        self.__name__ = get_callable_name(func)
        self.warned_empty = False

    def _raise(self, error: BaseException):
        if isinstance(error, (RewardTimeoutError, RewardOutputError)):
            raise error
        if isinstance(error, SystemExit):
            # sys.exit() inside a reward would end training with its exit status (0: "success") and no message.
            raise RewardFunctionError(
                f"Reward function '{self.__name__}' called sys.exit({error.code!r}) (raised SystemExit); a reward "
                "must return one value per completion: raise an exception instead to stop training."
            ) from error
        raise RewardFunctionError(
            f"Reward function '{self.__name__}' raised {type(error).__name__}: {error}"
        ) from error

    def _check(self, output, kwargs: dict):
        num_completions = len(kwargs["completions"])
        if check_reward_output(output, num_completions, self.__name__) and not self.warned_empty:
            self.warned_empty = True
            warnings.warn(
                f"Reward function '{self.__name__}' returned None/NaN for all {num_completions} completions of a "
                "batch: it adds nothing to that batch's advantages. If it should apply, check its inputs (dataset "
                "columns, completion format). Warned once.",
                UserWarning,
                stacklevel=2,
            )
        return output

    def __call__(self, **kwargs):
        try:
            output = call_with_timeout(self.func, kwargs, self.timeout, self.__name__)
        except (Exception, SystemExit) as error:  # noqa: BLE001 - re-raised with the function's name
            self._raise(error)
        return self._check(output, kwargs)


class CheckedAsyncReward(CheckedReward):
    """``CheckedReward`` for ``async`` reward functions (TRL runs these concurrently)."""

    async def _call(self, kwargs: dict):
        try:
            return await self.func(**kwargs)
        except SystemExit as error:  # inside the task: a SystemExit leaving a task stops the whole event loop
            self._raise(error)

    async def __call__(self, **kwargs):
        try:
            if self.timeout:
                output = await asyncio.wait_for(self._call(kwargs), self.timeout)
            else:
                output = await self._call(kwargs)
        except (asyncio.TimeoutError, TimeoutError):
            raise timeout_error(self.__name__, self.timeout) from None
        except (Exception, SystemExit) as error:  # noqa: BLE001
            self._raise(error)
        return self._check(output, kwargs)


def check_reward_funcs(reward_funcs, timeout: float | None = None):
    """Wrap plain callables in ``CheckedReward``; leave reward models (``str`` ids, ``nn.Module``) to TRL, and
    process rewards (``is_process_reward = True``) to their own checks."""
    if reward_funcs is None:
        return None
    funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    wrapped = []
    for func in funcs:
        if isinstance(func, (str, nn.Module, CheckedReward)) or getattr(func, "is_process_reward", False) is True:
            wrapped.append(func)
        elif callable(func):
            checked = CheckedAsyncReward if is_async_callable(func) else CheckedReward
            wrapped.append(checked(func, timeout))
        else:
            raise TypeError(f"reward_funcs must be callables, model ids or models; got {type(func).__name__}.")
    return wrapped
