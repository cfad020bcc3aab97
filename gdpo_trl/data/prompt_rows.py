"""Rows that bring their own ``prompt``: checked, given the recipe's system prompt where it sets one, and otherwise
used as they are, every other column kept for the rewards (TRL passes each to a reward function by name).

A ``prompt`` is text (TRL's standard format: the model continues it, no chat template) or a list of chat messages
``{"role", "content"}`` (the conversational format: the tokenizer's chat template renders it). A value of neither
kind is refused naming its row, before the model loads; ``GDPOTrainer`` refuses a dataset without the column at all
(:func:`check_prompt_column`) rather than fail inside TRL's first batch with a ``KeyError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError

if TYPE_CHECKING:
    import datasets


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
    """Refuse the first row whose prompt is neither text nor chat messages, naming it."""
    for row, prompt in enumerate(prompts):
        if problem := prompt_problem(prompt):
            raise InputError(f"dataset {source!r} row {row}: 'prompt' {problem}. Fix or drop that row.")


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
