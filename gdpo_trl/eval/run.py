"""The whole evaluation: load the problems and the model, generate, score, summarize, write.

:func:`generate_and_score` is the one generate-decode-score loop of the package: ``gdpo eval`` and the warm start's
measurement of its starting rewards (:func:`gdpo_trl.tasks.sft.measure_rewards`) both run it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from gdpo_trl.data.sources import environment_factory
from gdpo_trl.eval.agent import generate_and_score_episodes
from gdpo_trl.eval.backends import choose_backend, generate_transformers, generate_vllm
from gdpo_trl.eval.loading import DTYPES, ModelSpec, check_prompts_fit, load_transformers_model, resolve_model_spec
from gdpo_trl.eval.report import default_output_dir, refuse_earlier_result, results_replaceable, write_outputs
from gdpo_trl.eval.scoring import DEFAULT_REWARDS, default_rewards, reward_funcs, score_problem, summarize
from gdpo_trl.eval.settings import EvaluationInputError, GenerationSettings


def load_problems(
    dataset: str,
    split: str,
    limit: int | None = None,
    seed: int | None = None,
    *,
    path: str | None = None,
    system_prompt: str | None = None,
):
    """Problems from the data-source registry (:func:`gdpo_trl.data.sources.load_source`, which takes ``path`` and
    ``system_prompt`` as training does) as ``prompt``/``answer`` rows; loader errors (missing file or column,
    unreachable Hub, an option the source does not take) become :class:`EvaluationInputError`."""
    from gdpo_trl.data.sources import is_generated, load_source

    if limit is not None and limit < 1:
        raise EvaluationInputError(f"limit must be >= 1, got {limit}")
    # Generated sources default to a few hundred problems for evaluation, not a training set's thousand.
    size = limit if limit is not None or not is_generated(dataset) else 200
    try:
        return load_source(dataset, split=split, size=size, seed=seed, path=path, system_prompt=system_prompt)
    except (OSError, ValueError) as err:  # OSError covers FileNotFoundError and an unreachable Hub
        raise EvaluationInputError(f"cannot load dataset {dataset!r}: {err}") from err


# What gdpo eval hands each reward (score_problem): TRL's names for the prompts and completions, and the gold answer.
EVAL_REWARD_ARGUMENTS = ("prompts", "completions", "answer")
# Registry rewards that score against the gold 'answer' (they take it as optional, and score 0 without it).
READS_ANSWER = ("correctness", "tool_format", "tool_correctness")
TOOL_MARKERS = ("<tool_call>", "<tools>", '"parameters"', "tools:")


def check_scorable(problems, rewards: Sequence[str], dataset: str) -> None:
    """Before the model loads: refuse rows gdpo eval cannot score, naming the row or the column. Its prompts are
    chat messages (it renders them with the chat template and reports the last user turn), and its rewards get the
    prompts, the completions and the rows' 'answer' only: a reward that requires another column, or a gold-answer
    reward on rows without 'answer', would fail after generating (a KeyError) or score every completion 0."""
    import inspect

    from gdpo_trl.rewards import get_reward_func, reward_name

    columns = list(problems.column_names)
    for row, prompt in enumerate(problems["prompt"] if "prompt" in columns else []):
        if not isinstance(prompt, list):
            raise EvaluationInputError(
                f"dataset {dataset!r} row {row}: 'prompt' is {type(prompt).__name__}, not chat messages: gdpo eval "
                'renders prompts with the chat template; write it as [{"role": "user", "content": ...}].'
            )
    for name in rewards:
        try:
            func = get_reward_func(name)
        except Exception:  # noqa: BLE001 - an unknown name: reward_funcs names it in its own line
            continue
        if "answer" not in columns and name in READS_ANSWER:
            raise EvaluationInputError(
                f"reward {name!r} scores against each row's 'answer', and the rows of {dataset!r} have none "
                f"(columns: {', '.join(columns)}): every completion would score 0. Add an 'answer' column, or pick "
                "--rewards that do not read it."
            )
        try:
            parameters = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            continue
        needed = [
            p.name
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.default is p.empty
            and (p.name not in EVAL_REWARD_ARGUMENTS or (p.name == "answer" and "answer" not in columns))
        ]
        if needed:
            raise EvaluationInputError(
                f"reward {reward_name(func)!r} requires {needed[0]!r}, which gdpo eval does not pass: it gives the "
                f"rewards prompts, completions and the rows' 'answer' (columns here: {', '.join(columns)}). Score "
                "it with gdpo train's rewards on these rows, or give the argument a default."
            )


def check_without_system(problems, dataset: str) -> None:
    """``--no_system_prompt`` on rows whose system message lists the tools the task calls: the model would be asked
    to call tools it never saw, and every tool reward would score that. Refused, naming the first such row."""
    for row, prompt in enumerate(problems["prompt"]):
        system = "\n".join(str(m.get("content") or "") for m in prompt if m.get("role") == "system")
        if any(marker in system for marker in TOOL_MARKERS):
            raise EvaluationInputError(
                f"--no_system_prompt would drop the system message of {dataset!r} row {row}, which lists the tools "
                "its request calls: the model would be asked to call tools it never saw. Evaluate with the rows' "
                "own system message (leave out --no_system_prompt)."
            )


def generate_and_score(
    spec: ModelSpec,
    problems,
    settings: GenerationSettings,
    rewards: Sequence[str] = DEFAULT_REWARDS,
    *,
    backend: str = "transformers",
    dtype: str = "auto",
    progress: bool = True,
) -> tuple[list[dict], dict, dict]:
    """Generate ``settings.n`` completions for each problem and score them with the registry's ``rewards``.

    Returns ``(rows, metrics, run)``: one ``completions.jsonl`` row per problem, :func:`summarize`'s metrics, and
    ``{"device", "generation_time_s"}``.
    """
    funcs = reward_funcs(rewards)  # before generating: an unknown reward name fails at once
    start = time.perf_counter()
    if backend == "vllm":
        completions, device = generate_vllm(spec, problems["prompt"], settings, dtype)
    else:
        model, tokenizer = load_transformers_model(spec, dtype)
        completions = generate_transformers(model, tokenizer, problems["prompt"], settings, progress)
        device = str(model.device)
    generation_time = time.perf_counter() - start
    # Rows without 'answer' reach here only with rewards that do not read it (check_scorable).
    answers = problems["answer"] if "answer" in problems.column_names else [None] * len(problems)
    rows = [
        score_problem(i, prompt, answer, group, funcs)
        for i, (prompt, answer, group) in enumerate(zip(problems["prompt"], answers, completions, strict=True))
    ]
    return rows, summarize(rows), {"device": device, "generation_time_s": generation_time}


def evaluate(
    model: str,
    *,
    adapter: str | None = None,
    dataset: str = "openai/gsm8k",
    split: str = "test",
    limit: int | None = None,
    dataset_seed: int | None = None,
    dataset_path: str | None = None,
    system_prompt: str | None = None,
    no_system_prompt: bool = False,
    rewards: Sequence[str] | None = None,
    n: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_new_tokens: int = 1024,
    batch_size: int = 16,
    backend: str = "auto",
    seed: int = 0,
    output_dir: str | os.PathLike | None = None,
    dtype: str = "auto",
    progress: bool = True,
) -> dict:
    """Evaluate ``model`` (and ``adapter``) on ``dataset`` and return the summary that is written to
    ``output_dir/summary.json``; ``completions.jsonl`` beside it holds every completion with its rewards.

    Arguments mirror ``gdpo eval`` (see :mod:`gdpo_trl.cli.evaluate`); ``rewards`` defaults to the source's
    (:func:`gdpo_trl.eval.scoring.default_rewards`). Raises :class:`EvaluationInputError` for a
    bad setting, model, adapter, dataset or reward name, before any generation starts.
    """
    start = time.perf_counter()
    rewards = default_rewards(dataset) if rewards is None else rewards
    settings = GenerationSettings(n, temperature, top_p, max_new_tokens, batch_size, seed)
    if dtype not in DTYPES:
        raise EvaluationInputError(f"unknown dtype {dtype!r}; choose one of {list(DTYPES)}")
    asked_backend, backend = backend, choose_backend(backend)
    spec = resolve_model_spec(model, adapter)
    # Before the model: a bad dataset, or a folder holding an earlier result, fails in a second.
    if no_system_prompt and system_prompt is not None:
        raise EvaluationInputError("--system_prompt and --no_system_prompt contradict each other: pass one")
    problems = load_problems(dataset, split, limit, dataset_seed, path=dataset_path, system_prompt=system_prompt)
    check_scorable(problems, rewards, dataset)
    if no_system_prompt:
        check_without_system(
            problems, dataset
        )  # the chat template then applies the model's own default system message, if it has one
        problems = problems.map(lambda row: {"prompt": [m for m in row["prompt"] if m["role"] != "system"]})
    out = Path(output_dir) if output_dir is not None else default_output_dir(
        spec, dataset, split, settings, limit, rewards=rewards, dataset_path=dataset_path, dataset_seed=dataset_seed,
        system_prompt=system_prompt, backend=None if asked_backend == "auto" else asked_backend,
        dtype=None if dtype == "auto" else dtype,
    )  # fmt: skip
    refuse_earlier_result(out, results_replaceable())
    check_prompts_fit(spec, problems, settings.max_new_tokens)
    environments = environment_factory(dataset)
    if environments is not None:  # an agent source: multi-turn episodes with its environment (gdpo_trl.eval.agent)
        if backend == "vllm":
            raise EvaluationInputError(f"{dataset!r} is a multi-turn agent source: use --backend transformers")
        rows, metrics, run = generate_and_score_episodes(
            spec, problems, environments, settings, reward_funcs(rewards), dtype=dtype, progress=progress
        )
    else:
        rows, metrics, run = generate_and_score(
            spec, problems, settings, rewards, backend=backend, dtype=dtype, progress=progress
        )
    summary = {
        "metrics": metrics,
        "generation": {**asdict(settings), "backend": backend, "dtype": dtype, "device": run["device"]},
        "model": {"model": spec.name, "base_model": spec.base, "adapter": spec.adapter, "tokenizer": spec.tokenizer},
        "data": {
            "dataset": dataset,
            "path": dataset_path,
            "split": split,
            "limit": limit,
            "seed": dataset_seed,
            "system_prompt": system_prompt,
            **({"no_system_prompt": True} if no_system_prompt else {}),
        },
        "rewards": list(rewards),
        "wall_time_s": time.perf_counter() - start,
        "generation_time_s": run["generation_time_s"],
        "output_dir": str(out),
    }
    write_outputs(out, summary, rows)
    return summary
