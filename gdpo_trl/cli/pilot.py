"""``gdpo pilot``: will GDPO (or another rule) train differently from GRPO on my rewards? Answered before training.

Usage::

    gdpo pilot --config recipes/cpu/gdpo/config.yaml                 # the recipe's model, data, rewards, sampling
    gdpo pilot --config cpu/your_task --prompts 16 --difference 0.05 # any gdpo train flag overrides the recipe
    gdpo pilot --config cpu/gdpo --time_step                         # and time one training step here

One generation pass, no training: ``--prompts`` prompts of the recipe's data (a draw shuffled with the recipe's seed;
a generated source's first ones, its problems being random already), each
with the recipe's ``num_generations`` completions sampled from its start model at its temperature, top-p and
``max_completion_length`` (vLLM where the recipe uses it and it is installed), scored by the recipe's rewards exactly
as TRL calls them (conditions applied). Then :mod:`gdpo_trl.results.pilot` measures the rewards, every rule of
:data:`gdpo_trl.core.rules.RULES` against GRPO, the verdict (docs/pilot.md), the gaming risk and a plan. Written to
``--pilot_dir`` (default ``<output_dir>-pilot``): ``pilot.json``, ``pilot.md``, ``pilot.png`` and
``completions.jsonl`` (every completion with its rewards, so each figure can be recomputed). A mistake in the
arguments is answered as ``gdpo train`` answers it, in one line before torch loads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from pathlib import Path

from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.core.argparsing import OneLineErrors, read_negative_numbers
from gdpo_trl.core.errors import InputError, input_stage

DEFAULT_PROMPTS = 8  # 8 groups: a few minutes on the CPU recipes, enough to tell 0.97 from 0.8
DEFAULT_BATCH = 8  # prompts generated together


class PilotParser(OneLineErrors, argparse.ArgumentParser):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = PilotParser(
        prog="gdpo pilot",
        description="Sample one batch of groups from a recipe's start model, score them with its rewards, and say "
        "whether GDPO and the other rules are likely to train differently from GRPO on them. No training.",
        epilog="Every other flag is a gdpo train flag and overrides the recipe (e.g. --num_generations 16). "
        "Outputs: pilot.json, pilot.md, pilot.png, completions.jsonl in --pilot_dir.",
    )
    parser.add_argument("--config", help="the recipe (a path or a shipped name such as cpu/gdpo); required")
    parser.add_argument(
        "--prompts",
        type=int,
        default=DEFAULT_PROMPTS,
        help=f"how many prompts of the recipe's data to sample groups for (default {DEFAULT_PROMPTS}: a few "
        "minutes on the CPU recipes)",
    )
    parser.add_argument(
        "--difference",
        type=float,
        default=0.03,
        help="the difference of interest on each reward, on a 0..1 scale (scaled to a wider reward's range), for "
        "the plan's seeds and evaluation size (default 0.03)",
    )
    parser.add_argument(
        "--batch_size", type=int, default=DEFAULT_BATCH, help=f"prompts generated together (default {DEFAULT_BATCH})"
    )
    parser.add_argument(
        "--pilot_dir",
        default=None,
        help="where to write the pilot's files (default: the recipe's output_dir + -pilot)",
    )
    parser.add_argument(
        "--time_step",
        action="store_true",
        help="also train one step with the recipe (into a scratch folder) and report its time, to price the plan",
    )
    read_negative_numbers(parser)
    return parser


def split_argv(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The pilot's own options, and the rest: ``gdpo train``'s arguments (``--config`` included)."""
    options, rest = build_parser().parse_known_args(argv)
    if options.config is None:
        raise InputError("gdpo pilot needs --config RECIPE (a recipe file or a shipped name such as cpu/gdpo)")
    if options.prompts < 1:
        raise InputError(f"--prompts must be at least 1, got {options.prompts}")
    if options.batch_size < 1:
        raise InputError(f"--batch_size must be at least 1, got {options.batch_size}")
    if not (math.isfinite(options.difference) and 0 < options.difference <= 1):
        raise InputError(f"--difference must be in (0, 1] (a share of a reward's range), got {options.difference}")
    return options, ["--config", options.config, *rest]


@cli_errors("gdpo pilot")
def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        build_parser().print_help()
        return
    from gdpo_trl.cli.first_checks import read_request

    options, train_argv = split_argv(argv)
    request = read_request(train_argv)  # gdpo train's checks, before torch loads
    if request.launch:
        raise InputError(
            f"gdpo pilot runs in one process: drop the accelerate options {request.launch} (the pilot samples one "
            "batch; it does not train)"
        )
    run_pilot(request.recipe_argv, request.recipe, options)


def run_pilot(recipe_argv: list[str], recipe, options) -> dict:
    """Read the recipe's settings, sample, score, measure and write; returns ``pilot.json``'s contents."""
    from gdpo_trl.cli.console import quiet_known_warnings

    quiet_known_warnings()
    # pilot.png needs matplotlib, which takes seconds to import: import it beside the model's load and generation.
    from gdpo_trl.results.pilot import import_plotting

    threading.Thread(target=import_plotting, daemon=True).start()
    parsed = None if not options.time_step else full_parse(recipe_argv, recipe)  # one step needs the real config
    settings = recipe_settings(recipe_argv, recipe) if parsed is None else Settings(*parsed)
    if settings is None:  # the field table does not fit the installed libraries: TRL's parser reads the recipe
        parsed = full_parse(recipe_argv, recipe)
        settings = Settings(*parsed)
    out = Path(options.pilot_dir or f"{settings.output_dir.rstrip('/')}-pilot")
    sampled = sample_and_score(settings, options.prompts, options.batch_size)
    report = measure(sampled, settings, options.difference)
    if options.time_step:
        report["step_time"] = time_one_step(*parsed, out)
    write_pilot(out, report, sampled)
    print(pilot_table(report), flush=True)
    print(f"Pilot written to {out} (pilot.json, pilot.md, pilot.png, completions.jsonl)", flush=True)
    return report


class Settings:
    """A recipe's fields by name, looked up in each of ``sources`` in turn (the three parsed dataclasses, or one
    namespace of the field table's values)."""

    def __init__(self, *sources):
        self._sources = sources

    def __getattr__(self, name):
        for source in self._sources:
            if hasattr(source, name):
                return getattr(source, name)
        raise AttributeError(name)


def recipe_settings(recipe_argv: list[str], recipe) -> Settings | None:
    """Every field's value as ``gdpo train`` would read it (defaults, the recipe, the flags), from the field table
    (:mod:`gdpo_trl.recipe.early_parse`), without importing TRL: its trainer and config take seconds to import, most
    of a small pilot's time. None where the table does not fit the installed libraries."""
    import json as json_module
    from types import SimpleNamespace

    from gdpo_trl.recipe.early_parse import early_parse
    from gdpo_trl.recipe.field_table import load_table

    table = load_table()
    if table is None:
        return None
    values, path = (None, None) if recipe is None else (recipe.values, recipe.path)
    with input_stage("recipe"):
        found = dict(early_parse(recipe_argv, values, path, table).values)
    for name in ("reward_kwargs", "reward_conditions"):  # JSON on the command line, as the dataclasses parse it
        if isinstance(found.get(name), str):
            try:
                found[name] = json_module.loads(found[name])
            except ValueError as error:
                raise InputError(f"{name} is not valid JSON: {error}") from None
    return Settings(SimpleNamespace(**found))


def full_parse(recipe_argv: list[str], recipe) -> tuple:
    """``gdpo train``'s parse and checks (TrlParser over the three dataclasses): ``(script, training, model)``."""
    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.checks import check_recipe, fit_to_machine

    with input_stage("recipe"):
        parsed = parse_args(recipe_argv, recipe=recipe)
    check_recipe(*parsed)
    fit_to_machine(parsed[1], parsed[2])
    return parsed


def recipe_rewards(settings) -> list:
    """The recipe's reward functions as TRL will call them: from the registry (or their files) with
    ``reward_kwargs``, conditions applied (Eq. 8). A process reward is left out, with a line saying so: the rules
    compared are outcome-level."""
    from gdpo_trl.rewards import get_reward_funcs
    from gdpo_trl.rewards.conditioned import apply_reward_conditions
    from gdpo_trl.rewards.process import is_process_reward

    with input_stage("rewards", ValueError):
        funcs = apply_reward_conditions(get_reward_funcs(settings.reward_funcs, settings.reward_kwargs),
                                        settings.reward_conditions)  # fmt: skip
    process = [i for i, f in enumerate(funcs) if is_process_reward(f)]
    if process:  # the rules compared are outcome-level: a process reward's token-level credit is not one of them
        named = [getattr(funcs[i], "__name__", str(funcs[i])) for i in process]
        if len(process) == len(funcs):
            raise InputError(
                f"gdpo pilot compares outcome-level rules; every reward of this recipe is a process reward {named} "
                "(token-level advantages): compare them over seeds instead"
            )
        print(f"gdpo pilot: the process reward(s) {named} left out: the rules compared are outcome-level", flush=True)
        weights = settings.reward_weights
        if weights is not None:
            settings.reward_weights = [w for i, w in enumerate(weights) if i not in process]
        funcs = [f for i, f in enumerate(funcs) if i not in process]
    if settings.reward_weights is not None and len(settings.reward_weights) != len(funcs):
        raise InputError(
            f"reward_weights has {len(settings.reward_weights)} values for {len(funcs)} reward functions: give one "
            "weight per reward function"
        )
    return funcs


def sample_and_score(settings, prompts: int, batch_size: int) -> dict:
    """Sample ``num_generations`` completions for ``prompts`` of the recipe's rows and score them as TRL would.

    Returns ``{"funcs", "names", "weights", "rewards" [N][K] (None: does not apply), "rows", "settings"}``; ``rows``
    holds one entry per completion (prompt index, text, tokens, cut, rewards by name).
    """
    from gdpo_trl.core.cpu_speed import cpu_dtype_choice, trains_on_cpu
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.data.sources import environment_factory, is_generated, load_source_described, source_options
    from gdpo_trl.eval.loading import resolve_model_spec

    environments = environment_factory(settings.dataset_name)  # an agent source: multi-turn episodes
    funcs = recipe_rewards(settings)
    with input_stage("model or dataset", OSError):
        model_path = resolve_model(settings.model_name_or_path or "")
    options = source_options(settings)
    generated = is_generated(settings.dataset_name)
    if generated:  # its problems are drawn at random already: generate only those the pilot samples
        options["size"] = min(options["size"], prompts)
    with input_stage("dataset", (OSError, ValueError)):
        dataset, _ = load_source_described(settings.dataset_name, **options)
    if len(dataset) < prompts:
        raise InputError(f"--prompts {prompts}: the recipe's data has only {len(dataset)} rows; ask for fewer")
    if not generated:  # rows as written: a draw shuffled with the recipe's seed, as training samples them
        dataset = dataset.shuffle(seed=settings.seed)
    dataset = dataset.select(range(prompts))
    dtype = "auto"
    if settings.cpu_dtype is not None and trains_on_cpu(settings):
        dtype = cpu_dtype_choice(settings.cpu_dtype)[0]
    if settings.cpu_threads is not None:
        import torch

        torch.set_num_threads(settings.cpu_threads)
    spec = resolve_model_spec(model_path)
    sampling = generation_settings(settings, batch_size)
    names = [getattr(f, "__name__", type(f).__name__) for f in funcs]
    start = time.perf_counter()
    if environments is not None:
        turns = (settings.max_tool_calling_iterations or 3) + 1  # TRL's iterations, plus the first turn
        by_name = dict(zip(names, funcs, strict=True))
        rewards, rows, names, backend = episodes(spec, dataset, environments, sampling, by_name, dtype, turns)
    else:
        completions, backend = generate(spec, list(dataset["prompt"]), sampling, dtype, settings.use_vllm)
        rewards, rows = score(funcs, names, dataset, completions)
    generation_time = time.perf_counter() - start
    # An environment's own get_reward joins the rewards with weight 1, as TRL appends it.
    weights = list(settings.reward_weights or [1.0] * len(funcs)) + [1.0] * (len(names) - len(funcs))
    return {
        "funcs": funcs,
        "names": names,
        "weights": weights,
        "rewards": rewards,
        "rows": rows,
        "settings": {
            "model": settings.model_name_or_path,
            "dataset": settings.dataset_name,
            "prompts": prompts,
            "num_generations": settings.num_generations,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_completion_length": sampling.max_new_tokens,
            "seed": settings.seed,
            "backend": backend,
            "dtype": dtype,
            "multi_objective_aggregation": settings.multi_objective_aggregation,
            "generation_time_s": round(generation_time, 2),
        },
    }


def generation_settings(settings, batch_size: int):
    """The recipe's sampling, as ``gdpo eval`` takes it: ``num_generations`` samples per prompt at the recipe's
    temperature and top-p, ``max_completion_length`` new tokens, seeded with the recipe's seed."""
    from gdpo_trl.eval.settings import GenerationSettings

    return GenerationSettings(
        n=settings.num_generations,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_new_tokens=settings.max_completion_length,
        batch_size=batch_size,
        seed=settings.seed,
    )


def generate(spec, prompts: list, settings, dtype: str, use_vllm: bool) -> tuple[list, str]:
    """``gdpo eval``'s generation (:mod:`gdpo_trl.eval.backends`): vLLM where the recipe uses it and it is
    installed, else transformers' ``generate``. Returns the completions per prompt and the backend used."""
    from gdpo_trl.eval.backends import generate_transformers, generate_vllm, vllm_available
    from gdpo_trl.eval.loading import load_transformers_model

    if use_vllm and vllm_available():
        completions, _ = generate_vllm(spec, prompts, settings, dtype)
        return completions, "vllm"
    if use_vllm:
        print("gdpo pilot: vLLM is not installed here, so transformers samples (the same distribution)", flush=True)
    model, tokenizer = load_transformers_model(spec, dtype)
    return generate_transformers(model, tokenizer, prompts, settings), "transformers"


def episodes(
    spec, dataset, environments, settings, funcs: dict, dtype: str, max_turns: int
) -> tuple[list, list, list, str]:
    """An agent source's groups: multi-turn episodes rolled out as TRL's tool loop does and scored by the training
    rewards and the environment's ``get_reward`` (:func:`gdpo_trl.eval.agent.generate_and_score_episodes`).
    Returns ``rewards`` ``[N][K]``, the rows, the reward names (with the environment's) and the backend."""
    from gdpo_trl.eval.agent import generate_and_score_episodes

    problems, _, _ = generate_and_score_episodes(
        spec, dataset, environments, settings, funcs, dtype=dtype, max_turns=max_turns
    )
    names = list(problems[0]["rewards"][0])
    rewards, rows = [], []
    for problem in problems:
        for i, messages in enumerate(problem["completions"]):
            values = problem["rewards"][i]
            rewards.append([values[n] for n in names])
            rows.append(
                {
                    "prompt_index": problem["index"],
                    "completion": messages,
                    "num_tokens": problem["num_tokens"][i],
                    "truncated": problem["truncated"][i],
                    "rewards": values,
                }
            )
    return rewards, rows, names, "transformers (multi-turn episodes)"


def score(funcs: list, names: list[str], dataset, completions: list[list]) -> tuple[list[list], list[dict]]:
    """Each reward called once over every completion, with TRL 1.16's arguments: ``prompts``, ``completions``
    (conversational for chat prompts), ``completion_ids``, every other dataset column, ``trainer_state`` (a fresh
    one), ``log_extra`` and ``log_metric`` (no-ops here). Returns ``rewards`` ``[N][K]`` (None kept) and the rows."""
    from transformers import TrainerState

    prompts, columns, texts, ids, meta = [], {c: [] for c in dataset.column_names if c != "prompt"}, [], [], []
    for index, (row, group) in enumerate(zip(dataset, completions, strict=True)):
        for completion in group:
            prompts.append(row["prompt"])
            for column in columns:
                columns[column].append(row[column])
            chat = isinstance(row["prompt"], list)
            texts.append([{"role": "assistant", "content": completion.text}] if chat else completion.text)
            ids.append(list(completion.token_ids))
            meta.append((index, completion, row))
    inputs = {"prompts": prompts, "completions": texts, "completion_ids": ids, "trainer_state": TrainerState(),
              "log_extra": lambda *a, **k: None, "log_metric": lambda *a, **k: None, **columns}  # fmt: skip
    scored = [call_reward(func, name, inputs, len(texts)) for func, name in zip(funcs, names, strict=True)]
    rewards = [[scored[k][i] for k in range(len(funcs))] for i in range(len(texts))]
    rows = [
        {
            "prompt_index": index,
            "prompt": row["prompt"],
            "columns": {column: row[column] for column in columns},  # what the rewards read beside the completion
            "completion": completion.text,
            "num_tokens": completion.num_tokens,
            "truncated": completion.truncated,
            "rewards": dict(zip(names, values, strict=True)),
        }
        for (index, completion, row), values in zip(meta, rewards, strict=True)
    ]
    return rewards, rows


def where_defined(func) -> str:
    """``file:line`` of a reward function (through ``functools.partial``), for messages."""
    import functools
    import inspect

    while isinstance(func, functools.partial):
        func = func.func
    try:
        return f"{inspect.getsourcefile(func)}:{inspect.getsourcelines(func)[1]}"
    except (OSError, TypeError):
        return type(func).__name__


def call_reward(func, name: str, inputs: dict, count: int) -> list:
    """One reward over every completion; one that raises or returns other than ``count`` values is named, with where
    it is defined, as training would name it."""
    try:
        values = list(func(**inputs))
    except Exception as error:  # noqa: BLE001 - the user's code: named in one line
        raise InputError(f"reward {name} ({where_defined(func)}) raised {type(error).__name__}: {error}") from error
    if len(values) != count:
        raise InputError(
            f"reward {name} ({where_defined(func)}) returned {len(values)} values for {count} completions: return "
            "one float (or None) per completion"
        )
    return values


def measure(sampled: dict, settings, difference: float) -> dict:
    """Every figure of the report from the sampled rewards (:mod:`gdpo_trl.results.pilot`)."""
    import torch

    from gdpo_trl.results.pilot import options_for_rules, pilot_figures, plan

    matrix = torch.tensor(
        [[math.nan if v is None else float(v) for v in row] for row in sampled["rewards"]], dtype=torch.float64
    )
    options = options_for_rules(sampled["funcs"], sampled["names"], settings)
    figures = pilot_figures(matrix, sampled["names"], sampled["weights"], settings.num_generations, options)
    tokens = [row["num_tokens"] for row in sampled["rows"]]
    settings = {
        **sampled["settings"],
        "completions": len(tokens),
        "mean_tokens": sum(tokens) / len(tokens),
        "truncated_share": sum(row["truncated"] for row in sampled["rows"]) / len(tokens),
        "reward_names": sampled["names"],
        "reward_weights": sampled["weights"],
    }
    return {"settings": settings, **figures, "plan": plan(figures["rewards"], difference)}


def time_one_step(script_args, training_args, model_args, out: Path) -> dict:
    """Train one step with the recipe into ``out/step`` (nothing saved) and return its time and the cost of the
    recipe's ``max_steps`` at that rate."""
    import copy

    from gdpo_trl.run.build import train_run

    args = copy.deepcopy(training_args)
    args.output_dir, args.max_steps, args.save_strategy = str(out / "step"), 1, "no"
    args.overwrite_output_dir, args.report_to = True, []
    start = time.perf_counter()
    train_run(script_args, args, model_args, save_model=False)
    seconds = time.perf_counter() - start
    return {
        "seconds": round(seconds, 1),
        "max_steps": training_args.max_steps,
        "run_hours": round(seconds * training_args.max_steps / 3600, 2),
    }


def write_pilot(out: Path, report: dict, sampled: dict) -> None:
    from gdpo_trl.results.pilot import plot_pilot, report_markdown

    out.mkdir(parents=True, exist_ok=True)
    (out / "pilot.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "pilot.md").write_text(report_markdown(report), encoding="utf-8")
    with open(out / "completions.jsonl", "w", encoding="utf-8") as file:
        for row in sampled["rows"]:
            file.write(json.dumps(row, default=str) + "\n")  # a column of dates or other objects as text
    plot_pilot(report, out / "pilot.png")


def pilot_table(report: dict) -> str:
    from gdpo_trl.results.pilot import report_text

    return report_text(report)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
