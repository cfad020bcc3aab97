"""Export a gdpo compare seed study and its pre-registered statistics (docs/results/README.md).

Reads every ``<method>-seed<N>/trainer_state.json`` under a gdpo compare ``--output_dir`` (or the raw logs exported
before, ``--from-logs docs/results/logs/<task>.json.gz``) and writes

* ``<docs-dir>/<task>.json``: one row ``{"task", "method", "seed", "reward", "final"}`` per run and reward
  (``total`` is the logged weighted sum ``reward``), ``final`` being the mean of the run's last ``--tail`` logged steps;
* ``<docs-dir>/<task>.md``: mean ± std over seeds per method and reward; for ``--method`` (GDPO) against every other
  method, the difference of means, Welch's two-sided t-test, a seeded 95% percentile-bootstrap CI and the verdict
  (ahead / level / behind: the CI only); and, exploratory, the logged signal diagnostics averaged over steps, the
  means over blocks of 10 steps and the runs' training times;
* with ``--export-logs``, ``<docs-dir>/logs/<task>.json.gz``: the raw data, ``{"task", "command", "runs": {"<method>-
  seed<N>": log_history}}`` (each run's ``trainer_state.json`` log, keys no table reads left out), from which
  ``--from-logs`` recomputes every table above. ``--pilot`` writes only the block means and times (one seed each).

    python -m gdpo_trl.results.seed_study --task toolcall --out-dir outputs/results/toolcall --export-logs --command "..."
    python -m gdpo_trl.results.seed_study --task toolcall --from-logs docs/results/logs/toolcall.json.gz   # rewrite from the logs
    python -m gdpo_trl.results.seed_study --task toolcall --from-json docs/results/toolcall.json   # print the tables from the JSON
    python -m gdpo_trl.results.seed_study --task gd2po_toolcall --from-logs docs/results/logs/gd2po_toolcall.json.gz \
        --method gd2po --holm --seeds 0 1 2 5 6 7 --docs-dir /tmp/h7_at_stop   # only the seeds done at the stop
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
from pathlib import Path

from gdpo_trl.results import stats as rs
from gdpo_trl.results.runs import STATE_FILE, Run, history_from_log, load_run, reward_names

LABELS = {
    "grpo": "GRPO",
    "grpo_no_std": "GRPO w/o std",
    "gdpo_outcome_only": "GDPO outcome only",
    "gdpo": "GDPO",
    "gd2po": "GD2PO",
}
RUN_DIR = re.compile(r"(?P<method>.+)-seed(?P<seed>\d+)")
TOTAL = "total"
DIAGNOSTICS = ("frac_reward_zero_std", "advantages/distinct_per_group", "advantages/distinct_per_group_grpo")
BLOCK = 10  # steps per block of the block-means table (the pilot's table in docs/results/README.md)
RUNTIME = "train_runtime"  # seconds of Trainer.train, logged once at the end of a run
# The log keys kept in the exported raw data: every key a table or a figure of the docs reads (clip ratios, token
# counts, gradient norms and the like are left out to keep the files small).
KEPT_KEYS = re.compile(
    r"step|epoch|loss|entropy|learning_rate|reward|reward_std|frac_reward_zero_std|step_time|train_runtime"
    r"|completions/mean_length|rewards/.+|advantages/.+|reward_weights/.+|conflict/.+"
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", required=True, help="name of the study: the rows' task and the files' stem")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--out-dir", help="a gdpo compare --output_dir")
    source.add_argument("--from-json", help="rows exported before: print the tables (no diagnostics), write nothing")
    source.add_argument("--from-logs", help="raw logs exported before (--export-logs): rewrite every table from them")
    parser.add_argument("--export-logs", action="store_true", help="also write <docs-dir>/logs/<task>.json.gz")
    parser.add_argument("--command", default="", help="with --export-logs: the exact commands that made the runs")
    parser.add_argument("--pilot", action="store_true", help="one seed per method: block means and times only")
    parser.add_argument("--docs-dir", default="docs/results")
    parser.add_argument("--method", default="gdpo", help="the method compared with every other")
    parser.add_argument("--tail", type=int, default=10, help="a run's final value: mean of its last TAIL steps")
    parser.add_argument("--no-total", action="store_true", help="leave out the total (methods train on other sums)")
    parser.add_argument("--holm", action="store_true", help="Holm's adjusted p instead of the Bonferroni column")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--bootstrap-seed", type=int, default=0)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="only these seeds: a study as its pre-registered stopping rule left it (H7: 0 1 2 5 6 7)",
    )
    return parser.parse_args(argv)


def only_seeds(found: list, seeds: list[int] | None, seed_of) -> list:
    """The runs or rows of ``seeds`` (all when None); a seed the study lacks is an error, not an empty arm."""
    if seeds is None:
        return found
    missing = set(seeds) - {seed_of(x) for x in found}
    if missing:
        raise SystemExit(f"seed_study: --seeds {sorted(missing)} not in the study; drop them or check --task")
    return [x for x in found if seed_of(x) in seeds]


def load_study(out_dir: Path) -> list[tuple[str, int, object]]:
    """``(method, seed, Run)`` for every run folder under ``out_dir``, by method name then seed."""
    found = []
    for folder in sorted(Path(out_dir).iterdir()):
        match = RUN_DIR.fullmatch(folder.name)
        if match and (folder / "trainer_state.json").is_file():
            found.append((match["method"], int(match["seed"]), load_run(folder)))
    if not found:
        raise SystemExit(f"seed_study: no <method>-seed<N>/trainer_state.json under {out_dir}")
    return _ordered(found)


def export_logs(task: str, out_dir: Path, command: str, path: Path) -> Path:
    """Write every run's ``log_history`` under ``out_dir`` (kept keys only) and the command, gzipped JSON."""
    if not command.strip():
        raise SystemExit("seed_study: --export-logs needs --command, the exact commands that produced the runs")
    runs = {}
    for folder in sorted(Path(out_dir).iterdir()):
        if RUN_DIR.fullmatch(folder.name) and (folder / STATE_FILE).is_file():
            log = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))["log_history"]
            runs[folder.name] = [{k: v for k, v in entry.items() if KEPT_KEYS.fullmatch(k)} for entry in log]
    if not runs:
        raise SystemExit(f"seed_study: no <method>-seed<N>/{STATE_FILE} under {out_dir}")
    return write_logs(path, task, command, runs)


def write_logs(path: Path, task: str, command: str, runs: dict[str, list[dict]]) -> Path:
    """The raw data as docs/results/logs/ keeps it (what :func:`read_logs` reads), gzipped JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"task": task, "command": command, "runs": runs}, sort_keys=True).encode()
    path.write_bytes(gzip.compress(data, mtime=0))  # mtime 0: the same logs give the same bytes
    return path


def read_logs(path: str | Path) -> dict:
    """The exported raw data: ``{"task", "command", "runs": {"<method>-seed<N>": log_history}}``."""
    return json.loads(gzip.decompress(Path(path).read_bytes()))


def materialize_logs(logs: dict, out_dir: Path) -> Path:
    """Write the exported runs back as ``<out_dir>/<method>-seed<N>/trainer_state.json`` (what gdpo compare reads)."""
    for name, log in logs["runs"].items():
        (Path(out_dir) / name).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / name / STATE_FILE).write_text(json.dumps({"log_history": log}), encoding="utf-8")
    return Path(out_dir)


def logged_study(logs: dict) -> list[tuple[str, int, Run]]:
    """``(method, seed, Run)`` for every exported run, ordered as :func:`load_study` orders folders."""
    found = []
    for name, log in logs["runs"].items():
        match = RUN_DIR.fullmatch(name)
        found.append((match["method"], int(match["seed"]), Run(name, Path(name), history_from_log(log))))
    return _ordered(found)


def _ordered(found):
    order = list(LABELS)  # known methods in a fixed order (baselines first), any other after them by name
    return sorted(found, key=lambda r: (order.index(r[0]) if r[0] in order else len(order), r[0], r[1]))


def study_rows(task: str, runs, *, tail: int, total: bool) -> list[dict]:
    rows = []
    for method, seed, run in runs:
        series = {name: [v for _, v in run.history[f"rewards/{name}/mean"]] for name in reward_names([run])}
        if total:
            series[TOTAL] = [v for _, v in run.history["reward"]]
        rows += rs.run_rows(task, method, seed, series, tail)
    return rows


def diagnostics_table(runs) -> str:
    """Per method: each diagnostic's mean over steps, then mean ± std over seeds (exploratory)."""
    every = sorted({k for _, _, run in runs for k in run.history})
    keys = [k for k in every if k.endswith("/frac_zero_std")] + [k for k in every if k.endswith("/advantage_share")]
    keys += list(DIAGNOSTICS) + [k for k in every if k.startswith("conflict/")]
    lines = ["| method | " + " | ".join(f"`{k}`" for k in keys) + " |", "|---|" + "---:|" * len(keys)]
    for method in rs.ordered_unique(m for m, _, _ in runs):
        cells = []
        for key in keys:
            per_run = [
                statistics.fmean(v for _, v in run.history[key])
                for m, _, run in runs
                if m == method and key in run.history
            ]
            cells.append("{:.3f} ± {:.3f}".format(*rs.mean_std(per_run)) if per_run else "-")
        lines.append(f"| {LABELS.get(method, method)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def block_table(runs, *, total: bool) -> str:
    """Per method and reward, the mean over seeds of each block of BLOCK steps' mean (exploratory)."""
    names = reward_names([run for _, _, run in runs]) + [TOTAL] * total
    steps = max(len(run.history[f"rewards/{names[0]}/mean"]) for _, _, run in runs)
    blocks = [(start, min(start + BLOCK, steps)) for start in range(0, steps, BLOCK)]
    head = " | ".join(f"steps {a + 1}-{b}" for a, b in blocks)
    lines = [f"| method | reward | {head} |", "|---|---|" + "---:|" * len(blocks)]
    for method in rs.ordered_unique(m for m, _, _ in runs):
        for name in names:
            key = "reward" if name == TOTAL else f"rewards/{name}/mean"
            series = [[v for _, v in run.history[key]] for m, _, run in runs if m == method]
            cells = [statistics.fmean(statistics.fmean(s[a:b]) for s in series) for a, b in blocks]
            lines.append(f"| {LABELS.get(method, method)} | {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)


def runtime_table(runs) -> str:
    """Per method: the runs' ``train_runtime`` (seconds of training, not process start-up), min-max, mean, sum."""
    lines = ["| method | runs | min-max (s) | mean (s) | sum (min) |", "|---|---:|---:|---:|---:|"]
    groups = [(LABELS.get(m, m), [r for r in runs if r[0] == m]) for m in rs.ordered_unique(m for m, _, _ in runs)]
    for label, members in [*groups, ("all", runs)]:
        times = [run.history[RUNTIME][-1][1] for _, _, run in members]
        lines.append(
            f"| {label} | {len(times)} | {min(times):.0f}-{max(times):.0f} | "
            f"{statistics.fmean(times):.0f} | {sum(times) / 60:.1f} |"
        )
    return "\n".join(lines)


def pilot_report(task: str, runs, total: bool) -> str:
    return (
        "\n".join(
            [
                f"# Pilot: {task}\n",
                f"One seed per method. Generated by `python -m gdpo_trl.results.seed_study --pilot` from `logs/{task}.json.gz`.\n",
                f"## Means over blocks of {BLOCK} steps\n",
                block_table(runs, total=total),
                "\n## Training time per run (`train_runtime`)\n",
                runtime_table(runs),
            ]
        )
        + "\n"
    )


def report(task: str, rows: list[dict], args, runs=None) -> str:
    methods = rs.ordered_unique(r["method"] for r in rows)
    rewards = rs.ordered_unique(r["reward"] for r in rows)
    seeds = sorted({r["seed"] for r in rows})
    others = [m for m in methods if m != args.method]
    comparisons = [
        rs.compare(rows, reward, args.method, other, resamples=args.resamples, seed=args.bootstrap_seed)
        for reward in rewards
        for other in others
    ]
    family = [i for i, c in enumerate(comparisons) if c.reward != TOTAL]
    adjusted = rs.holm_adjusted([comparisons[i].welch.p for i in family])
    holm = dict(zip(family, adjusted, strict=True)) if args.holm else None
    parts = [
        f"# Seed study: {task}\n",
        f"Methods {', '.join(methods)}; seeds {seeds}; a run's final value = mean of its last {args.tail} logged "
        f"steps. Rows: `{task}.json` ({len(rows)} rows). Generated by `python -m gdpo_trl.results.seed_study`.\n",
        "## Final values (mean ± sample std over seeds)\n",
        rs.summary_table(rows, LABELS),
        f"\n## {LABELS.get(args.method, args.method)} against each other method (pre-registered statistic)\n",
        f"Welch's two-sided t-test; 95% percentile bootstrap of the difference of means ({args.resamples} resamples "
        f"per comparison, numpy seed {args.bootstrap_seed}); verdict from the CI: ahead if it excludes 0 on "
        "GDPO's side, behind if on the other, else level. Last column (secondary): whether a non-level verdict's p "
        + (
            f"also holds under Holm's procedure at family-wise 0.05 over the task's comparisons other than `{TOTAL}`, "
            "with their Holm-adjusted p.\n"
            if args.holm
            else f"is also below the Bonferroni threshold over the task's comparisons other than `{TOTAL}`.\n"
        ),
        rs.comparison_table(comparisons, LABELS, bonferroni_m=len(family), holm=holm),
    ]
    if runs is not None:
        parts += [
            "\n## Signal diagnostics (exploratory; each run's mean over all steps, then mean ± std over seeds)\n",
            diagnostics_table(runs),
            f"\n## Means over blocks of {BLOCK} steps (exploratory; mean over seeds)\n",
            block_table(runs, total=not args.no_total),
            "\n## Training time per run (`train_runtime`: the Trainer's loop, not process start-up)\n",
            runtime_table(runs),
        ]
    return "\n".join(parts) + "\n"


def main(argv=None):
    args = parse_args(argv)
    docs = Path(args.docs_dir)
    runs = None
    if args.export_logs:
        if not args.out_dir:
            raise SystemExit("seed_study: --export-logs reads the runs of --out-dir")
        print(
            f"wrote {export_logs(args.task, Path(args.out_dir), args.command, docs / 'logs' / f'{args.task}.json.gz')}"
        )
    if args.out_dir or args.from_logs:
        docs.mkdir(parents=True, exist_ok=True)
        runs = load_study(Path(args.out_dir)) if args.out_dir else logged_study(read_logs(args.from_logs))
        runs = only_seeds(runs, args.seeds, lambda run: run[1])
        if args.pilot:
            text = pilot_report(args.task, runs, total=not args.no_total)
            (docs / f"{args.task}.md").write_text(text, encoding="utf-8")
            print(text)
            return
        rows = study_rows(args.task, runs, tail=args.tail, total=not args.no_total)
        rs.write_rows(rows, docs / f"{args.task}.json")
    else:
        rows = only_seeds(rs.read_rows(args.from_json), args.seeds, lambda row: row["seed"])
    text = report(args.task, rows, args, runs)
    print(text)
    if runs is not None:  # from the JSON alone the diagnostics are missing: print only, never overwrite the report
        (docs / f"{args.task}.md").write_text(text, encoding="utf-8")
        print(f"wrote {docs / (args.task + '.md')} and {docs / (args.task + '.json')}")


if __name__ == "__main__":
    main()
