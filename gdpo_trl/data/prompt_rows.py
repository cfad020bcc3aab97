"""Rows that bring their own ``prompt``: checked, given the recipe's system prompt where it sets one, and otherwise
used as they are, every other column kept for the rewards (TRL passes each to a reward function by name).

A ``prompt`` is text (TRL's standard format: the model continues it, no chat template) or a list of chat messages
``{"role", "content"}`` (the conversational format: the tokenizer's chat template renders it). A value of neither
kind is refused naming its row, before the model loads. A dataset without the column at all, or without a column one
of its rewards requires, is refused where the rewards are prepared (:func:`check_train_rows`, called by
:mod:`gdpo_trl.trainer.reward_pipeline` for ``GDPOTrainer`` and ``gdpo train`` alike), rather than fail inside TRL's
first batch with a ``KeyError`` or a ``TypeError``.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.prompt_shapes import argument_column_problem, prompt_shape_problem
from gdpo_trl.rewards import reward_name

if TYPE_CHECKING:
    import datasets

# What TRL 1.16 passes every reward function besides the dataset's columns (GRPOTrainer._calculate_rewards).
TRL_REWARD_ARGUMENTS = (
    "prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments",
)  # fmt: skip


def prompt_problem(prompt) -> str | None:
    """What is wrong with one row's ``prompt`` (None: nothing)."""
    if isinstance(prompt, str):
        return None if prompt.strip() else "is empty"
    if not isinstance(prompt, list) or not prompt:
        return f"is {str(prompt)[:60]!r} ({type(prompt).__name__}); it must be text or a list of chat messages"
    for turn in prompt:
        if not (isinstance(turn, dict) and isinstance(turn.get("role"), str) and "content" in turn):
            return f"holds {str(turn)[:60]!r}, not a chat message {{'role': ..., 'content': ...}}"
    return None


def check_prompts(prompts: list, source: str) -> None:
    """Refuse the first row whose prompt is neither text nor chat messages, naming it; then the first row of another
    kind than the first row's, or whose messages no chat template renders (:mod:`gdpo_trl.data.prompt_shapes`)."""
    for row, prompt in enumerate(prompts):
        if problem := prompt_problem(prompt):
            raise InputError(f"dataset {source!r} row {row}: 'prompt' {problem}. Fix or drop that row.")
    if problem := prompt_shape_problem(prompts, source):
        raise InputError(problem)


def with_system_message(rows: datasets.Dataset, system_prompt: str) -> datasets.Dataset:
    """Every prompt with ``system_prompt`` as its system message: chat prompts have theirs replaced (or one put
    first), text prompts become a chat of that system message and the text as the user's turn (a system message
    needs the chat template)."""
    from gdpo_trl.data.gsm8k import with_system_prompt

    if len(rows) and isinstance(rows[0]["prompt"], str):
        system = {"role": "system", "content": system_prompt}
        return rows.map(lambda row: {"prompt": [system, {"role": "user", "content": row["prompt"]}]}, desc="chat")
    return with_system_prompt(rows, system_prompt)


def prompt_rows(
    raw: datasets.Dataset, source: str, limit: int | None = None, system_prompt: str | None = None
) -> datasets.Dataset:
    """The first ``limit`` rows of ``raw`` (all by default), prompts checked, every column kept."""
    if limit is not None:
        raw = raw.select(range(min(limit, len(raw))))
    check_prompts(raw["prompt"], source)
    return raw if system_prompt is None else with_system_message(raw, system_prompt)


def check_prompt_column(dataset, name: str = "train_dataset") -> None:
    """Refuse a dataset without a ``prompt`` column in one line (TRL reads ``row["prompt"]`` at its first batch and
    fails there with a ``KeyError`` deep in its sampler). A streaming dataset whose columns are unknown passes."""
    columns = getattr(dataset, "column_names", None)
    if dataset is None or not isinstance(columns, list) or "prompt" in columns:
        return
    gsm8k = " (GSM8K's question/answer rows: gdpo_trl.data.sources.load_source turns them into prompts)"
    raise InputError(
        f"{name} has no 'prompt' column (columns: {columns}): GDPOTrainer, like TRL's GRPOTrainer, samples "
        "completions of each row's 'prompt' (text or chat messages); rename the column holding the prompts"
        f"{gsm8k if 'question' in columns else ''}."
    )


def missing_reward_arguments(func, columns: list[str]) -> list[str]:
    """The arguments ``func`` requires (no default) that TRL will not pass it: neither one of TRL's own
    (:data:`TRL_REWARD_ARGUMENTS`) nor a dataset column. Empty where its signature cannot be read."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return []
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name
        for p in parameters
        if p.kind in named and p.default is p.empty and p.name not in TRL_REWARD_ARGUMENTS and p.name not in columns
    ]


def check_reward_columns(dataset, reward_funcs: list) -> None:
    """A reward that requires a column the rows lack (a GSM8K file's extra column dropped on the way, a name
    misspelt): TRL would call it with a ``TypeError`` at the first step, after the model loaded."""
    columns = getattr(dataset, "column_names", None)
    if not isinstance(columns, list):
        return  # a streaming dataset: its columns are known once read
    for func in reward_funcs:
        if callable(func) and (missing := missing_reward_arguments(func, columns)):
            raise InputError(
                f"reward {reward_name(func)!r} requires the argument {missing[0]!r}, which is not a column of the "
                f"dataset (columns: {columns}): TRL passes a reward prompts, completions, completion_ids and each "
                "other column by name. Add the column (a GSM8K-style file keeps only question and answer: give "
                "it a 'prompt' column to keep every column), or give the argument a default."
            )


def read_columns(func, columns: list[str]) -> list[str]:
    """The dataset columns ``func`` names as arguments (with a default or without), TRL's own arguments aside."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return []
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in parameters if p.kind in named and p.name in columns and p.name not in TRL_REWARD_ARGUMENTS]


def is_missing(value) -> bool:
    """A row's value for a column it does not have: None (a JSON row without the key, or null; an empty CSV field)
    or NaN (an empty field of a numeric CSV column)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def check_missing_values(dataset, reward_funcs: list) -> None:
    """Rows without a value for a column a reward reads: every row, refused (the reward could read nothing); some
    rows, warned about in one line naming the first (the reward gets None there: meant where rows of several tasks
    are mixed, a mistake in a file with a gap). Before, TRL passed the None and the reward raised or scored 0."""
    columns = getattr(dataset, "column_names", None)
    if not isinstance(columns, list) or not hasattr(dataset, "__len__") or not len(dataset):
        return
    seen: dict[str, list[int]] = {}
    for func in reward_funcs:
        for column in read_columns(func, columns):
            if column not in seen:
                seen[column] = [row for row, value in enumerate(dataset[column]) if is_missing(value)]
            missing, name, count = seen[column], reward_name(func), len(dataset)
            if len(missing) == count:
                raise InputError(
                    f"reward {name!r} reads the column {column!r}, which no row of the dataset has a value for (all "
                    f"{count} missing or null): fill it in, or drop the reward."
                )
            if missing:
                warnings.warn(
                    f"reward {name!r} reads the column {column!r}, which {len(missing)} of {count} rows have no value "
                    f"for (missing or null; the first: row {missing[0]}): the reward gets None there. Fill them in, "
                    "or drop those rows (where rows of another task are mixed in, have the reward return None "
                    "for them).",
                    UserWarning,
                    stacklevel=1,  # this file's: gdpo train prints the package's warnings as one line
                )
                seen[column] = []  # said once per column


def check_train_rows(dataset, reward_funcs, environments: bool = False, rollout_fields: bool = False) -> None:
    """What ``GDPOTrainer`` checks of its ``train_dataset`` when it is built: no column named like an argument TRL
    passes the rewards itself, a ``prompt`` column, and every column a reward requires (``reward_funcs``: a list, one
    callable, or reward model ids, which need none).

    As TRL does: with ``environments`` (an ``environment_factory``) a row needs no ``prompt``, each environment's
    ``reset()`` supplies it (a multi-environment dataset may hold only its ``environment`` column); with
    ``rollout_fields`` (a ``rollout_func``) a reward's argument may come from the extra fields the function returns,
    which TRL passes the rewards by name, so the arguments are not checked against the columns."""
    columns = getattr(dataset, "column_names", None)
    if isinstance(columns, list) and (problem := argument_column_problem(columns, "train_dataset")):
        raise InputError(problem)
    if not environments:
        check_prompt_column(dataset)
    funcs = reward_funcs if isinstance(reward_funcs, (list, tuple)) else [reward_funcs]
    funcs = [func for func in funcs if callable(func)]
    if not rollout_fields:
        check_reward_columns(dataset, funcs)
    check_missing_values(dataset, funcs)
