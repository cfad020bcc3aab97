"""Load tool-calling data in ToolRL's shape into the ``prompt``/``answer`` columns the tool rewards read.

A row holds ``prompt``: a list of chat messages (ToolRL: a system message that lists the tools and the output format,
then the user's request), and the gold assistant text: ``<think>`` with a placeholder, then the gold
``<tool_call>`` block (one ``{"name": ..., "parameters": {...}}`` per line) and/or ``<response>...</response>``.
The gold text is read from the column ``answer``, or from verl's ``reward_model.ground_truth`` (or a top-level
``ground_truth``), the shape of ToolRL's own parquet files. ToolRL's rows are not on the Hub: users download them
themselves; this package ships only :data:`SAMPLE_PATH`, rows written for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.data.files import BUILDERS, load_local_file, load_local_folder
from gdpo_trl.rewards.toolcall import parse_tool_calls

if TYPE_CHECKING:
    import datasets

SAMPLE_PATH = Path(__file__).parent / "toolrl_sample.jsonl"

# The format part of the system prompt, in our own words; the tools (JSON, one per line) go before it.
FORMAT_INSTRUCTIONS = """\
Answer in this format. First think inside <think>...</think>. Then, if a tool is needed, write <tool_call> on its \
own line, one JSON object per line of the form {"name": "<tool name>", "parameters": {<argument>: <value>, ...}}, \
and </tool_call> on its own line. If you also have something to say to the user, or need no tool at all, write it \
inside <response>...</response> on the line after. Call only the tools listed above."""


def system_prompt(tools: list[dict]) -> str:
    """The system message for a request that may use ``tools`` (JSON schemas): the tools, then the format."""
    listing = "\n".join(json.dumps(tool) for tool in tools)
    return f"You can call these tools:\n{listing}\n\n{FORMAT_INSTRUCTIONS}"


def make_prompt(tools: list[dict], request: str) -> list[dict]:
    """``[system, user]`` messages for ``request`` with ``tools``, in the training format."""
    return [{"role": "system", "content": system_prompt(tools)}, {"role": "user", "content": request}]


def _gold_text(row: dict):
    if row.get("answer") is not None:
        return row["answer"]
    reward_model = row.get("reward_model")
    if isinstance(reward_model, dict) and reward_model.get("ground_truth") is not None:
        return reward_model["ground_truth"]
    return row.get("ground_truth")


def _problem(row: dict) -> str | None:
    """What is wrong with one raw row, or ``None``."""
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        return "'prompt' must be a non-empty list of {role, content} messages"
    if not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in prompt
    ):
        return "every message of 'prompt' needs a string 'role' and a string 'content'"
    if prompt[-1]["role"] != "user":
        return f"'prompt' must end with the user's message, not a {prompt[-1]['role']!r} one"
    gold = _gold_text(row)
    if not isinstance(gold, str):
        return "no gold assistant text: expected a string in 'answer' (or 'reward_model.ground_truth')"
    if "<tool_call>" in gold:
        calls = parse_tool_calls(gold)
        ok = calls is not None and all(
            isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("parameters"), dict)
            for c in calls
        )
        if not ok:
            return "the gold <tool_call> block is not one JSON object {name, parameters: {...}} per line"
    return None


def _load_raw(source: str, split: str) -> tuple[datasets.Dataset, str]:
    import datasets

    if source == "sample":
        source = str(SAMPLE_PATH)
    path = Path(source).expanduser()
    if path.suffix.lower() in BUILDERS or path.exists() or source.startswith((".", "/", "~")):
        if path.is_dir():
            return load_local_folder(path, split, None, "ToolRL data"), str(path)
        return load_local_file(path, "ToolRL data"), str(path)
    return datasets.load_dataset(source, split=split), source  # a Hub id, for users who mirror the data


def load_toolrl(source: str = "sample", split: str = "train", *, limit: int | None = None) -> datasets.Dataset:
    """ToolRL-shaped rows as a ``datasets.Dataset`` with exactly the columns ``prompt`` and ``answer``.

    Args:
        source: ``"sample"`` (the rows shipped here), a local ``.parquet``/``.jsonl``/``.json`` file (ToolRL's
            ``rlla_4k/train.parquet``, for one), a local dataset folder, or a Hub dataset id.
        split: split of a Hub dataset or folder; a single file is loaded whole.
        limit: keep only the first ``limit`` rows.

    Raises:
        ValueError: naming the source and the row, for a malformed prompt or gold text (checked on every row: a
            malformed gold call would otherwise fail in the middle of training).
        FileNotFoundError: for a local path that does not exist.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    raw, where = _load_raw(source, split)
    if "prompt" not in raw.column_names:
        raise ValueError(f"ToolRL source {where} has no 'prompt' column; found columns {raw.column_names}")
    if limit is not None:
        raw = raw.select(range(min(limit, len(raw))))
    for index, row in enumerate(raw):
        problem = _problem(row)
        if problem is not None:
            raise ValueError(f"ToolRL source {where}, row {index}: {problem}")
    return raw.map(
        lambda row: {
            "prompt": [{"role": m["role"], "content": m["content"]} for m in row["prompt"]],
            "answer": _gold_text(row),
        },
        remove_columns=raw.column_names,
        desc="ToolRL -> GDPO",
    )
