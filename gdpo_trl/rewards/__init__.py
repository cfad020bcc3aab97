"""Registry of reward functions, looked up by short name, by import path or by file (``path/to/rewards.py:fn``).

Built-in names: ``"format"``, ``"correctness"`` and ``"integer"`` (see :mod:`gdpo_trl.rewards.gsm8k`),
``"reasoning_format"`` (the layout with written work in the think block: :mod:`gdpo_trl.rewards.reasoning`), ``"length"``
(:func:`length_reward`, below), ``"tool_format"`` and ``"tool_correctness"`` (see
:mod:`gdpo_trl.rewards.toolcall`), ``"agent_success"``, ``"agent_format"``, ``"agent_cost"``, ``"arith_format"`` and
``"arith_correctness"`` (see :mod:`gdpo_trl.rewards.agent`). Other modules
add theirs with :func:`register_reward`. Stdlib-only on purpose: importing this package must not need torch or trl.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from collections import Counter
from collections.abc import Callable

from gdpo_trl.core.errors import InputError
from gdpo_trl.rewards.gsm8k import correctness_reward, extract_answer, format_reward, integer_reward
from gdpo_trl.rewards.locate import check_path_spec, import_reward
from gdpo_trl.rewards.toolcall import tool_correctness, tool_format

__all__ = [
    "REWARD_FUNCS",
    "check_reward_spec",
    "correctness_reward",
    "extract_answer",
    "format_reward",
    "get_reward_func",
    "get_reward_funcs",
    "integer_reward",
    "length_reward",
    "register_reward",
    "tool_correctness",
    "tool_format",
]

REWARD_FUNCS: dict[str, Callable] = {}
DEFAULT_MAX_TOKENS = 512  # length_reward's budget unless a recipe's reward_kwargs set max_tokens


def length_reward(completions, completion_ids=None, max_tokens: int = DEFAULT_MAX_TOKENS, **kwargs) -> list[float]:
    """1.0 for each completion of at most ``max_tokens`` tokens (read from ``completion_ids``), else 0.0.

    On its own an easy reward that a policy can satisfy by saying nothing; the GDPO paper (Eq. 8) pays it only where
    the hard reward is met (:func:`gdpo_trl.rewards.conditioned.conditioned`). TRL passes ``completion_ids`` (one list
    of token ids per completion). Set ``max_tokens`` from a recipe with ``reward_kwargs: {length: {max_tokens: 256}}``,
    or in Python with ``functools.partial``.
    """
    if completion_ids is None:
        raise ValueError(
            "length_reward counts tokens from `completion_ids`, which TRL passes to reward functions; "
            "call it with completion_ids=[...] (one list of token ids per completion)."
        )
    if max_tokens < 1:
        raise ValueError(f"length_reward needs max_tokens >= 1, got {max_tokens}.")
    return [1.0 if len(ids) <= max_tokens else 0.0 for ids in completion_ids]


def register_reward(name: str, func: Callable) -> Callable:
    """Add ``func`` to :data:`REWARD_FUNCS` under ``name`` and return it.

    Raises:
        ValueError: if ``name`` is already taken, or contains a dot (dotted names are read as import paths, so such
            an entry could never be looked up).
        TypeError: if ``func`` is not callable.
    """
    if "." in name:
        raise ValueError(f"reward name {name!r} must not contain a dot: dotted names are treated as import paths")
    if name in REWARD_FUNCS:
        raise ValueError(f"reward name {name!r} is already registered (to {REWARD_FUNCS[name]!r})")
    if not callable(func):
        raise TypeError(f"reward {name!r} must be callable, got {type(func).__name__}")
    REWARD_FUNCS[name] = func
    return func


register_reward("format", format_reward)
register_reward("correctness", correctness_reward)
register_reward("integer", integer_reward)
register_reward("length", length_reward)
register_reward("reasoning_format", importlib.import_module("gdpo_trl.rewards.reasoning").reasoning_format_reward)
register_reward("equations", importlib.import_module("gdpo_trl.rewards.equations").equations_reward)
register_reward("tool_format", tool_format)
register_reward("tool_correctness", tool_correctness)
_agent = importlib.import_module("gdpo_trl.rewards.agent")  # multi-turn agents (docs/agents.md)
for _name in ("agent_success", "agent_format", "agent_cost", "arith_format", "arith_correctness"):
    register_reward(_name, getattr(_agent, _name))


def unknown_reward(name: str) -> InputError:
    known = ", ".join(sorted(REWARD_FUNCS))
    close = difflib.get_close_matches(name, list(REWARD_FUNCS), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return InputError(
        f"unknown reward {name!r}{hint}; known rewards: {known}. Custom reward functions can be given as a dotted "
        "import path, e.g. 'my_pkg.rewards.my_fn', or a file: 'path/to/rewards.py:my_fn'."
    )


def get_reward_func(name: str) -> Callable:
    """Return the reward function ``name`` names: a registry name (``"format"``), an import path
    (``my_pkg.rewards.my_fn`` or ``my_pkg.rewards:my_fn``; a module in the current folder needs no ``PYTHONPATH``)
    or a file and a function (``path/to/rewards.py:my_fn``); see :mod:`gdpo_trl.rewards.locate`.

    Raises:
        InputError (a ``ValueError``): in one line, for an unknown registry name (with the closest names), a module
            or file that is not there or fails to import, a missing attribute (with the nearest names) or one that is
            not callable.
    """
    if "." in name or ":" in name:
        return import_reward(name)
    try:
        return REWARD_FUNCS[name]
    except KeyError:
        raise unknown_reward(name) from None


def check_reward_spec(name: str) -> None:
    """What :func:`get_reward_func` would refuse in ``name`` and the files alone can tell, running no reward module:
    an unknown registry name, a missing module or file, a function its source does not define (each with the nearest
    names). For ``gdpo train``'s checks before torch is imported."""
    if "." in name or ":" in name:
        check_path_spec(name)
    elif name not in REWARD_FUNCS:
        raise unknown_reward(name)


def unwrap_partial(func: Callable) -> Callable:
    """The callable inside any layers of ``functools.partial``."""
    while isinstance(func, functools.partial):
        func = func.func
    return func


def reward_name(func: Callable) -> str:
    """The name TRL logs a reward under (``rewards/<name>/mean``): the callable's ``__name__`` after unwrapping
    ``functools.partial``, or its class name. Two different registry names can clash if they resolve to functions
    with the same name."""
    func = unwrap_partial(func)
    return getattr(func, "__name__", type(func).__name__)


def check_reward_kwargs(name: str, func: Callable, kwargs) -> None:
    """Raise ``ValueError`` when ``kwargs`` is not a dict or names an argument ``func`` does not declare.

    Only explicit parameters count: TRL passes every dataset column to a reward function, so most of them take
    ``**kwargs``, which would swallow a misspelled argument without a word.
    """
    if kwargs is None:
        return
    if not isinstance(kwargs, dict):
        raise InputError(f"reward_kwargs for {name!r} must be a mapping of argument to value, got {kwargs!r}")
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # some builtins and C callables have no signature to check against
        return
    declared = [p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    unknown = sorted(set(kwargs) - set(declared))
    if unknown:
        takes = [p for p in declared if p not in ("prompts", "completions", "completion_ids")]
        raise InputError(
            f"reward_kwargs for {name!r}: {reward_name(func)} has no argument {', '.join(map(repr, unknown))} "
            f"(it takes {takes or 'no keyword arguments'})"
        )


def get_reward_funcs(names: list[str], kwargs: dict[str, dict] | None = None) -> list[Callable]:
    """Resolve each of ``names`` with :func:`get_reward_func`, keeping order.

    ``kwargs`` maps a name to keyword arguments bound with ``functools.partial`` (a recipe's
    ``reward_kwargs: {length: {max_tokens: 256}}``); TRL still logs the reward under the function's own name.

    Raises:
        TypeError: if ``names`` is a single string rather than a list of names.
        ValueError: if a name is repeated, or two names resolve to callables TRL would log under the same metric
            name; if any name cannot be resolved; or if ``kwargs`` names an argument the function does not declare
            (see :func:`check_reward_kwargs`).
    """
    if isinstance(names, str):
        raise TypeError(f"expected a list of reward names, got the string {names!r}; wrap it in a list")
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise InputError(f"duplicate reward names {repeated}: TRL would log them under the same metric name")
    kwargs = dict(kwargs or {})
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise InputError(f"reward_kwargs names {unknown}, which are not among the reward functions {list(names)}")
    funcs = [get_reward_func(name) for name in names]
    for name, func in zip(names, funcs, strict=True):
        check_reward_kwargs(name, func, kwargs.get(name))
    funcs = [functools.partial(f, **kwargs[n]) if kwargs.get(n) else f for n, f in zip(names, funcs, strict=True)]
    seen: dict[str, str] = {}
    for name, func in zip(names, funcs, strict=True):
        metric = reward_name(func)
        if metric in seen:
            raise InputError(
                f"rewards {seen[metric]!r} and {name!r} are both named {metric!r}: TRL would log them under the same "
                "metric name"
            )
        seen[metric] = name
    return funcs
