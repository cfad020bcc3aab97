"""The shape of a dataset's prompts, checked row by row: one kind per dataset, and chat messages a text model's chat
template renders.

A ``prompt`` is text (the model continues it as it is) or a list of chat messages ``{"role", "content"}`` (the
tokenizer's chat template renders it). Data as people have it mixes the two (rows pasted from two sources), writes a
message's content as OpenAI's list of parts (``[{"type": "text", "text": ...}]``) or uses a role a template does not
know (``"human"``, ``"bot"``); each trained in silence or failed deep in the first batch: a mixed dataset is batched
as one kind (TRL decides by the first row), a list of parts is rendered as its Python text by Qwen2.5's template, an
unknown role is dropped or rendered as a user turn. :func:`prompt_shape_problem` names the first such row, before
the model loads (:func:`local_prompts` reads a local file's prompts without ``datasets``, so ``gdpo train`` answers
before torch is imported). So does :func:`argument_column_problem` for a column named like an argument TRL passes
every reward itself (``completions``, ``trainer_state``, ...): TRL would fail at the first step, or replace or drop
the column without a word. Stdlib only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from gdpo_trl.data.files import jsonl_lines

# Column names TRL 1.16's GRPOTrainer._calculate_rewards gives a meaning of its own when it calls the rewards, with
# what it does to a dataset column of that name: it passes its own value under that name (the call then fails with
# "got multiple values for keyword argument"), replaces the column by its own object, or leaves the column out.
TRL_ARGUMENT_COLUMNS = {
    "prompts": "passes its own prompts under that name, so the first reward call would fail (a keyword given twice)",
    "completions": "passes its own completions under that name, so the first reward call would fail (a keyword "
    "given twice)",
    "completion_ids": "leaves a column of that name out and passes the completions' token ids instead",
    "completion": "leaves a column of that name out: no reward would see it",
    "trainer_state": "replaces it by the trainer's state",
    "log_extra": "replaces it by its logging callback",
    "log_metric": "replaces it by its logging callback",
    "environments": "replaces it by the rollouts' environments",
}
# The roles chat templates know (Qwen2.5, Llama 3, SmolLM2, the tiny builtins): others are dropped or misrendered.
ROLES = ("system", "user", "assistant", "tool")
# A .json file is read whole for its prompts only below this size (the loader reads bigger ones).
PEEK_JSON_BYTES = 50_000_000


def argument_column_problem(columns, source: str) -> str | None:
    """The line for the first column named like an argument TRL gives the rewards itself (:data:`TRL_ARGUMENT_COLUMNS`),
    with a rename; None when there is none."""
    for column in columns or []:
        if column in TRL_ARGUMENT_COLUMNS:
            return (
                f"dataset {source!r} has a column {column!r}, a name TRL gives the reward functions itself: it "
                f"{TRL_ARGUMENT_COLUMNS[column]}. Rename the column (e.g. to 'reference_{column}') and the reward "
                "argument that reads it."
            )
    return None


def prompt_kind(prompt) -> str | None:
    """``"text"`` or ``"chat"`` (a list), else None (neither: :mod:`gdpo_trl.data.prompt_rows` names it)."""
    if isinstance(prompt, str):
        return "text"
    return "chat" if isinstance(prompt, list) else None


def message_problem(turn) -> str | None:
    """What a chat template cannot render in one message (None: nothing). Only the shapes this module is about: a
    message that is not a mapping with a role is :mod:`gdpo_trl.data.prompt_rows`' to name."""
    if not isinstance(turn, dict) or not isinstance(turn.get("role"), str):
        return None
    role, content = turn["role"], turn.get("content")
    if role not in ROLES:
        return (
            f"has the role {role!r}, which chat templates do not know (they take {', '.join(ROLES)}): rename it "
            "(e.g. 'human' -> 'user', 'bot' or 'gpt' -> 'assistant')"
        )
    if isinstance(content, list):
        kinds = sorted({str(part.get("type")) for part in content if isinstance(part, dict)})
        return (
            f"has its content as a list of parts (types {', '.join(kinds) or 'unknown'}), which a text model's chat "
            "template renders as Python text: write the content as one string (join the parts' text)"
        )
    return None


def prompt_shape_problem(prompts: Iterable, source: str) -> str | None:
    """The line for the first row of ``prompts`` whose kind differs from the first row's (text among chat
    messages, or the reverse) or whose messages a chat template cannot render; None when there is none."""
    first: tuple[int, str] | None = None
    for row, prompt in enumerate(prompts):
        kind = prompt_kind(prompt)
        if kind is None:
            continue
        if first is None:
            first = (row, kind)
        elif kind != first[1]:
            other = "text" if kind == "text" else "chat messages"
            return (
                f"dataset {source!r} mixes prompt kinds: row {first[0]} is {describe(first[1])} and row {row} is "
                f"{other}; TRL batches a dataset as one kind, so write every prompt one way (text as "
                '[{"role": "user", "content": ...}] to chat)'
            )
        if kind == "chat":
            for number, turn in enumerate(prompt):
                if problem := message_problem(turn):
                    return f"dataset {source!r} row {row}: 'prompt' message {number} {problem}."
    return None


def describe(kind: str) -> str:
    return "text" if kind == "text" else "chat messages"


def local_prompts(source: str) -> Iterator | None:
    """The ``prompt`` of each row of a local ``.jsonl`` or ``.json`` file, read without ``datasets`` (a line that is
    not a JSON object is skipped: the loader's check names it); None for other files and for names that are not
    local files (a Parquet or CSV column holds one kind)."""
    path = Path(source).expanduser()
    if not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl_prompts(path)
    if suffix == ".json" and path.stat().st_size < PEEK_JSON_BYTES:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if isinstance(data, list):
            return (row.get("prompt") for row in data if isinstance(row, dict))
        if isinstance(data, dict) and isinstance(data.get("prompt"), list):
            return iter(data["prompt"])
    return None


def _jsonl_prompts(path: Path) -> Iterator:
    for _, line in jsonl_lines(path):
        try:
            row = json.loads(line.decode("utf-8")) if line.strip() else None
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(row, dict):
            yield row.get("prompt")
