"""``gdpo compare``: trains every run of a comparison (each built and trained as ``gdpo train`` would), then writes
the table and the plot. The command line (its flags, their old spellings and checks) is
:mod:`gdpo_trl.cli.compare_args`; the methods, tables and plot are :mod:`gdpo_trl.results.compare`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything here is local

from gdpo_trl.cli.compare_advice import accepted_flags, compare_terms
from gdpo_trl.cli.compare_args import build_parser, find_recipe, parse_args
from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.core.errors import input_stage
from gdpo_trl.recipe.recipe_file import read_recipe


def recipe_flags(fields: dict) -> list[str]:
    """gdpo train flags that set ``fields``: ``--name value`` (``--name v1 v2`` for a list)."""
    flags = []
    for name, value in fields.items():
        flags += [f"--{name}", *map(str, value if isinstance(value, list) else [value])]
    return flags


def given(flag, recipe_value):
    """A flag's value where it was given, else the recipe's."""
    return recipe_value if flag is None else flag


def comparison_fields(args, base) -> dict:
    """The recipe fields every run of the comparison shares: its steps and batch (the recipe's unless given), as
    many prompts as the runs take (each seen once), and what a comparison needs: a log line per step, no checkpoints,
    the accelerator if there is one. Model and threads where given."""
    import torch

    script, training, _ = base
    generations = given(args.num_generations, training.num_generations)
    prompts = given(args.prompts_per_step, training.per_device_train_batch_size // training.num_generations)
    steps = given(args.steps, training.max_steps) * args.scale
    cuda = torch.cuda.is_available()
    fields = {
        "max_steps": steps,
        "per_device_train_batch_size": prompts * args.scale * generations,
        "num_generations": generations,
        "max_completion_length": given(args.max_completion_length, training.max_completion_length),
        "learning_rate": given(args.learning_rate, training.learning_rate),
        "max_train_samples": steps * prompts * args.scale,
        "synthetic_size": steps * prompts * args.scale,
        "logging_steps": 1,
        "save_strategy": "no",
        "use_cpu": not cuda,
        "dataloader_pin_memory": cuda,  # pinning needs an accelerator (torch warns otherwise)
    }
    if args.model is not None:
        fields["model_name_or_path"] = args.model
    if args.cpu_threads is not None:
        fields["cpu_threads"] = args.cpu_threads
    return fields


def parse_run(recipe: str, fields: dict):
    """The recipe with ``fields`` set, parsed and checked exactly as ``gdpo train`` parses it."""
    from gdpo_trl.recipe.arguments import parse_args as parse_recipe

    with input_stage("recipe"):
        return parse_recipe(["--config", recipe, *recipe_flags(fields)])


def run_config(args, recipe: str, shared: dict, method: str, seed: int):
    """One run's recipe (the shared fields, ``method``'s and ``seed``), parsed as ``gdpo train`` parses it, and its
    reward functions: ``(script_args, training_args, model_args, reward_funcs)``."""
    from gdpo_trl.recipe.arguments import build_reward_funcs
    from gdpo_trl.results.compare import METHODS, OUTCOME_ONLY, outcome_only_rewards, run_dir

    fields = {k: v for k, v in METHODS[method].items() if k != OUTCOME_ONLY}
    fields.update(shared, output_dir=str(run_dir(Path(args.output_dir), method, seed)), seed=seed)
    script, training, model = parse_run(recipe, fields)
    rewards = build_reward_funcs(script)
    if METHODS[method].get(OUTCOME_ONLY):
        rewards, training.reward_weights = outcome_only_rewards(rewards, training.reward_weights)
    return script, training, model, rewards


def train_one(args, recipe: str, shared: dict, method: str, seed: int) -> float:
    """One run, built and trained by :func:`gdpo_trl.run.build.train_run` as ``gdpo train`` would (every check,
    the output-folder guard); the final model is saved only with --save_models (to evaluate each run with gdpo
    eval). Returns its wall time in seconds."""
    from gdpo_trl.cli.console import use_compact_progress
    from gdpo_trl.run.build import train_run

    script, training, model, rewards = run_config(args, recipe, shared, method, seed)
    start = time.perf_counter()
    train_run(script, training, model, rewards, on_built=use_compact_progress, save_model=args.save_models)
    return time.perf_counter() - start


@cli_errors("gdpo compare")
def main(argv=None):
    from gdpo_trl.cli.console import quiet_known_warnings

    quiet_known_warnings()  # as gdpo train does; also when started as `python -m gdpo_trl.cli.compare`
    args = parse_args(argv)
    # The runs are gdpo train's: the flags their errors advise, said as this command's (or as recipe fields).
    with compare_terms(accepted_flags(build_parser())):
        compare(args)


def compare(args) -> None:
    """Train every run (unless --skip_training), then write the table and the plot: what the seeds can show first
    (:func:`gdpo_trl.results.seed_power.caveat`), the methods' curves, their differences by Welch's interval, and
    per-problem paired tests where every run has an evaluation beside it."""
    recipe = find_recipe(args.config)
    read_recipe(recipe)  # a recipe that cannot be read fails before torch and TRL are imported
    from gdpo_trl.recipe.arguments import build_reward_funcs
    from gdpo_trl.results.compare import (
        CONFLICT_KEYS,
        LABELS,
        METHODS,
        OUTCOME_ONLY,
        collect,
        comparison_table,
        conflict_table,
        logged_reward_names,
        plot_comparison,
        run_dir,
    )
    from gdpo_trl.results.paired import paired_table, shared_evaluations
    from gdpo_trl.results.runs import load_run, reward_key
    from gdpo_trl.results.seed_power import caveat, differences_table, seed_plan
    from gdpo_trl.rewards import reward_name
    from gdpo_trl.run.resume_settings import saved_record

    base = parse_run(recipe, {})  # also sets the recipe's `env:` variables
    shared = comparison_fields(args, base)
    model = given(args.model, base[2].model_name_or_path)
    out_dir = Path(args.output_dir)
    names = [reward_name(f) for f in build_reward_funcs(base[0])]
    wall = {}
    if not args.skip_training:
        runs = [(m, s) for s in args.seeds for m in args.methods]  # seed-major: a partial sweep stays paired
        for i, (method, seed) in enumerate(runs):
            print(f"[{i + 1}/{len(runs)}] {method} seed {seed}", flush=True)
            wall[(method, seed)] = train_one(args, recipe, shared, method, seed)
            print(f"[{i + 1}/{len(runs)}] {method} seed {seed}: {wall[(method, seed)]:.0f} s", flush=True)

    # The total `reward` only compares like with like: not when a method trains on fewer of the rewards.
    total = not any(METHODS[m].get(OUTCOME_ONLY) for m in args.methods)
    names = logged_reward_names(names, [load_run(run_dir(out_dir, m, s)) for m in args.methods for s in args.seeds])
    metrics = [reward_key(n) for n in names] + ["reward", *CONFLICT_KEYS]
    curves = [collect(out_dir, m, args.seeds, metrics) for m in args.methods]
    compared = names + ["reward"] * total
    table = comparison_table(curves, compared, gain=args.gain, window=args.window, tail=args.window)
    differences = differences_table(curves, compared, args.window, LABELS)
    if differences:
        reference = LABELS.get(args.methods[0], args.methods[0])
        table += (
            f"\n\nDifferences of the final values from {reference} (the first method), with Welch's t 95% interval "
            "and Holm's adjusted p across the rewards:\n\n" + differences
        )
    scores, no_pairs = shared_evaluations(out_dir, args.methods, args.seeds)
    if scores:  # every run evaluated on one shared set (gdpo eval into eval-<method>-seed<N>/)
        table += "\n\nPer problem, paired:\n\n" + paired_table(scores, args.methods, args.seeds, LABELS)
    elif no_pairs:
        table += "\n\n" + no_pairs
    conflicts = conflict_table(curves)
    if conflicts:  # how often the rewards disagreed, and what GD2PO masks (docs/gd2po.md)
        table += "\n\nConflicts (each run's mean over its steps, then mean ± std over seeds):\n\n" + conflicts
    steps = curves[0].steps[-1] if curves[0].steps else 0
    # The runs' own settings, as each recorded them (with --skip_training this command's flags may differ).
    ran = {**shared, **(saved_record(run_dir(out_dir, args.methods[0], args.seeds[0])) or {})}
    # Prompts an optimizer step: its micro-batches' completions (one process) over the completions per prompt.
    completions = ran["per_device_train_batch_size"] * ran.get(
        "gradient_accumulation_steps", base[1].gradient_accumulation_steps
    )
    prompts = completions // ran["num_generations"]
    seeds = f"{len(args.seeds)} seed{'s' if len(args.seeds) > 1 else ''} {args.seeds}"
    header = (
        f"Model {model}; {seeds}; {steps} steps of {prompts} prompts x "
        f"{ran['num_generations']} completions; lr {ran['learning_rate']}; max "
        f"{ran['max_completion_length']} completion tokens; recipe {args.config}."
    )
    if wall:
        header += f" Wall time {sum(wall.values()) / 60:.1f} min for {len(wall)} runs."
    # What these seeds can show opens the table: a one-seed table read as a ranking is the mistake it prevents.
    opening = caveat(seed_plan(curves, compared, args.window, args.difference))
    (out_dir / "comparison.md").write_text(opening + "\n\n" + header + "\n\n" + table + "\n")
    title = header.split(";")[0]
    plot_comparison(curves, names, out_dir / "comparison.png", window=args.window, title=title, total=total)
    print(opening + "\n\n" + header + "\n\n" + table)
    print(f"\nwrote {out_dir / 'comparison.md'} and {out_dir / 'comparison.png'}")


if __name__ == "__main__":
    main()
