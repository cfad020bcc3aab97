"""Export a gdpo compare seed study and its pre-registered statistics (docs/results/README.md).

Reads every ``<method>-seed<N>/trainer_state.json`` under a gdpo compare ``--output_dir`` and writes

* ``<docs-dir>/<task>.json``: one row ``{"task", "method", "seed", "reward", "final"}`` per run and reward
  (``total`` is the logged weighted sum ``reward``), ``final`` being the mean of the run's last ``--tail`` logged steps;
* ``<docs-dir>/<task>.md``: mean ± std over seeds per method and reward; for ``--method`` (GDPO) against every other
  method, the difference of means, Welch's two-sided t-test, a seeded 95% percentile-bootstrap CI and the verdict
  (ahead / level / behind: the CI only); and, exploratory, the logged signal diagnostics averaged over steps.

    python scripts/seed_study.py --task toolcall --out-dir outputs/results/toolcall
    python scripts/seed_study.py --task toolcall --from-json docs/results/toolcall.json   # print the tables from the JSON
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from gdpo_trl.results import stats as rs
from gdpo_trl.results.runs import load_run, reward_names

LABELS = {"grpo": "GRPO", "grpo_no_std": "GRPO w/o std", "gdpo_outcome_only": "GDPO outcome only", "gdpo": "GDPO"}
RUN_DIR = re.compile(r"(?P<method>.+)-seed(?P<seed>\d+)")
TOTAL = "total"
DIAGNOSTICS = ("frac_reward_zero_std", "advantages/distinct_per_group", "advantages/distinct_per_group_grpo")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", required=True, help="name of the study: the rows' task and the files' stem")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--out-dir", help="a gdpo compare --output_dir")
    source.add_argument("--from-json", help="rows exported before: print the tables (no diagnostics), write nothing")
    parser.add_argument("--docs-dir", default="docs/results")
    parser.add_argument("--method", default="gdpo", help="the method compared with every other")
    parser.add_argument("--tail", type=int, default=10, help="a run's final value: mean of its last TAIL steps")
    parser.add_argument("--no-total", action="store_true", help="leave out the total (methods train on other sums)")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--bootstrap-seed", type=int, default=0)
    return parser.parse_args(argv)


def load_study(out_dir: Path) -> list[tuple[str, int, object]]:
    """``(method, seed, Run)`` for every run folder under ``out_dir``, by method name then seed."""
    found = []
    for folder in sorted(Path(out_dir).iterdir()):
        match = RUN_DIR.fullmatch(folder.name)
        if match and (folder / "trainer_state.json").is_file():
            found.append((match["method"], int(match["seed"]), load_run(folder)))
    if not found:
        raise SystemExit(f"seed_study: no <method>-seed<N>/trainer_state.json under {out_dir}")
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
    keys += list(DIAGNOSTICS)
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
    parts = [
        f"# Seed study: {task}\n",
        f"Methods {', '.join(methods)}; seeds {seeds}; a run's final value = mean of its last {args.tail} logged "
        f"steps. Rows: `{task}.json` ({len(rows)} rows). Generated by `scripts/seed_study.py`.\n",
        "## Final values (mean ± sample std over seeds)\n",
        rs.summary_table(rows, LABELS),
        f"\n## {LABELS.get(args.method, args.method)} against each other method (pre-registered statistic)\n",
        f"Welch's two-sided t-test; 95% percentile bootstrap of the difference of means ({args.resamples} resamples "
        f"per comparison, numpy seed {args.bootstrap_seed}); verdict from the CI: ahead if it excludes 0 on "
        "GDPO's side, behind if on the other, else level. Last column (secondary): whether a non-level verdict's p "
        f"is also below the Bonferroni threshold over the task's comparisons other than `{TOTAL}`.\n",
        rs.comparison_table(comparisons, LABELS, bonferroni_m=sum(c.reward != TOTAL for c in comparisons)),
    ]
    if runs is not None:
        parts += [
            "\n## Signal diagnostics (exploratory; each run's mean over all steps, then mean ± std over seeds)\n",
            diagnostics_table(runs),
        ]
    return "\n".join(parts) + "\n"


def main(argv=None):
    args = parse_args(argv)
    docs = Path(args.docs_dir)
    runs = None
    if args.out_dir:
        runs = load_study(Path(args.out_dir))
        rows = study_rows(args.task, runs, tail=args.tail, total=not args.no_total)
        rs.write_rows(rows, docs / f"{args.task}.json")
    else:
        rows = rs.read_rows(args.from_json)
    text = report(args.task, rows, args, runs)
    print(text)
    if runs is not None:  # from the JSON alone the diagnostics are missing: print only, never overwrite the report
        (docs / f"{args.task}.md").write_text(text, encoding="utf-8")
        print(f"wrote {docs / (args.task + '.md')} and {docs / (args.task + '.json')}")


if __name__ == "__main__":
    main()
