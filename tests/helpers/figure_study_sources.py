"""Sources of the seed studies' figures beyond their generated tables (tests/helpers/figure_sources.py has those):
the first steps' and lengths' means from the raw logs, the summary's comparisons with Holm's correction, the
training-time table's rows, and tables as an earlier commit holds them."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import subprocess
from pathlib import Path

from tests.helpers.figure_sources import regenerated
from tests.helpers.studies import LOGGED, LOGS, RESULTS, ROOT, STUDIES, seed_study, study_files


def first_steps(task: str):
    """Each reward's mean over a study's runs at their first logged step (what its first steps scored)."""

    def source(tmp):
        runs = study_files().read_logs(LOGS / f"{task}.json.gz")["runs"].values()
        firsts = [next(e for e in log if "loss" in e) for log in runs]
        keys = sorted({k for e in firsts for k in e if k.startswith("rewards/") and k.endswith("/mean")})
        return [sum(e[k] for e in firsts) / len(firsts) for k in keys]

    source.__qualname__ = f"first_steps:{task}"
    return source


@functools.cache
def committed(commit: str, path: str):
    """A file as an earlier commit holds it (``git show COMMIT:PATH``): a first run's tables, kept in the history."""

    def source(tmp):
        out = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, f"git show {commit}:{path} failed (a shallow clone?): {out.stderr.strip()}"
        return out.stdout

    source.__qualname__ = f"git show {commit}:{path}"
    return source


def lengths(task: str):
    """Completion lengths (``completions/mean_length``) over a study's first and last 10 steps: the mean over every
    run, then per method."""

    def source(tmp):
        runs = study_files().read_logs(LOGS / f"{task}.json.gz")["runs"]
        found = []
        for prefix in ("", "grpo-", "grpo_no_std-", "gdpo-"):
            steps = [[e for e in log if "loss" in e] for name, log in runs.items() if name.startswith(prefix)]
            for block in (slice(0, 10), slice(-10, None)):
                means = [sum(e["completions/mean_length"] for e in s[block]) / len(s[block]) for s in steps]
                found.append(sum(means) / len(means))
        return found

    source.__qualname__ = f"lengths:{task}"
    return source


@functools.cache
def study_summary(tmp):
    """``python -m studies.study_summary``'s table (every comparison of the studies with Welch p, Holm p and
    bootstrap CI) and the number of its comparisons."""
    from studies import study_summary as summary

    return summary.table(RESULTS) + f"\n{len(summary.comparisons(RESULTS))}"


def study_summary_rows(tmp):
    """The lines of the study summary's table: the docs' copy must hold each row whole."""
    return study_summary(tmp).splitlines()


def runtime_rows(tmp):
    """docs/results/README.md's training-time table, row by row: each logged study's runs and steps (its logged
    command's ``--steps``) and its training time (the ``all`` row of <task>.md's time table)."""
    from studies import study_summary as summary

    rows = []
    for hypothesis, task, _ in summary.STUDIES:
        if task not in LOGGED:
            continue
        steps = re.search(r"--steps (\d+)", study_files().read_logs(LOGS / f"{task}.json.gz")["command"])[1]
        cells = [c.strip() for c in regenerated(task, tmp).split("| all |")[1].splitlines()[0].strip(" |").split("|")]
        runs, spread, mean, total = cells
        rows.append(f"| `{task}` | {hypothesis} | {runs} | {steps} | {total} min | {spread} s, {mean} s |")
    return rows


# H7 as its pre-registered stopping rule left it: the seeds whose three runs of a task had finished at 13:30 UTC
# (docs/results/README.md, part 2, H7). The four other seeds ran after the stop; the ten-seed tables are study(task).
AT_STOP = {"gd2po_toolcall": [0, 1, 2, 5, 6, 7], "gd2po_gsm8k_style": [0, 1, 2, 5, 6, 7]}


def study_at_stop(task: str):
    """A study's tables and per-run finals regenerated from its raw logs with only the seeds done at its
    pre-registered stop (``seed_study --seeds``), as :func:`tests.helpers.figure_sources.study` gives all seeds'."""

    def source(tmp):
        out = Path(tmp) / f"{task}_at_stop"
        if not (out / f"{task}.md").is_file():
            with contextlib.redirect_stdout(io.StringIO()):  # it prints what it writes
                seed_study().main(
                    ["--task", task, "--from-logs", str(LOGS / f"{task}.json.gz"), "--docs-dir", str(out)]
                    + [*STUDIES[task], "--seeds", *map(str, AT_STOP[task])]
                )
        rows = json.loads((out / f"{task}.json").read_text(encoding="utf-8"))
        return (out / f"{task}.md").read_text(encoding="utf-8") + "".join(f"\n{row['final']!r}" for row in rows)

    source.__qualname__ = f"study_at_stop:{task}"
    return source


def conflict_shares(tmp):
    """H7's conflict metrics as its docs quote them (exploratory), per task, at the stop's six seeds and at all ten:
    the least and greatest ``conflict/share`` over the three methods, and GD2PO's ``conflict/masked_share``,
    ``conflict/kept_share`` and ``conflict/group_keep_ratio_min``; each run's mean over its steps, then the mean over
    seeds, as seed_study's diagnostics table computes them. Only these, so that an edit to one does not pass as
    another method's or metric's value."""
    import statistics

    from gdpo_trl.results.stats import mean_std

    found = []
    for task, stop in AT_STOP.items():
        runs = study_files().logged_study(study_files().read_logs(LOGS / f"{task}.json.gz"))
        for seeds in (stop, range(10)):

            def mean(method, key, seeds=seeds, runs=runs):
                per_run = [
                    statistics.fmean(v for _, v in run.history[key])
                    for m, s, run in runs
                    if m == method and s in seeds
                ]
                return mean_std(per_run)[0]

            shares = [mean(m, "conflict/share") for m in ("grpo", "gdpo", "gd2po")]
            found += [min(shares), max(shares)]
            found += [mean("gd2po", f"conflict/{k}") for k in ("masked_share", "kept_share", "group_keep_ratio_min")]
    return found
