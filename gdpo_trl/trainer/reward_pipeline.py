"""A run's rewards, prepared once and watched after each batch: the one path every reward takes to ``GDPOTrainer``.

1. Names become callables in the registry (:func:`gdpo_trl.rewards.get_reward_funcs`: registry names,
   ``pkg.module.function``, ``pkg.module:function``, ``path/to/rewards.py:function``); ``gdpo train`` checks their
   spelling before torch loads (:func:`gdpo_trl.rewards.check_reward_spec`).
2. :func:`prepare_rewards` turns the callables into what TRL calls, once per run: the rows checked first (a
   ``prompt`` column, every column a reward requires: :func:`gdpo_trl.data.prompt_rows.check_train_rows`),
   ``reward_conditions`` applied (Eq. 8), each process reward swapped for its slot, the settings process rewards
   need checked, every plain function wrapped in :class:`~gdpo_trl.trainer.reward_checks.CheckedReward` (named when
   it raises, hangs or returns the wrong shape; given its own copies of its inputs). It calls no reward, so ``gdpo
   train`` runs it before the model and the rows load (:func:`gdpo_trl.run.checks.check_rewards`), checks the rows
   with the prepared object once they load (:meth:`PreparedRewards.check_rows`) and hands that object to
   ``GDPOTrainer``, which prepares only the raw callables a Python caller gives it.
3. :class:`RewardWatch` settles, after each batch and on every process alike, what the gathered rewards say (as
   :class:`~gdpo_trl.trainer.tool_watch.ToolWatch` does for tools): a reward that returned None/NaN for a whole
   process's batch, or a process reward that scored no step in it (warned once, naming the process), and a
   reward with no spread in any group for :data:`SILENT_BATCHES` training batches in a row. A reward still
   running is named while it runs, by its wrapper's thread: a notice after the batch would come too late for a
   reward that never returns.

Why gathered: under N processes each process calls a reward on its own share of the batch and only the main process's
warnings reach the console, so a reward silent on rank 1 alone went unreported. TRL 1.16's ``_calculate_rewards``
returns the rewards gathered across processes (``[N_global, K]``, rank order, each process's rows contiguous, None
as NaN): every process sees every process's rows, and the main process warns.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from gdpo_trl.data.prompt_rows import check_train_rows
from gdpo_trl.rewards.conditioned import apply_reward_conditions
from gdpo_trl.trainer.process_rewards import ProcessRewardSlot, attach_process_rewards, check_process_settings
from gdpo_trl.trainer.reward_checks import CheckedReward, check_reward_funcs, empty_warning

SILENT_BATCHES = 3  # training batches in a row with no spread in any group before a reward is named


@dataclass
class PreparedRewards:
    """What :func:`prepare_rewards` hands TRL: ``funcs`` (None: the environment owns the reward), the ``(column,
    slot)`` of each process reward, the calls' time limit (``reward_timeout``), and ``given``: the reward functions
    as they were given, before any wrapper (what the rows are checked against)."""

    funcs: list | None
    process_slots: list[tuple[int, ProcessRewardSlot]] = field(default_factory=list)
    timeout: float | None = None
    given: list = field(default_factory=list)
    row_options: dict = field(default_factory=dict)  # check_train_rows' environments and rollout_fields

    def __post_init__(self):
        self.count = len(self.funcs or [])  # TRL appends to this very list: how many were ours

    def check_rows(self, dataset) -> None:
        """The training rows against these rewards: a ``prompt`` column, and every column a reward requires (as
        the trainer's other arguments allow: an environment's ``reset()`` may supply the prompt)."""
        check_train_rows(dataset, self.given, **self.row_options)

    def with_trl_additions(self, funcs: list, names: list[str]) -> list:
        """TRL's final reward list: ours, then what TRL appended in its constructor (an environment's ``get_reward``,
        one per environment class, named after it), wrapped as ours were, under TRL's names."""
        ours = self.count
        return list(funcs[:ours]) + check_reward_funcs(funcs[ours:], self.timeout, names=names[ours:])


def prepare_rewards(reward_funcs, args, **trainer_kwargs) -> PreparedRewards:
    """``reward_funcs`` (a callable, a list, or None) as TRL will call them under ``args`` (a ``GDPOConfig``):
    the rows checked against them where ``trainer_kwargs`` holds a ``train_dataset``, conditions applied, process
    rewards in their slots, every plain function checked. ``trainer_kwargs``: the trainer's other arguments
    (``train_dataset``; ``tools``, ``environment_factory``, which process rewards cannot be used with).

    Raises ``InputError`` for rows that lack a column, a condition naming an unknown reward, ``ValueError`` for
    process rewards with settings they cannot train with. Calls no reward.
    """
    row_options = {
        "environments": trainer_kwargs.get("environment_factory") is not None,  # reset() may supply the prompt
        "rollout_fields": trainer_kwargs.get("rollout_func") is not None,  # its extra fields reach the rewards
    }
    if "train_dataset" in trainer_kwargs:  # gdpo train checks its rows once they load (PreparedRewards.check_rows)
        check_train_rows(trainer_kwargs["train_dataset"], reward_funcs, **row_options)
    if reward_funcs is None:
        return PreparedRewards(None, [], args.reward_timeout, [], row_options)
    given = list(reward_funcs) if isinstance(reward_funcs, list) else [reward_funcs]
    funcs = apply_reward_conditions(given, args.reward_conditions)
    funcs, slots = attach_process_rewards(funcs, args.reward_timeout)
    check_process_settings(args, funcs, slots, **trainer_kwargs)
    checked = check_reward_funcs(funcs, args.reward_timeout)
    return PreparedRewards(checked, slots, args.reward_timeout, given, row_options)


def silent_slices(rewards: torch.Tensor, per_process: int) -> dict[int, list[int]]:
    """``{reward column: [process indices whose rows are all NaN]}`` for the gathered ``rewards``."""
    found: dict[int, list[int]] = {}
    if per_process <= 0:
        return found
    empty = torch.isnan(rewards).reshape(-1, per_process, rewards.shape[1]).all(dim=1)  # [processes, K]
    for process, column in empty.nonzero().tolist():
        found.setdefault(column, []).append(process)
    return found


def silent_columns(rewards: torch.Tensor, num_generations: int) -> list[bool]:
    """Per reward column of ``rewards`` ``[N, K]``: no group has two different values (NaN ignored), and some group
    has a value (a reward that applies to no row is warned about as None/NaN instead)."""
    groups = rewards.reshape(-1, num_generations, rewards.shape[1])
    valid = ~torch.isnan(groups)
    high = torch.where(valid, groups, -torch.inf).amax(dim=1)
    low = torch.where(valid, groups, torch.inf).amin(dim=1)
    spread = (valid.sum(dim=1) >= 2) & (high > low)  # [groups, K]
    return [bool(not spread[:, k].any() and valid[:, :, k].any()) for k in range(rewards.shape[1])]


class RewardWatch:
    """One trainer's rewards after each batch: ``funcs`` as TRL calls them, ``names`` as TRL logs them."""

    def __init__(self, funcs: list, names: list[str]):
        self.names = list(names)
        self.checked = {k: f for k, f in enumerate(funcs) if isinstance(f, (CheckedReward, ProcessRewardSlot))}
        self.streak = [0] * len(self.names)  # training batches in a row without spread, per reward

    @contextmanager
    def scoring(self):
        """While a batch is scored the wrappers keep quiet about a None/NaN batch: :meth:`settle` warns from every
        process's rows instead (called directly, outside training, a wrapper warns itself)."""
        for func in self.checked.values():
            func.local_warning = False
        try:
            yield
        finally:
            for func in self.checked.values():
                func.local_warning = True

    def settle(self, accelerator, rewards: torch.Tensor, per_process: int, num_generations: int, train: bool) -> None:
        """After a batch, on every process (the same decisions everywhere): ``rewards`` gathered ``[N_global, K]``,
        ``per_process`` rows from each process; warnings from the main process only."""
        self.check_empty(rewards, per_process, accelerator.num_processes, accelerator.is_main_process)
        if train:
            self.check_spread(rewards, num_generations, warn=accelerator.is_main_process)

    def check_empty(self, rewards: torch.Tensor, per_process: int, processes: int, warn: bool) -> None:
        """Each checked reward whose rows of some process were all None/NaN (a process reward: no step scored),
        warned once for the run."""
        for column, ranks in silent_slices(rewards, per_process).items():
            func = self.checked.get(column)
            if func is None or func.warned_empty:
                continue
            func.warned_empty = True  # on every process, so that none warns later
            if warn:
                where = "" if processes == 1 else f" on process {ranks[0]} of {processes}"
                if isinstance(func, ProcessRewardSlot):
                    message = func.empty_warning(per_process, where)
                else:
                    message = empty_warning(func.__name__, per_process, where)
                warnings.warn(message, UserWarning, stacklevel=3)

    def check_spread(self, rewards: torch.Tensor, num_generations: int, warn: bool) -> None:
        """Count, per reward, the training batches in a row in which it had no spread; warn once per silent
        stretch (at the start of a run, and again if a later stretch goes silent after the reward had spread)."""
        if rewards.dim() != 2 or num_generations < 2 or rewards.shape[1] != len(self.names):
            return
        for k, silent in enumerate(silent_columns(rewards, num_generations)):
            self.streak[k] = self.streak[k] + 1 if silent else 0
            if self.streak[k] == SILENT_BATCHES and warn:
                values = rewards[:, k][~torch.isnan(rewards[:, k])].unique().tolist()
                shown = f" (every value {values[0]:g})" if len(values) == 1 else ""
                warnings.warn(
                    f"Reward '{self.names[k]}' scored every completion of each group alike for {SILENT_BATCHES} "
                    f"batches in a row{shown}: it gives no signal, so it trains nothing. Likely it cannot read these "
                    "completions (a GSM8K reward on tool-call or agent rollouts, a format the model never writes), or "
                    f"every completion already meets it; rewards/{self.names[k]}/frac_zero_std logs it per step. "
                    "Warned again only if it goes silent again after giving signal.",
                    UserWarning,
                    stacklevel=3,
                )
