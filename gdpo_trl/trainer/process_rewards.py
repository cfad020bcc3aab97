"""What ``GDPOTrainer`` does with process rewards (:mod:`gdpo_trl.rewards.process`) before the advantages.

It swaps each process reward for a :class:`ProcessRewardSlot` (TRL needs one float per completion), checks each
reward's steps, maps step ends (character offsets) to tokens, and refuses loss settings that need one advantage per
completion. The token-level reward tensors are built in :mod:`gdpo_trl.trainer.token_rewards`.
"""

from __future__ import annotations

import bisect
import functools
import math
import numbers
import warnings
from collections.abc import Callable, Sequence

from gdpo_trl.rewards.process import Steps, completion_text, is_process_reward
from gdpo_trl.trainer.reward_checks import RewardTimeoutError, call_with_timeout, private_inputs, reward_error


def check_process_output(output, texts: Sequence[str], name: str) -> list[Steps]:
    """Validate a process reward's output for ``texts``; return it as lists of ``(end, score)`` (``[]`` for None).

    Raises ``ValueError`` naming the function: not one entry per completion, an entry that is not a list of pairs,
    an ``end`` outside ``1..len(text)`` or not an int, a score that is not a finite number.
    """
    if isinstance(output, (str, bytes)) or not hasattr(output, "__len__") or len(output) != len(texts):
        got = f"{len(output)} entries" if hasattr(output, "__len__") else type(output).__name__
        raise ValueError(
            f"Process reward '{name}' returned {got} for {len(texts)} completions; it must return one list of "
            "(end, score) pairs (or None) per completion, in order."
        )
    checked = []
    for i, (steps, text) in enumerate(zip(output, texts, strict=True)):
        if steps is None:
            checked.append([])
            continue
        if isinstance(steps, (str, bytes, numbers.Number)) or not hasattr(steps, "__iter__"):
            raise ValueError(
                f"Process reward '{name}' returned {steps!r} for completion {i}; expected a list of (end, score) "
                "pairs, or None when it does not apply (a single score per completion is an outcome reward: drop "
                "the process_reward mark)."
            )
        pairs = []
        for step in steps:
            if not (isinstance(step, Sequence) and len(step) == 2):
                raise ValueError(
                    f"Process reward '{name}' returned step {step!r} for completion {i}; use (end, score)."
                )
            end, score = step
            if isinstance(end, bool) or not isinstance(end, numbers.Integral) or not 1 <= end <= len(text):
                raise ValueError(
                    f"Process reward '{name}' returned step end {end!r} for completion {i} of {len(text)} characters; "
                    f"an end is a character offset in 1..{len(text)} (the step is text[:end])."
                )
            if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
                raise ValueError(
                    f"Process reward '{name}' returned score {score!r} for completion {i}; scores must be finite "
                    "numbers (leave a step out instead of scoring it None)."
                )
            pairs.append((int(end), float(score)))
        checked.append(pairs)
    return checked


def step_token_indices(
    ends: Sequence[int], num_tokens: int, char_ends: Sequence[int] | Callable[[int], int]
) -> list[int]:
    """For each character offset ``end``, the index of the token that completes character ``end - 1``.

    ``char_ends[j]`` is the number of characters of the decoded completion that tokens ``0..j`` complete
    (non-decreasing; :func:`gdpo_trl.trainer.token_offsets.token_char_ends` computes it from the generated ids, in linear
    time), so the token is the first ``j`` with ``char_ends[j] >= end``, found by bisection. A byte-level character
    split across tokens thus belongs to its last byte's token. The old form, a callable ``prefix_length(m)`` giving
    the length of ``decode(ids[:m])``, is still accepted (called ``O(log T)`` times per step; a character split
    across tokens then lands on its first token). Raises ``ValueError`` for an ``end`` beyond the decoded text.
    """
    if callable(char_ends):
        from gdpo_trl.trainer.token_offsets import LazyCharEnds

        prefix_length = char_ends
        char_ends = LazyCharEnds(num_tokens, lambda j: prefix_length(j + 1))
    total = char_ends[num_tokens - 1] if num_tokens else 0
    indices = []
    for end in ends:
        if total < end:
            raise ValueError(f"step end {end} is past the decoded completion ({total} characters).")
        indices.append(bisect.bisect_left(char_ends, end, 0, num_tokens))
    return indices


class ProcessRewardSlot:
    """What ``GDPOTrainer`` hands TRL in place of a process reward: TRL needs one float per completion.

    Calling it runs the process reward, validates its steps (kept in ``self.steps`` for the trainer, this process's
    completions only) and returns each completion's mean step score (``None`` without steps): the number TRL logs as
    ``rewards/<name>/mean`` and shows in the completions table. It never enters the advantages, which the trainer
    computes from the steps. ``is_process_reward`` is set so reward-checking wrappers leave it alone.
    """

    is_process_reward = True

    def __init__(self, func: Callable, name: str, timeout: float | None = None):
        self.func, self.__name__, self.timeout = func, name, timeout
        self.steps: list[Steps] | None = None
        self.texts: list[str] | None = None
        self.warned_empty = False
        self.local_warning = True  # False while GDPOTrainer's RewardWatch warns from every process's rows

    def __call__(self, completions, **kwargs):
        texts = [completion_text(c) for c in completions]
        own = private_inputs({"completions": completions, **kwargs})  # its own copies, as outcome rewards get
        try:  # the same watch as outcome rewards: named while slow, stopped at reward_timeout, exits made errors
            output = call_with_timeout(self.func, own, self.timeout, self.__name__)
        except RewardTimeoutError:
            raise
        except BaseException as error:  # noqa: BLE001 - re-raised with the function's name
            raise reward_error(self.__name__, error, kind="Process reward") from error
        self.steps, self.texts = check_process_output(output, texts, self.__name__), texts
        if texts and not any(self.steps) and self.local_warning and not self.warned_empty:  # as outcome rewards
            self.warned_empty = True
            warnings.warn(self.empty_warning(len(texts)), UserWarning, stacklevel=2)
        return [sum(s for _, s in steps) / len(steps) if steps else None for steps in self.steps]

    def empty_warning(self, count: int, where: str = "") -> str:
        """The warning for a batch of ``count`` completions (``where``: on which process) without a scored step."""
        return (
            f"Process reward '{self.__name__}' scored no step in any of the {count} completions of a batch{where}: it "
            "adds nothing to that batch's advantages. If it should apply, check the completions' format. Warned once."
        )

    def take(self) -> tuple[list[Steps], list[str]]:
        """This call's steps and texts, cleared so a stale batch can never be used twice."""
        if self.steps is None:
            raise RuntimeError(f"Process reward '{self.__name__}' has no steps: it was not called for this batch.")
        steps, texts, self.steps, self.texts = self.steps, self.texts, None, None
        return steps, texts


def _name(func) -> str:
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


def attach_process_rewards(
    reward_funcs: list, timeout: float | None = None
) -> tuple[list, list[tuple[int, ProcessRewardSlot]]]:
    """``reward_funcs`` with each process reward replaced by a :class:`ProcessRewardSlot` (calls limited to
    ``timeout`` seconds, as outcome rewards), and ``(column, slot)`` for each, in order. Without process rewards the
    list comes back as it was and the slots are ``[]``."""
    funcs, slots = list(reward_funcs), []
    for column, func in enumerate(funcs):
        if is_process_reward(func):
            funcs[column] = ProcessRewardSlot(func, _name(func), timeout)
            slots.append((column, funcs[column]))
    return funcs, slots


# Loss settings that cannot be right with advantages that differ from token to token, and why (the fix follows).
_SEQUENCE_LEVEL_SETTINGS = {
    "importance_sampling_level": (
        lambda args: args.importance_sampling_level == "sequence",
        "sequence-level importance sampling (GSPO) clips one ratio per completion, which per-token advantages of "
        "both signs in one completion make meaningless; set importance_sampling_level='token'",
    ),
    "loss_type": (
        lambda args: args.loss_type == "vespo",
        "VESPO picks its sequence-level weight by the sign of the completion's advantage, which per-token advantages "
        "do not have; use loss_type='dapo' (or 'grpo', 'bnpo', 'dr_grpo', 'cispo', 'sapo')",
    ),
    "off_policy_mask_threshold": (
        lambda args: args.off_policy_mask_threshold is not None,
        "the off-policy sequence mask drops whole completions with a negative advantage, which per-token "
        "advantages do not have; set off_policy_mask_threshold=None",
    ),
    "multi_objective_aggregation": (
        lambda args: args.multi_objective_aggregation != "normalize_then_sum",
        "process rewards are normalized per reward within each group (GDPO); set "
        "multi_objective_aggregation='normalize_then_sum'",
    ),
}


def check_process_settings(args, reward_funcs: list, slots: list, **trainer_kwargs) -> None:
    """Fail at construction, with the fix, when process rewards meet settings they cannot train with correctly.

    ``args`` is the trainer's config, ``reward_funcs`` the list after :func:`attach_process_rewards` (and reward
    conditions), ``trainer_kwargs`` the trainer's other keyword arguments (``tools``, ``environment_factory``).
    """
    if not slots:
        return
    names = [slot.__name__ for _, slot in slots]
    for field, (applies, why) in _SEQUENCE_LEVEL_SETTINGS.items():
        if applies(args):
            raise ValueError(
                f"Process rewards {names} need token-level advantages, but {field}={getattr(args, field)!r}: {why}."
            )
    if trainer_kwargs.get("tools") or trainer_kwargs.get("environment_factory"):
        raise ValueError(
            f"Process rewards {names} cannot be used with tools or environments: tool results inside a completion "
            "shift the character offsets of its steps. Use outcome rewards there."
        )
    for func in reward_funcs:
        parts = [getattr(func, "reward", None), getattr(func, "on", None)]
        if any(part is not None and is_process_reward(part) for part in parts):
            raise ValueError(
                f"Reward condition {func!r} involves a process reward, whose output is a list of steps, not one "
                "number per completion: condition only outcome rewards."
            )
