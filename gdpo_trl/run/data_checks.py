"""Checks of the loaded training rows against the recipe, before the model is built: would the run train at all,
and can each reward score these rows.

Without them, a dataset smaller than one generation batch trains 0 steps and saves the untouched model as the
result; a GSM8K reward on tool-calling rows (or a tool reward on GSM8K rows) scores every completion 0, so GDPO
normalizes a constant and trains on nothing; and a tool row whose gold calls a tool its prompt does not offer
teaches the model to call tools that do not exist; a reward that requires a column the rows lack is called with a
``TypeError`` at the first step. Each raises :class:`~gdpo_trl.core.errors.InputError` in one line
naming the reward or the row, and the fix.
"""

from __future__ import annotations

import json
import re

from gdpo_trl.core.errors import InputError
from gdpo_trl.rewards import REWARD_FUNCS, reward_name, unwrap_partial
from gdpo_trl.rewards.conditioned import parse_condition
from gdpo_trl.rewards.gsm8k import parse_number
from gdpo_trl.rewards.toolcall import parse_tool_calls

# Registry names of the rewards written for one kind of row.
GSM8K_REWARDS = ("correctness", "integer", "format")
TOOL_REWARDS = ("tool_format", "tool_correctness")
NEEDS_ANSWER = ("correctness", "tool_format", "tool_correctness")
TOOL_TAGS = ("<tool_call>", "<response>")
SOURCES_HINT = "dataset_name toolcall, toolrl_sample or toolrl (with dataset_path)"


def check_steps_per_epoch(dataset, training_args) -> None:
    """Refuse a dataset with fewer rows than the distinct prompts of one generation batch.

    TRL's ``RepeatSampler`` draws ``generation_batch_size // num_generations`` distinct prompts per generation and
    drops an incomplete last draw, so such a dataset yields no batch at all: the run stops at step 0 (or, training
    by epochs, fails inside transformers with a message about ``max_steps``).
    """
    if not hasattr(dataset, "__len__"):
        return  # a streaming dataset: its size is unknown
    generations = training_args.num_generations
    prompts = training_args.generation_batch_size // generations
    if len(dataset) >= prompts:
        return
    processes = training_args.world_size
    raise InputError(
        f"The dataset has {len(dataset)} rows, fewer than the {prompts} distinct prompts one generation batch takes "
        f"(per_device_train_batch_size {training_args.per_device_train_batch_size} x {processes} "
        f"process{'es' * (processes > 1)} x steps_per_generation {training_args.steps_per_generation} = "
        f"{training_args.generation_batch_size} completions / num_generations {generations}): TRL would train 0 "
        "steps. Use more rows (max_train_samples, synthetic_size), or lower per_device_train_batch_size, "
        "gradient_accumulation_steps or steps_per_generation."
    )


def registry_names(reward_funcs: list, conditions) -> set[str]:
    """Registry names of the built-in rewards among ``reward_funcs`` and of the rewards ``reward_conditions``
    gates on (a condition is scored on the same rows)."""
    by_func = {func: name for name, func in REWARD_FUNCS.items()}
    found = {by_func.get(unwrap_partial(func)) for func in reward_funcs if callable(func)}
    for spec in (conditions or {}).values():
        on = parse_condition(spec)[0]
        found.update(name for name, func in REWARD_FUNCS.items() if on in (name, reward_name(func)))
    return found - {None}


def is_tool_gold(answer) -> bool:
    return isinstance(answer, str) and any(tag in answer for tag in TOOL_TAGS)


def listed_tools(prompt) -> set[str] | None:
    """Names of the tools a prompt's system message offers, or None when it lists them in no form known here.

    Known forms: one JSON schema per line (``{"name": ..., ...}``, also OpenAI's ``{"function": {"name": ...}}``;
    ToolRL-style prompts written by :mod:`gdpo_trl.data.toolrl`), ``Name: <tool>`` lines, and a ``tools:`` line of
    ``name(arguments)`` items (the offline tool-calling task).
    """
    if isinstance(prompt, list):
        prompt = "\n".join(m.get("content") or "" for m in prompt if isinstance(m, dict) and m.get("role") == "system")
    if not isinstance(prompt, str):
        return None
    names = set()
    for line in prompt.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                schema = json.loads(line)
            except ValueError:
                continue
            schema = schema.get("function", schema) if isinstance(schema, dict) else None
            if isinstance(schema, dict) and isinstance(schema.get("name"), str):
                names.add(schema["name"])
        elif match := re.match(r"(?:\d+\.\s*)?Name:\s*([\w.\-]+)", line):
            names.add(match.group(1))
        elif line.lower().startswith("tools:"):
            names.update(re.findall(r"([A-Za-z_][\w.\-]*)\(", line))
    return names or None


def tool_gold_problem(prompt, answer) -> str | None:
    """What is wrong with one tool-calling row's gold text (None: nothing)."""
    if not is_tool_gold(answer):
        return (
            f"its 'answer' {str(answer)[:60]!r} is not a tool-calling gold: it has neither a <tool_call> nor a "
            "<response> block"
        )
    if "<tool_call>" not in answer:
        return None  # a reply without a call (ToolRL's chat rows)
    calls = parse_tool_calls(answer)
    if not calls or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        return "its gold <tool_call> block is not closed, or not one JSON object {name, parameters} per line"
    tools = listed_tools(prompt)
    unknown = sorted({c["name"] for c in calls} - tools) if tools else []
    if unknown:
        return (
            f"its gold calls {', '.join(map(repr, unknown))}, which its system message does not offer (it lists "
            f"{', '.join(sorted(tools))})"
        )
    return None


def check_rewards_fit_rows(dataset, reward_funcs: list, conditions=None) -> None:
    """Each built-in reward can score these rows: the GSM8K rewards need GSM8K-style rows (a number in
    ``answer``), the tool rewards tool-calling rows (a ``<tool_call>``/``<response>`` gold whose calls use tools
    the prompt offers)."""
    used = registry_names(reward_funcs, conditions)
    if not used or not hasattr(dataset, "column_names"):
        return
    columns = dataset.column_names
    for name in NEEDS_ANSWER:
        if name in used and "answer" not in columns:
            raise InputError(
                f"reward {name!r} needs the dataset column 'answer' (the gold answer per prompt), which the "
                f"dataset lacks (columns: {columns})."
            )
    answers = list(dataset["answer"]) if "answer" in columns else []
    gsm8k = [name for name in GSM8K_REWARDS if name in used]
    tool = [name for name in TOOL_REWARDS if name in used]
    if gsm8k:
        row = next((i for i, a in enumerate(answers) if is_tool_gold(a)), None)
        if row is not None:
            raise InputError(
                f"reward {gsm8k[0]!r} scores GSM8K-style rows (a number in 'answer', an <answer> block in the "
                f"completion), but row {row} is a tool-calling row (its 'answer' holds a <tool_call>/<response> "
                "gold): use the rewards tool_format and tool_correctness for tool-calling data."
            )
    if tool:
        row = next((i for i, a in enumerate(answers) if not is_tool_gold(a)), None)
        if row is not None and (parse_number(str(answers[row])) is not None or "prompt" not in columns):
            raise InputError(
                f"reward {tool[0]!r} needs tool-calling rows (a gold with <tool_call> or <response> in "
                f"'answer'), but row {row}'s answer is {str(answers[row])[:60]!r}, a GSM8K-style row: train it on "
                f"{SOURCES_HINT}, or use the GSM8K rewards."
            )
        prompts = dataset["prompt"] if "prompt" in columns else [None] * len(answers)
        for row, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
            problem = tool_gold_problem(prompt, answer)
            if problem:
                raise InputError(f"tool-calling row {row}: {problem}. Fix or drop that row.")


def check_data(dataset, rewards, training_args) -> None:
    """The checks of this module for ``gdpo train``, called once the training rows are loaded; ``rewards``: the
    run's :class:`~gdpo_trl.trainer.reward_pipeline.PreparedRewards`, which check the rows' columns themselves."""
    check_rewards_fit_rows(dataset, rewards.given, getattr(training_args, "reward_conditions", None))
    rewards.check_rows(dataset)
    check_steps_per_epoch(dataset, training_args)
