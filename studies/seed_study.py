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

    python -m studies.seed_study --task toolcall --out-dir outputs/results/toolcall --export-logs --command "..."
    python -m studies.seed_study --task toolcall --from-logs docs/results/logs/toolcall.json.gz   # rewrite from the logs
    python -m studies.seed_study --task toolcall --from-json docs/results/toolcall.json   # print the tables from the JSON
    python -m studies.seed_study --task gd2po_toolcall --from-logs docs/results/logs/gd2po_toolcall.json.gz \
        --method gd2po --holm --seeds 0 1 2 5 6 7 --docs-dir /tmp/h7_at_stop   # only the seeds done at the stop
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gdpo_trl.results import stats as rs
from studies.study_files import export_logs, load_study, logged_study, read_logs
from studies.study_tables import pilot_report, report, study_rows


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
