"""Load GSM8K (or a file shaped like it) into the conversational ``prompt``/``answer`` shape GDPO trains on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.formats import check_gsm8k_columns, read_raw
from gdpo_trl.rewards.gsm8k import parse_number

if TYPE_CHECKING:
    import datasets

# Kept short on purpose: the tiny test model tokenizes it one character at a time.
SYSTEM_PROMPT = (
    "Reason step by step inside <think>...</think>, then give only the final integer "
    "inside <answer>...</answer>. Example:\n<think>...</think>\n<answer>42</answer>"
)

SAMPLE_PATH = Path(__file__).parent / "gsm8k_sample.jsonl"


def make_prompt(question: str, system_prompt: str = SYSTEM_PROMPT) -> list[dict]:
    """Return the conversational prompt (system prompt, then the question as the user turn)."""
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": question}]


def with_system_prompt(dataset: datasets.Dataset, system_prompt: str | None) -> datasets.Dataset:
    """``dataset`` with every prompt's system message set to ``system_prompt`` (inserted first where a prompt has
    none); unchanged when ``system_prompt`` is ``None``. Works on any loader's output (GSM8K, synthetic, warm start),
    which is how a recipe's ``system_prompt`` reaches training and ``gdpo eval`` alike.

    Raises ``ValueError`` for an empty or blank ``system_prompt`` (a recipe typo, not a wish for no system turn).
    """
    if system_prompt is None:
        return dataset
    if not isinstance(system_prompt, str) or not system_prompt.strip():
        raise ValueError(f"system_prompt must be a non-blank string or null, got {system_prompt!r}")
    system = {"role": "system", "content": system_prompt}

    def replace(row: dict) -> dict:
        turns = [turn for turn in row["prompt"] if turn["role"] != "system"]
        return {"prompt": [system, *turns]}

    return dataset.map(replace, desc="system prompt")


def parse_gold_answer(solution: str, row: int | None = None) -> str:
    """Return the gold answer of a GSM8K solution: the text after its last ``####``, stripped.

    Raises ``InputError`` (a ``ValueError``, naming ``row`` when given) if the solution is not a string, has no
    ``####``, nothing follows it, or what follows is not a plain number (``seventy-two``, ``5 dollars``, ``1e3``):
    the correctness reward could never match it, so that row would train with correctness stuck at 0.
    """
    where = f"row {row}" if row is not None else "solution"
    if not isinstance(solution, str):
        raise InputError(
            f"GSM8K {where}: 'answer' is {solution!r} ({type(solution).__name__}); it must be a solution string "
            "ending in '#### <number>', e.g. '... so 72 clips.\\n#### 72'."
        )
    _, sep, tail = solution.rpartition("####")
    gold = tail.strip()
    if not sep or not gold:
        problem = "has no '####' marker" if not sep else "has nothing after its last '####'"
        raise InputError(f"GSM8K {where} {problem}; solution starts with: {solution[:80]!r}")
    if parse_number(gold) is None:
        raise InputError(
            f"GSM8K {where}: gold answer {gold!r} is not a plain number (digits, optional sign, thousands commas, "
            "decimals), so no completion could ever match it; write it as '#### 72'."
        )
    return gold


def check_rows(questions: list, solutions: list) -> None:
    """Check every row before any is converted, so a bad one fails the load naming its index and value."""
    for index, (question, solution) in enumerate(zip(questions, solutions, strict=True)):
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"GSM8K row {index}: 'question' is {question!r}; it must be a non-empty string.")
        parse_gold_answer(solution, index)


def to_gdpo_example(row: dict, index: int) -> dict:
    """Map one raw GSM8K row (``question``, ``answer``) to ``{"prompt": [...], "answer": gold}``."""
    return {"prompt": make_prompt(row["question"]), "answer": parse_gold_answer(row["answer"], index)}


def load_gsm8k(
    source: str = "openai/gsm8k",
    split: str = "train",
    *,
    config: str = "main",
    limit: int | None = None,
) -> datasets.Dataset:
    """Load GSM8K-shaped data as a ``datasets.Dataset`` with ``prompt`` and ``answer`` columns.

    Args:
        source: a Hub dataset id (loaded with ``load_dataset(source, config, split=split)``), a local dataset
            folder, a local ``.json``/``.jsonl``/``.parquet`` file, or ``"sample"`` for the small sample shipped
            with this package (:data:`SAMPLE_PATH`).
        split: split to load from a Hub dataset or folder. Ignored for a single local file, which is all loaded.
        config: Hub dataset config (GSM8K has ``"main"`` and ``"socratic"``).
        limit: keep only the first ``limit`` rows.

    Every row must have a ``question`` and a GSM8K-style ``answer`` ending in ``#### N``; the gold answer becomes
    the ``answer`` column. Raises ``ValueError`` for missing columns or a malformed row (naming its index),
    ``FileNotFoundError`` for a local path that does not exist.
    """
    if limit is not None and limit < 0:
        raise InputError(f"limit must be >= 0 or None, got {limit}")
    raw = read_raw(str(SAMPLE_PATH) if source == "sample" else source, split, config, "GSM8K data")
    return gsm8k_rows(raw, source, limit)


def gsm8k_rows(raw: datasets.Dataset, source: str, limit: int | None = None) -> datasets.Dataset:
    """``raw`` GSM8K-shaped rows (``question``, ``answer``) as ``prompt``/``answer`` rows (see :func:`load_gsm8k`);
    every other column is dropped."""
    check_gsm8k_columns(raw.column_names, source)
    if "prompt" in raw.column_names:
        # Refused, not replaced or used: the file's author wrote those prompts on purpose, so dropping them would
        # lose them without a word, and using them would ignore `question` and `system_prompt`.
        raise InputError(
            f"GSM8K source {source!r} has a 'prompt' column of its own, which GSM8K-style rows would replace with "
            "one built from 'question' and system_prompt: drop or rename that column (a ToolRL-format file with "
            "its own prompts is read with dataset_name: toolrl and dataset_path)."
        )
    if limit is not None:
        raw = raw.select(range(min(limit, len(raw))))
    check_rows(raw["question"], raw["answer"])
    # Removing every original column drops extras; the new "answer" replaces the raw solution text.
    return raw.map(to_gdpo_example, with_indices=True, remove_columns=raw.column_names, desc="GSM8K -> GDPO")
