"""Study H10 (docs/results/README.md, part 1): GDPO's published follow-ups against GDPO and GRPO, its runner and its
analysis, fixed before any of its runs.

Two tasks, six arms, seeds 0-9, 10 steps of 4 prompts x 8 completions, one CPU thread, one run at a time:

- ``rules_toolcall``: H1's tool-calling task (``recipes/cpu/toolcall_gdpo``: ``tool_format`` in {0, 1},
  ``tool_correctness`` in [-3, 3], warm start ``builtin:toolcall_warmstart``);
- ``rules_scale6``: H4's GSM8K-style task with correctness on a 0..6 scale (``format``, ``correctness``,
  ``integer``, warm start ``builtin:warmstart``). As in H4, "correctness times 6" is spelled by each rule's own
  arithmetic: a rule that sums raw rewards (GRPO, SAW's ``grpo-h``) or splits them at whole levels (ODRPO, levels
  1..6 of a 0/6 reward are six copies of the level-1 indicator) computes on (format, 6 x correctness, integer) exactly
  what it computes with ``reward_weights: [1, 6, 1]`` (``docs/results/scale6_correctness.yaml``); a rule that
  normalizes each reward first (GDPO, MO-GRPO, SAW's ``gdpo-h``, whose coefficient of variation is scale-free too)
  computes the same with ``[1, 1, 1]`` (``recipes/cpu/gdpo/config.yaml``).

``python -m studies.rules_study run --out-dir DIR`` trains every run not yet finished, seed-major (seed 0: the tool
task's six arms, then the GSM8K-style task's; then seed 1, ...), and starts none after the stopping time.
``python -m studies.rules_study analyze --out-dir DIR`` writes the tables (``docs/results/rules_<task>.{json,md}``)
and the raw logs (``docs/results/logs/rules_<task>.json.gz``) from the seeds whose six arms of a task all finished.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

ARMS = ("grpo", "gdpo", "mo_grpo", "saw_gdpo", "saw_grpo", "odrpo")
BASELINES = ("gdpo", "grpo")
NEW_RULES = ("mo_grpo", "saw_gdpo", "saw_grpo", "odrpo")
SEEDS = tuple(range(10))
STEPS = 10
STOP_AT = dt.datetime(2026, 12, 2, 2, 25, tzinfo=dt.timezone.utc)  # no run starts after this; then analyse
ALPHA = 0.05

AGGREGATION = {
    "grpo": "sum_then_normalize",
    "gdpo": "normalize_then_sum",
    "mo_grpo": "mo_grpo",
    "saw_gdpo": "saw_gdpo",
    "saw_grpo": "saw_grpo",
    "odrpo": "odrpo",
}
SCALE6_SUMS = "docs/results/scale6_correctness.yaml"  # reward_weights [1, 6, 1]
SCALE6_NORMALIZED = "recipes/cpu/gdpo/config.yaml"  # reward_weights [1, 1, 1]
TASKS = {
    "rules_toolcall": {
        "recipe": {arm: "recipes/cpu/toolcall_gdpo/config.yaml" for arm in ARMS},
        "rewards": ("tool_format", "tool_correctness"),
    },
    "rules_scale6": {
        "recipe": {arm: SCALE6_SUMS if arm in ("grpo", "saw_grpo", "odrpo") else SCALE6_NORMALIZED for arm in ARMS},
        "rewards": ("format_reward", "correctness_reward", "integer_reward"),
    },
}


def run_dir(out_dir: Path, task: str, arm: str, seed: int) -> Path:
    return out_dir / task / f"{arm}-seed{seed}"


def plan() -> list[tuple[int, str, str]]:
    """Every run, in the order they run: seed-major, the tool task's arms, then the GSM8K-style task's."""
    return [(seed, task, arm) for seed in SEEDS for task in TASKS for arm in ARMS]


def finished(path: Path) -> bool:
    state = path / "trainer_state.json"
    if not state.exists():
        return False
    return json.loads(state.read_text()).get("global_step") == STEPS


def run_fields(task: str, arm: str, seed: int, out_dir: Path) -> dict:
    return {
        "multi_objective_aggregation": AGGREGATION[arm],
        "scale_rewards": "group",
        "max_steps": STEPS,
        "cpu_threads": 1,
        "seed": seed,
        "output_dir": str(run_dir(out_dir, task, arm, seed)),
        "run_name": f"h10-{task}-{arm}-seed{seed}",
    }


def train(task: str, arm: str, seed: int, out_dir: Path) -> float:
    """One run, parsed and built exactly as ``gdpo train`` (and ``gdpo compare``) build it; no final model saved."""
    from gdpo_trl.cli.compare import parse_run
    from gdpo_trl.recipe.arguments import build_reward_funcs
    from gdpo_trl.run.build import train_run

    script, training, model = parse_run(TASKS[task]["recipe"][arm], run_fields(task, arm, seed, out_dir))
    start = time.perf_counter()
    train_run(script, training, model, build_reward_funcs(script), save_model=False)
    return time.perf_counter() - start


def stamp(log: Path, text: str) -> None:
    line = f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ} {text}"
    print(line, flush=True)
    with log.open("a") as file:
        file.write(line + "\n")


def run(out_dir: Path, stop_at: dt.datetime = STOP_AT) -> None:
    """Train every unfinished run of :func:`plan` in order; a crash is retried once with its seed; no run starts
    after ``stop_at``. Progress only (no outcome) goes to ``out_dir/runner.log``."""
    import torch

    torch.set_num_threads(1)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "runner.log"
    for seed, task, arm in plan():
        path = run_dir(out_dir, task, arm, seed)
        if finished(path):
            continue
        for attempt in (1, 2):
            if dt.datetime.now(dt.timezone.utc) >= stop_at:
                stamp(log, f"stopping time {stop_at:%H:%M} UTC reached: no further run starts")
                return
            stamp(log, f"start {task} {arm} seed {seed} (attempt {attempt})")
            try:
                seconds = train(task, arm, seed, out_dir)
            except Exception:  # a crash: logged, retried once, then left out and named
                stamp(log, f"crash {task} {arm} seed {seed}: {traceback.format_exc(limit=3)!r}")
                continue
            stamp(log, f"done {task} {arm} seed {seed} in {seconds:.1f} s")
            break
    stamp(log, "every run of the plan finished")


# --- Analysis (fixed with the pre-registration) -----------------------------------------------------------------


def reward_series(path: Path, rewards: tuple[str, ...]) -> dict[str, list[float]]:
    history = json.loads((path / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if f"rewards/{rewards[0]}/mean" in entry]
    return {reward: [entry[f"rewards/{reward}/mean"] for entry in steps] for reward in rewards}


def complete_seeds(out_dir: Path, task: str) -> list[int]:
    return [seed for seed in SEEDS if all(finished(run_dir(out_dir, task, arm, seed)) for arm in ARMS)]


def analyse(task: str, series: dict[tuple[str, int], dict[str, list[float]]], seeds: list[int]) -> dict:
    """The pre-registered statistic: a run's final value of a reward is the mean of its logged batch means over its
    10 steps; per arm mean and std over seeds; each new rule minus each baseline (GDPO, GRPO) per reward: the
    difference, Welch's two-sided p and 95% t interval; Holm's step-down adjustment over the task's family (4 rules x
    2 baselines x its rewards); a comparison is *ahead* / *behind* when its Holm-adjusted p is below 0.05 (sign of
    the difference), else *level*."""
    from gdpo_trl.results import stats

    rewards = TASKS[task]["rewards"]
    finals = {
        (arm, reward): [statistics.fmean(series[(arm, seed)][reward]) for seed in seeds]
        for arm in ARMS
        for reward in rewards
    }
    rows = []
    for rule in NEW_RULES:
        for baseline in BASELINES:
            for reward in rewards:
                a, b = finals[(rule, reward)], finals[(baseline, reward)]
                welch = stats.welch_t_test(a, b)
                interval = stats.welch_ci(a, b)
                rows.append(
                    {
                        "rule": rule,
                        "baseline": baseline,
                        "reward": reward,
                        "difference": statistics.fmean(a) - statistics.fmean(b),
                        "ci_low": interval.low,
                        "ci_high": interval.high,
                        "welch_p": welch.p,
                    }
                )
    for row, adjusted in zip(rows, stats.holm_adjusted([row["welch_p"] for row in rows]), strict=True):
        row["holm_p"] = adjusted
        holds = adjusted < ALPHA
        row["verdict"] = ("ahead" if row["difference"] > 0 else "behind") if holds else "level"
        row["verdict_ci"] = "ahead" if row["ci_low"] > 0 else "behind" if row["ci_high"] < 0 else "level"
    answers = {rule: hypothesis(rule, rows) for rule in NEW_RULES}
    arms = {arm: {reward: list(stats.mean_std(finals[(arm, reward)])) for reward in rewards} for arm in ARMS}
    return {"task": task, "seeds": seeds, "steps": STEPS, "arms": arms, "comparisons": rows, "answers": answers}


def against(rule: str, baseline: str, rows: list[dict]) -> str:
    verdicts = {row["verdict"] for row in rows if row["rule"] == rule and row["baseline"] == baseline}
    if "ahead" in verdicts and "behind" in verdicts:
        return "mixed"
    return "better" if "ahead" in verdicts else "worse" if "behind" in verdicts else "no difference"


def hypothesis(rule: str, rows: list[dict]) -> str:
    """Part 1's rule with the new rule in GDPO's place: supported if better than both baselines, partly supported if
    better than one and not worse than the other, contradicted if worse than either, not supported otherwise."""
    results = [against(rule, baseline, rows) for baseline in BASELINES]
    if all(result == "better" for result in results):
        return "supported"
    if "worse" in results:
        return "contradicted"
    if "better" in results and "no difference" in results:
        return "partly supported"
    return "not supported"


LABELS = {
    "grpo": "GRPO",
    "gdpo": "GDPO",
    "mo_grpo": "MO-GRPO",
    "saw_gdpo": "SAW (gdpo-h)",
    "saw_grpo": "SAW (grpo-h)",
    "odrpo": "ODRPO",
}


def markdown(result: dict) -> str:
    rewards = TASKS[result["task"]]["rewards"]
    lines = [
        f"# H10, {result['task']}: seeds {', '.join(map(str, result['seeds']))} ({len(result['seeds'])} per arm), "
        f"{result['steps']} steps",
        "",
        "Written by `python -m studies.rules_study analyze`. A run's final value of a reward: the mean of its logged "
        "batch means over its steps. Mean ± std over seeds.",
        "",
        "| arm | " + " | ".join(rewards) + " |",
        "|---|" + "---:|" * len(rewards),
    ]
    for arm in ARMS:
        cells = [f"{m:.3f} ± {s:.3f}" for m, s in (result["arms"][arm][r] for r in rewards)]
        lines.append(f"| {LABELS[arm]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Each new rule minus each baseline: difference of means, Welch's 95% t interval, Welch p, Holm-adjusted p over "
        f"the {len(result['comparisons'])} comparisons; the verdict reads the Holm-adjusted p (< 0.05).",
        "",
        "| rule − baseline | reward | difference | 95% Welch interval | Welch p | Holm p | verdict |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    for row in result["comparisons"]:
        lines.append(
            f"| {LABELS[row['rule']]} − {LABELS[row['baseline']]} | {row['reward']} | {row['difference']:+.3f} | "
            f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}] | {row['welch_p']:.3g} | {row['holm_p']:.3g} | "
            f"{row['verdict']} |"
        )
    lines += ["", "| rule | H10 on this task |", "|---|---|"]
    lines += [f"| {LABELS[rule]} | {answer} |" for rule, answer in result["answers"].items()]
    return "\n".join(lines) + "\n"


def tables(result: dict) -> tuple[str, str]:
    """The JSON and Markdown texts of one task's analysis, as ``analyze`` writes them."""
    return json.dumps(result, indent=1) + "\n", markdown(result)


def from_logs(path: Path) -> tuple[str, str, str]:
    """One task's ``(task, json text, markdown text)`` recomputed from its committed raw logs
    (``docs/results/logs/rules_<task>.json.gz``): every run's logged rewards, analysed as ``analyze`` does."""
    with gzip.open(path, "rt") as file:
        logs = json.load(file)
    task, runs = logs["task"], logs["runs"]
    rewards = TASKS[task]["rewards"]
    seeds = sorted({int(name.rpartition("-seed")[2]) for name in runs})
    series = {}
    for name, state in runs.items():
        arm, _, seed = name.rpartition("-seed")
        steps = [entry for entry in state["log_history"] if f"rewards/{rewards[0]}/mean" in entry]
        series[(arm, int(seed))] = {reward: [entry[f"rewards/{reward}/mean"] for entry in steps] for reward in rewards}
    return (task, *tables(analyse(task, series, seeds)))


def analyze(out_dir: Path, docs_dir: Path, command: str) -> None:
    for task in TASKS:
        seeds = complete_seeds(out_dir, task)
        if len(seeds) < 2:
            print(f"{task}: {len(seeds)} complete seed(s), nothing to analyse")
            continue
        series = {
            (arm, seed): reward_series(run_dir(out_dir, task, arm, seed), TASKS[task]["rewards"])
            for arm in ARMS
            for seed in seeds
        }
        result = analyse(task, series, seeds)
        json_text, md_text = tables(result)
        (docs_dir / f"{task}.json").write_text(json_text)
        (docs_dir / f"{task}.md").write_text(md_text)
        logs = {
            "task": task,
            "command": command,
            "runs": {
                f"{arm}-seed{seed}": json.loads((run_dir(out_dir, task, arm, seed) / "trainer_state.json").read_text())
                for arm in ARMS
                for seed in seeds
            },
        }
        (docs_dir / "logs").mkdir(parents=True, exist_ok=True)
        (docs_dir / "logs" / f"{task}.json.gz").write_bytes(gzip.compress(json.dumps(logs).encode(), mtime=0))
        print(markdown(result))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("run", "analyze", "plan"))
    parser.add_argument("--out-dir", default="outputs/results/h10")
    parser.add_argument("--docs-dir", default="docs/results")
    parser.add_argument("--command", default="", help="analyze: the exact commands that made the runs (logged)")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    if args.action == "run":
        run(out_dir)
    elif args.action == "analyze":
        analyze(out_dir, Path(args.docs_dir), args.command)
    else:
        for job in plan():
            print(*job)


if __name__ == "__main__":
    sys.exit(main())
