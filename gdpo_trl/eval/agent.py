"""Multi-turn evaluation of an agent: episodes rolled out the way TRL's tool loop rolls them out in training, scored
with the training rewards (and the environment's own ``get_reward``).

Each episode gets a fresh environment from the source's ``environment_factory`` (:class:`gdpo_trl.data.sources.Source`),
``reset`` with the row's columns; its public methods are the tools the prompt is rendered with. An assistant turn is
read with TRL's ``parse_response`` (the tokenizer's response template); each parsed call runs, its result (or
``{'error': ...}``) is appended as a ``tool`` message, and the model speaks again, until a turn makes no call, the
turn limit is reached, or the episode's token budget (``max_new_tokens``, tool answers not counted, as in training)
is spent. Metrics: each reward's mean over the episodes it applies to, ``success_rate`` (``agent_success``),
``mean_turns`` (assistant turns) and ``mean_calls`` per episode.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence

from gdpo_trl.eval.backends import eos_token_ids, sampling_config
from gdpo_trl.eval.settings import EvaluationInputError, GenerationSettings


def environment_tools(environment) -> dict[str, Callable]:
    """The tools TRL exposes for ``environment``: its public methods other than ``reset`` and ``get_reward``."""
    return {
        name: getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def run_tool_calls(calls: list[dict], tools: dict[str, Callable]) -> list[dict]:
    """The ``tool`` messages for one turn's ``calls``, as TRL's loop writes them (an exception becomes its error)."""
    messages = []
    for call in calls:
        function = call.get("function", {})
        name = function.get("name", "unknown")
        try:
            if name not in tools:
                raise ValueError(f"Tool {name} not found.")
            result = tools[name](**function.get("arguments", {}))
        except Exception as err:  # noqa: BLE001 - the model sees the error, as in training
            result = {"error": str(err)}
        messages.append({"role": "tool", "name": name, "content": str(result)})
    return messages


class Episode:
    """One rollout: the conversation so far, the completion messages, and the tokens the model has spent."""

    def __init__(self, row: dict, environment):
        self.row, self.environment = row, environment
        observation = environment.reset(**{k: v for k, v in row.items() if k != "environment"})
        prompt = [dict(m) for m in row["prompt"]]
        if isinstance(observation, str):
            prompt[-1]["content"] += observation
        self.messages, self.completion = prompt, []
        self.tools = environment_tools(environment)
        self.tokens, self.truncated, self.done = 0, False, False


def _one_turn(model, tokenizer, episodes: list[Episode], settings: GenerationSettings, eos_ids: set[int]) -> None:
    """Generate the next assistant turn of each of ``episodes`` (one batch), parse it and run its calls."""
    import torch
    from trl.chat_template_utils import parse_response

    texts = [
        tokenizer.apply_chat_template(e.messages, tools=list(e.tools.values()) or None, add_generation_prompt=True,
                                      tokenize=False)
        for e in episodes
    ]  # fmt: skip
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    budget = max(settings.max_new_tokens - e.tokens for e in episodes)
    config = sampling_config(settings, tokenizer, eos_ids)
    config.num_return_sequences, config.max_new_tokens = 1, budget
    with torch.inference_mode():
        output = model.generate(**inputs, generation_config=config)
    prompt_length = inputs["input_ids"].shape[1]
    for i, episode in enumerate(episodes):
        tokens = output[i, prompt_length:].tolist()
        cut = next((k + 1 for k, t in enumerate(tokens) if t in eos_ids), None)
        room = settings.max_new_tokens - episode.tokens
        tokens = tokens[: min(cut or len(tokens), room)]
        episode.tokens += len(tokens)
        episode.truncated = cut is None or cut > room
        prefix = tokenizer(texts[i], add_special_tokens=False)["input_ids"]
        message = parse_response(tokenizer, tokens, prefix=prefix, tools=list(episode.tools.values()))
        episode.messages.append(message)
        episode.completion.append(message)
        calls = message.get("tool_calls") if not episode.truncated else None
        if not calls:
            episode.done = True
            continue
        results = run_tool_calls(calls, episode.tools)
        episode.messages += results
        episode.completion += results


def rollout(
    model, tokenizer, rows: Sequence[dict], factory, settings: GenerationSettings, max_turns: int = 4,
    progress: bool = True,
) -> list[list[Episode]]:  # fmt: skip
    """``settings.n`` episodes per row, in batches of ``settings.batch_size`` live episodes, at most ``max_turns``
    assistant turns each (TRL's ``max_tool_calling_iterations`` + 1). ``factory`` is an environment class, or
    ``{name: class}`` chosen by each row's ``environment``."""
    from tqdm.auto import tqdm
    from transformers import set_seed

    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        raise EvaluationInputError(
            "this model's tokenizer has no response template, so its tool calls cannot be parsed; set "
            "tokenizer.response_template (see trl.chat_template_utils.add_response_schema) and save it with the model"
        )
    set_seed(settings.seed)
    eos_ids = eos_token_ids(model, tokenizer)
    tokenizer.padding_side = "left"  # generate continues each row from its last prompt token
    pick = (lambda row: factory[row["environment"]]) if isinstance(factory, dict) else (lambda row: factory)
    episodes = [[Episode(row, pick(row)()) for _ in range(settings.n)] for row in rows]
    flat = [e for group in episodes for e in group]
    for _ in tqdm(range(max_turns), desc="turns", disable=not progress):
        live = [e for e in flat if not e.done]
        for start in range(0, len(live), settings.batch_size):
            _one_turn(model, tokenizer, live[start : start + settings.batch_size], settings, eos_ids)
        if all(e.done for e in flat):
            break
    for e in flat:
        e.done = True
    return episodes


def score_episodes(episodes: list[list[Episode]], rewards: dict[str, Callable]) -> tuple[list[dict], dict]:
    """One ``completions.jsonl`` row per problem, and the metrics. Reward functions get TRL's arguments: the
    completions (message lists), every dataset column, and ``environments``; an environment with ``get_reward``
    adds a reward named after its class, as in training."""
    flat = [e for group in episodes for e in group]
    columns = {k: [e.row[k] for e in flat] for k in flat[0].row if k not in ("prompt", "completion")}
    environments = [e.environment for e in flat]
    scores = {
        name: func(prompts=[e.row["prompt"] for e in flat], completions=[e.completion for e in flat],
                   environments=environments, **columns)
        for name, func in rewards.items()
    }  # fmt: skip
    for env_type in dict.fromkeys(type(env) for env in environments if hasattr(env, "get_reward")):
        scores[env_type.__name__] = [env.get_reward() if type(env) is env_type else None for env in environments]
    rows, k = [], 0
    for index, group in enumerate(episodes):
        rows.append({
            "index": index,
            "question": group[0].row["prompt"][-1]["content"],
            "answer": group[0].row.get("answer"),
            "completions": [e.completion for e in group],
            "rewards": [{name: scores[name][k + i] for name in scores} for i in range(len(group))],
            "num_tokens": [e.tokens for e in group],
            "truncated": [e.truncated for e in group],
        })  # fmt: skip
        k += len(group)
    return rows, summarize_episodes(flat, scores)


def summarize_episodes(flat: list[Episode], scores: dict[str, list]) -> dict:
    """Each reward's mean over the episodes it applies to (None: does not apply), and the episode statistics."""
    from gdpo_trl.rewards.agent import assistant_turns, count_calls

    metrics = {}
    for name, values in scores.items():
        applied = [v for v in values if v is not None]
        metrics[f"{name}_mean"] = sum(applied) / len(applied) if applied else None
        metrics[f"{name}_rows"] = len(applied)
    if "agent_success" in scores:
        metrics["success_rate"] = metrics["agent_success_mean"]
    metrics["mean_turns"] = sum(len(assistant_turns(e.completion)) for e in flat) / len(flat)
    metrics["mean_calls"] = sum(count_calls(e.completion) for e in flat) / len(flat)
    metrics["mean_completion_tokens"] = sum(e.tokens for e in flat) / len(flat)
    metrics["truncated_fraction"] = sum(e.truncated for e in flat) / len(flat)
    metrics["num_problems"] = len({id(e.row) for e in flat})
    metrics["num_samples"] = len(flat)
    return metrics


def generate_and_score_episodes(
    spec,
    problems,
    factory,
    settings,
    rewards: dict[str, Callable],
    *,
    dtype="auto",
    max_turns: int = 4,
    progress: bool = True,
) -> tuple[list[dict], dict, dict]:
    """:func:`gdpo_trl.eval.run.generate_and_score` for an agent source: ``(rows, metrics, run)``."""
    from gdpo_trl.eval.loading import load_transformers_model

    start = time.perf_counter()
    model, tokenizer = load_transformers_model(spec, dtype)
    episodes = rollout(model, tokenizer, problems.to_list(), factory, settings, max_turns, progress)
    rows, metrics = score_episodes(episodes, rewards)
    return rows, metrics, {"device": str(model.device), "generation_time_s": time.perf_counter() - start}
