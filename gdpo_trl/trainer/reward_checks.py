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
  (Python cannot kill a thread; training stops anyway). While it waits it says so: a warning naming the function
  and the seconds elapsed after :data:`FIRST_NOTICE_S`, then each time the wait has doubled (10, 20, 40, ... s: a
  reward that never returns shows at once and then says so 6 times before the default 600 s stop, not 20 times),
  with the seconds left before it is stopped (with ``timeout`` 0, no limit, the function runs in the calling thread
  and nothing is said);
- turns ``sys.exit()`` and ``os._exit()`` inside the function into an error naming it: the first would end training
  with its status and no message, the second would end the process at once, skipping every handler;
- hands the function its own copies of its inputs (:func:`private_inputs`): TRL passes every reward the same lists,
  so one that wrote ``answer[i]``, rewrote a completion or emptied ``prompts`` changed what the rewards after it
  read, with no word.

Reward models (``str`` ids, ``nn.Module``) are left to TRL, and so are objects marked ``is_process_reward = True``,
whose outputs are per-token (``(end, score)`` pairs) and checked where they are used.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import logging
import math
import numbers
import os
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn
from trl.trainer.utils import get_callable_name, is_async_callable

from gdpo_trl.core.errors import GDPOError, InputError
from gdpo_trl.trainer.exit_guard import ProcessExit, exits_raise

FLOAT32_MAX = torch.finfo(torch.float32).max
# A reward call still running after FIRST_NOTICE_S seconds is named on screen, then again each time the wait doubles,
# so a slow or stuck reward shows long before reward_timeout (600 s by default) stops it, in a handful of lines.
FIRST_NOTICE_S = 10.0

logger = logging.getLogger(__name__)


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


def _where() -> str:
    """``" on rank R"`` under several processes, else ``""``."""
    return f" on rank {os.environ['RANK']}" if int(os.environ.get("WORLD_SIZE", "1")) > 1 else ""


def still_running(name: str, elapsed: float, timeout: float) -> None:
    """Say that reward function ``name`` has been running for ``elapsed`` seconds, and when it will be stopped."""
    logger.warning(
        "Reward function '%s' is still running after %.0f s%s (reward_timeout=%g s stops it in %.0f s).",
        name,
        elapsed,
        _where(),
        timeout,
        max(timeout - elapsed, 0.0),
    )


def next_wait(elapsed: float, timeout: float, notice_at: float) -> float:
    """Seconds to wait before the next thing to do: a notice at ``notice_at``, or the timeout."""
    return max(min(notice_at, timeout) - elapsed, 0.0)


def call_with_timeout(func, kwargs: dict, timeout: float | None, name: str):
    """``func(**kwargs)``, raising ``RewardTimeoutError`` after ``timeout`` seconds (None or 0: no limit, and the
    call runs in this thread), with a warning while it runs long (:func:`still_running`)."""
    if not timeout:
        with exits_raise():
            return func(**kwargs)
    result = {}
    grad_enabled = torch.is_grad_enabled()  # grad mode is per thread: keep the caller's

    def run():
        try:
            with torch.set_grad_enabled(grad_enabled), exits_raise():
                result["value"] = func(**kwargs)
        except BaseException as error:  # noqa: BLE001 - handed back to the calling thread
            result["error"] = error

    thread = threading.Thread(target=run, name=f"reward-{name}", daemon=True)
    start, notice_at = time.monotonic(), FIRST_NOTICE_S
    thread.start()
    while True:
        thread.join(next_wait(time.monotonic() - start, timeout, notice_at))
        if not thread.is_alive():
            break
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            raise timeout_error(name, timeout)
        if elapsed >= notice_at:
            still_running(name, elapsed, timeout)
            notice_at *= 2
    if "error" in result:
        raise result["error"]
    return result["value"]


def timeout_error(name: str, timeout: float) -> RewardTimeoutError:
    return RewardTimeoutError(
        f"Reward function '{name}' took longer than reward_timeout={timeout:g} s on one batch{_where()}; fix it, or "
        "raise reward_timeout (0 for no limit) if it is just slow."
    )


def defined_at(func) -> str | None:
    """``file:line`` of the function a reward wraps (its ``functools.partial`` unwrapped), the file relative to the
    current folder where it lies there; None for objects without a Python source (a builtin, a C function)."""
    while isinstance(func, functools.partial):
        func = func.func
    target = func if inspect.isfunction(func) or inspect.ismethod(func) else type(func)
    try:
        file, line = inspect.getsourcefile(target), inspect.getsourcelines(target)[1]
    except (TypeError, OSError):
        return None
    if file is None:
        return None
    try:
        file = str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return f"{file}:{line}"


def located(error: BaseException, where: str | None) -> BaseException:
    """``error`` (one of this module's) with where the reward is defined appended: two files may define rewards of
    the same name, and the name alone does not tell which one failed."""
    if where is None or not isinstance(error, (RewardFunctionError, RewardOutputError, RewardTimeoutError)):
        return error
    if str(error).endswith(f"(defined at {where})"):
        return error
    moved = type(error)(f"{error} (defined at {where})")
    moved.__cause__ = error.__cause__
    return moved


def reward_error(name: str, error: BaseException, kind: str = "Reward function") -> RewardFunctionError:
    """The error naming reward ``name`` for an exception it raised, a ``sys.exit`` or an ``os._exit`` it called."""
    if isinstance(error, SystemExit):
        # sys.exit() inside a reward would end training with its exit status (0: "success") and no message.
        return RewardFunctionError(
            f"{kind} '{name}' called sys.exit({error.code!r}){_where()}; a reward must return one value per "
            "completion: raise an exception instead to stop training."
        )
    if isinstance(error, ProcessExit):
        return RewardFunctionError(
            f"{kind} '{name}' called os._exit({error.code!r}){_where()}, which would end the process at once; a "
            "reward must return one value per completion: raise an exception instead to stop training."
        )
    return RewardFunctionError(f"{kind} '{name}' raised {type(error).__name__}{_where()}: {error}")


# Keywords TRL passes every reward as the same objects, which a reward reads but does not own: the trainer's state,
# its logging callbacks and the rollouts' environments (rewards read their state; a copy would be another
# environment). Every other keyword (prompts, completions, completion ids, the dataset's columns) is copied per call.
SHARED_KEYS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
IMMUTABLE = frozenset({str, int, float, bool, bytes, complex, type(None)})


def own_copy(value):
    """``value`` with its lists, dicts, tuples and sets copied down to the leaves (a conversational completion, a
    list of messages, included); strings and numbers are immutable and shared, and so is any other object (an image,
    an array), which no reward is expected to write to."""
    kind = type(value)
    if kind is list:
        return [item if type(item) in IMMUTABLE else own_copy(item) for item in value]
    if kind is dict:
        return {key: item if type(item) in IMMUTABLE else own_copy(item) for key, item in value.items()}
    if kind is tuple:
        return tuple(own_copy(item) for item in value)
    if kind is set:
        return set(value)  # elements are hashable, so immutable in practice
    if isinstance(value, (list, dict)):  # a subclass (defaultdict, OrderedDict): its own deep copy
        return copy.deepcopy(value)
    return value


def private_inputs(kwargs: dict) -> dict:
    """A reward call's keywords as the reward's own (:func:`own_copy`), except :data:`SHARED_KEYS`. At 16 completions
    of 1,024 tokens this costs 0.6-1.3 ms per reward call on this repository's 2-core machine at load 4-5
    (``python scripts/benchmark_reward_inputs.py``), next to training steps of seconds."""
    return {key: value if key in SHARED_KEYS else own_copy(value) for key, value in kwargs.items()}


def empty_warning(name: str, count: int, where: str = "") -> str:
    """The warning for reward ``name`` returning None/NaN for all ``count`` completions of a batch (``where``: on
    which process, under several)."""
    return (
        f"Reward function '{name}' returned None/NaN for all {count} completions of a batch{where}: it adds nothing "
        "to that batch's advantages, and training goes on. Expected where a reward scores one task of several "
        f"(`rewards/{name}/applied` logs the share of rows it applied to); otherwise check its inputs (dataset "
        "columns, completion format). Warned once per reward."
    )


# TRL's per-completion keywords, in the order their length is trusted: any subset may come (TRL itself calls an
# environment-owned reward's wrapper with ``environments=`` alone in its tests, and users call rewards directly).
PER_COMPLETION_KEYS = ("completions", "completion_ids", "prompts", "environments")


def expected_count(kwargs: dict, output) -> int:
    """How many values the call should return: the length of its first per-completion keyword, else (a call with
    none of them) the output's own length, so only its values are checked."""
    for key in PER_COMPLETION_KEYS:
        if isinstance(kwargs.get(key), (list, tuple)):
            return len(kwargs[key])
    return len(output) if hasattr(output, "__len__") and not isinstance(output, (str, bytes, Mapping)) else 0


class CheckedReward:
    """Wraps a reward function so an exception, a malformed output or a hang names the function.

    A class rather than a closure so it stays picklable, and with the wrapped function's ``__name__`` so TRL logs it
    under the same metric name (``rewards/<name>/mean``).
    """

    def __init__(self, func, timeout: float | None = None, name: str | None = None):
        self.func = func
        self.timeout = timeout
        self.__name__ = name or get_callable_name(func)
        self.defined_at = defined_at(func)  # named in its errors with the function
        self.warned_empty = False
        self.local_warning = True  # False under GDPOTrainer: its RewardWatch warns from every process's rows

    def _raise(self, error: BaseException):
        if isinstance(error, (RewardTimeoutError, RewardOutputError, RewardFunctionError)):
            raise located(error, self.defined_at) from error.__cause__
        raise located(reward_error(self.__name__, error), self.defined_at) from error

    def _check(self, output, kwargs: dict):
        num_completions = expected_count(kwargs, output)
        try:
            empty = check_reward_output(output, num_completions, self.__name__)
        except RewardOutputError as error:
            raise located(error, self.defined_at) from None
        if empty and self.local_warning and not self.warned_empty:
            self.warned_empty = True
            warnings.warn(empty_warning(self.__name__, num_completions), UserWarning, stacklevel=2)
        return output

    def __call__(self, **kwargs):
        try:
            output = call_with_timeout(self.func, private_inputs(kwargs), self.timeout, self.__name__)
        except (Exception, SystemExit, ProcessExit) as error:  # noqa: BLE001 - re-raised with the function's name
            self._raise(error)
        return self._check(output, kwargs)


class CheckedAsyncReward(CheckedReward):
    """``CheckedReward`` for ``async`` reward functions (TRL runs these concurrently)."""

    async def _call(self, kwargs: dict):
        try:
            with exits_raise():
                return await self.func(**kwargs)
        except (SystemExit, ProcessExit) as error:  # inside the task: a SystemExit leaving a task stops the loop
            self._raise(error)

    async def _watch(self, kwargs: dict):
        """``self._call`` with the same notices and limit as :func:`call_with_timeout`, on the event loop."""
        task = asyncio.ensure_future(self._call(kwargs))
        start, notice_at = time.monotonic(), FIRST_NOTICE_S
        while True:
            done, _ = await asyncio.wait({task}, timeout=next_wait(time.monotonic() - start, self.timeout, notice_at))
            if done:
                return task.result()
            elapsed = time.monotonic() - start
            if elapsed >= self.timeout:
                task.cancel()
                raise timeout_error(self.__name__, self.timeout)
            if elapsed >= notice_at:
                still_running(self.__name__, elapsed, self.timeout)
                notice_at *= 2

    async def __call__(self, **kwargs):
        own = private_inputs(kwargs)
        try:
            output = await (self._watch(own) if self.timeout else self._call(own))
        except (Exception, SystemExit) as error:  # noqa: BLE001
            self._raise(error)
        return self._check(output, kwargs)


def check_reward_funcs(reward_funcs, timeout: float | None = None, names: list[str] | None = None):
    """Wrap plain callables in ``CheckedReward``; leave reward models (``str`` ids, ``nn.Module``) to TRL, and
    process rewards (``is_process_reward = True``) to their own checks. ``names`` (one per function) name them in
    messages; default: each function's own name."""
    if reward_funcs is None:
        return None
    funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    wrapped = []
    for i, func in enumerate(funcs):
        if isinstance(func, (str, nn.Module, CheckedReward)) or getattr(func, "is_process_reward", False) is True:
            wrapped.append(func)
        elif callable(func):
            checked = CheckedAsyncReward if is_async_callable(func) else CheckedReward
            wrapped.append(checked(func, timeout, names[i] if names else None))
        else:
            raise TypeError(f"reward_funcs must be callables, model ids or models; got {type(func).__name__}.")
    return wrapped
