"""What ``gdpo pilot`` costs against ``gdpo eval`` generating as many completions with the same settings.

The pilot is one generation pass plus scoring and arithmetic on an ``[N, K]`` matrix, so it should cost what sampling
the same completions with ``gdpo eval`` costs (target: at most 1.1x). For each recipe this runs, side by side and
alternating which goes first, ``gdpo pilot --config R --prompts P`` and ``gdpo eval`` on the recipe's model with the
recipe's ``num_generations``, temperature, top-p, ``max_completion_length``, dtype, seed and system prompt for P
prompts of the same data source, both in batches of P prompts and with one torch thread. It prints each command's
wall time (the whole process: imports, model load, generation, scoring, writing) and its generation time as the
command reports it (``gdpo eval``'s includes loading the model; the pilot's too), and the ratios of the medians. For a
generated source (the demo's, the agent's) both sample the same P training problems with the same seed and batch;
for a data file the pilot draws its rows shuffled, so a first, untimed pilot's rows are written to a JSONL file that
``gdpo eval`` then reads. Either way both generate the same completions: the script counts how many texts agree.

    python scripts/benchmark_pilot.py                      # the demo recipe and SmolLM2's, 3 rounds
    python scripts/benchmark_pilot.py --recipes cpu/gdpo --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def is_generated(dataset: str) -> bool:
    from gdpo_trl.data.sources import is_generated as generated

    return generated(dataset)


def recipe_settings(recipe: str) -> dict:
    """The sampling a recipe trains with, as gdpo train parses it (defaults included)."""
    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.recipe.names import resolve_config_flag

    script, training, model = parse_args(resolve_config_flag(["--config", recipe]))
    dtype = "auto"
    if training.cpu_dtype is not None:
        from gdpo_trl.core.cpu_speed import cpu_dtype_choice

        dtype = cpu_dtype_choice(training.cpu_dtype)[0]
    return {
        "model": model.model_name_or_path,
        "dataset": script.dataset_name,
        "system_prompt": script.system_prompt,
        "n": training.num_generations,
        "temperature": training.temperature,
        "top_p": training.top_p,
        "max_new_tokens": training.max_completion_length,
        "seed": training.seed,
        "dtype": dtype,
    }


def timed(command: list[str]) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def pilot_prompts_file(pilot_dir: Path, out: Path) -> Path:
    """The prompts (and the columns the rewards read) a pilot sampled, in its order, as a JSONL file gdpo eval reads."""
    seen = {}
    for line in (pilot_dir / "completions.jsonl").read_text().splitlines():
        row = json.loads(line)
        seen.setdefault(row["prompt_index"], {"prompt": row["prompt"], **row["columns"]})
    out.write_text("".join(json.dumps(seen[i]) + "\n" for i in sorted(seen)))
    return out


def one_round(
    recipe: str, settings: dict, prompts: int, folder: Path, pilot_first: bool, prompts_file: str | None
) -> dict:
    gdpo = str(Path(sys.executable).with_name("gdpo"))
    pilot_dir, eval_dir = folder / "pilot", folder / "eval"
    pilot = [gdpo, "pilot", "--config", recipe, "--prompts", str(prompts), "--batch_size", str(prompts),
             "--cpu_threads", "1", "--pilot_dir", str(pilot_dir)]  # fmt: skip
    evaluation = [gdpo, "eval", "--model", settings["model"], "--dataset", prompts_file or settings["dataset"],
                  "--split", "train",
                  "--limit", str(prompts), "--n", str(settings["n"]), "--temperature", str(settings["temperature"]),
                  "--top_p", str(settings["top_p"]), "--max_new_tokens", str(settings["max_new_tokens"]),
                  "--batch_size", str(prompts), "--seed", str(settings["seed"]), "--dtype", settings["dtype"],
                  "--output_dir", str(eval_dir), "--overwrite"]  # fmt: skip
    if settings["system_prompt"] is not None and prompts_file is None:  # the file's prompts hold it already
        evaluation += ["--system_prompt", settings["system_prompt"]]
    order = [("pilot", pilot), ("eval", evaluation)] if pilot_first else [("eval", evaluation), ("pilot", pilot)]
    found = {}
    for name, command in order:
        found[f"{name}_wall_s"] = timed(command)
    report = json.loads((pilot_dir / "pilot.json").read_text())
    summary = json.loads((eval_dir / "summary.json").read_text())
    found["pilot_generation_s"] = report["settings"]["generation_time_s"]
    found["eval_generation_s"] = summary["generation_time_s"]
    found["pilot_mean_tokens"] = report["settings"]["mean_tokens"]
    pilot_texts = [
        json.loads(line)["completion"] for line in (pilot_dir / "completions.jsonl").read_text().splitlines()
    ]
    eval_rows = [json.loads(line) for line in (eval_dir / "completions.jsonl").read_text().splitlines()]
    eval_texts = [text for row in eval_rows for text in row["completions"]]
    found["same_completions"] = sum(a == b for a, b in zip(pilot_texts, eval_texts, strict=False)) / len(pilot_texts)
    found["eval_mean_tokens"] = summary["metrics"]["mean_completion_tokens"]
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipes", nargs="+", default=["cpu/gdpo", "cpu/smollm2_gdpo"])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for recipe in args.recipes:
        settings = recipe_settings(recipe)
        rounds = []
        with tempfile.TemporaryDirectory() as tmp:
            prompts_file = None
            if not is_generated(settings["dataset"]):  # a data file: gdpo eval reads the rows the pilot drew
                warm = Path(tmp) / "warm-up"
                timed([str(Path(sys.executable).with_name("gdpo")), "pilot", "--config", recipe, "--prompts",
                       str(args.prompts), "--cpu_threads", "1", "--pilot_dir", str(warm)])  # fmt: skip
                prompts_file = str(pilot_prompts_file(warm, Path(tmp) / "pilot_prompts.jsonl"))
            for r in range(args.rounds):
                folder = Path(tmp) / str(r)
                rounds.append(one_round(recipe, settings, args.prompts, folder, r % 2 == 0, prompts_file))
        median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        print(f"{recipe}: {args.prompts} prompts x {settings['n']} completions, {settings['max_new_tokens']} new "
              f"tokens, {args.rounds} rounds (medians)")  # fmt: skip
        print(f"  wall time        pilot {median['pilot_wall_s']:.1f} s   eval {median['eval_wall_s']:.1f} s   "
              f"ratio {median['pilot_wall_s'] / median['eval_wall_s']:.2f}")  # fmt: skip
        print(f"  generation time  pilot {median['pilot_generation_s']:.1f} s   eval "
              f"{median['eval_generation_s']:.1f} s   ratio "
              f"{median['pilot_generation_s'] / median['eval_generation_s']:.2f}")  # fmt: skip
        print(f"  mean tokens      pilot {median['pilot_mean_tokens']:.1f}   eval {median['eval_mean_tokens']:.1f}   "
              f"same completions {median['same_completions']:.0%}")  # fmt: skip


if __name__ == "__main__":
    main()
