"""Process (step-level) rewards: reward functions that score steps inside a completion, not the whole completion.

A process reward has TRL's reward signature but returns, for each completion, a list of ``(end, score)`` pairs:
``end`` is the character offset in the completion text where a step ends (the step is ``text[:end]``'s last part),
``score`` a finite number; ``None`` or ``[]`` means the reward does not apply to that completion. Mark it with
:func:`process_reward`::

    @process_reward
    def lines_are_short(completions, **kwargs):
        ...  # [[(end_of_line_1, 1.0), (end_of_line_2, 0.0)], None, ...]

``GDPOTrainer`` maps each ``end`` to the token that contains character ``end - 1``
(:func:`gdpo_trl.trainer.process_rewards.step_token_indices`), so
reward authors never touch token ids, and then trains on token-level advantages (``gdpo_trl.core.advantages``). A process
reward can sit beside ordinary outcome rewards in ``reward_funcs``, in Python and in YAML (by registry name).

Stdlib only, like the rest of ``gdpo_trl.rewards``: what the trainer does with the steps lives in
:mod:`gdpo_trl.trainer.process_rewards`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Sequence

Steps = list[tuple[int, float]]


class ProcessReward:
    """Marks ``func`` as a process reward (``is_process_reward = True``); calling it calls ``func``.

    A class rather than a function attribute so the mark survives ``functools.wraps``-free wrappers and pickling;
    named like ``func`` so TRL logs it as ``rewards/<name>/...``.
    """

    is_process_reward = True

    def __init__(self, func: Callable):
        if not callable(func):
            raise TypeError(f"process_reward needs a callable, got {type(func).__name__}.")
        if inspect.iscoroutinefunction(func):
            raise TypeError(
                f"process reward {getattr(func, '__name__', func)!r} is async; only sync ones are supported."
            )
        self.func = func
        self.__name__ = getattr(func, "__name__", type(func).__name__)
        self.__doc__ = func.__doc__

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"process_reward({self.__name__})"

    def __reduce__(self):
        # Used as a decorator, the module attribute named like `func` is this object, so pickle cannot find `func`
        # by name; pickle the decorated object by name instead.
        module, qualname = getattr(self.func, "__module__", None), getattr(self.func, "__qualname__", "")
        if module and _resolve(module, qualname) is self:
            return _resolve, (module, qualname)
        return ProcessReward, (self.func,)


def _resolve(module: str, qualname: str):
    try:
        return functools.reduce(getattr, qualname.split("."), importlib.import_module(module))
    except (ImportError, AttributeError):
        return None


def process_reward(func: Callable) -> ProcessReward:
    """Decorator: mark ``func`` as a process reward returning ``(end, score)`` pairs per completion."""
    return func if isinstance(func, ProcessReward) else ProcessReward(func)


def is_process_reward(func) -> bool:
    """Whether ``func`` (possibly inside ``functools.partial``, as the registry binds ``reward_kwargs``) is one."""
    while isinstance(func, functools.partial):
        func = func.func
    return bool(getattr(func, "is_process_reward", False))


def completion_text(completion) -> str:
    """The text of a completion as reward functions get it: a string, or the content of a one-message conversation."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and len(completion) == 1 and isinstance(completion[0].get("content"), str):
        return completion[0]["content"]
    raise ValueError(
        "Process rewards need each completion as text or as one assistant message with string content, got "
        f"{completion!r:.200}."
    )
