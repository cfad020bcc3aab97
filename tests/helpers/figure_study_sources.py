"""Sources of the seed studies' figures beyond their generated tables (tests/helpers/figure_sources.py has those):
the first steps' and lengths' means from the raw logs, the summary's comparisons with Holm's correction, the
training-time table's rows, and tables as an earlier commit holds them."""

from __future__ import annotations

import functools
import re
import subprocess

from tests.helpers.figure_sources import regenerated
from tests.helpers.studies import LOGGED, LOGS, RESULTS, ROOT, seed_study


def first_steps(task: str):
    """Each reward's mean over a study's runs at their first logged step (what its first steps scored)."""

    def source(tmp):
        runs = seed_study().read_logs(LOGS / f"{task}.json.gz")["runs"].values()
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
        runs = seed_study().read_logs(LOGS / f"{task}.json.gz")["runs"]
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
    """``python -m gdpo_trl.results.study_summary``'s table (every comparison of the studies with Welch p, Holm p and
    bootstrap CI) and the number of its comparisons."""
    from gdpo_trl.results import study_summary as summary

    return summary.table(RESULTS) + f"\n{len(summary.comparisons(RESULTS))}"


def study_summary_rows(tmp):
    """The lines of the study summary's table: the docs' copy must hold each row whole."""
    return study_summary(tmp).splitlines()


def runtime_rows(tmp):
    """docs/results/README.md's training-time table, row by row: each logged study's runs and steps (its logged
    command's ``--steps``) and its training time (the ``all`` row of <task>.md's time table)."""
    from gdpo_trl.results import study_summary as summary

    rows = []
    for hypothesis, task, _ in summary.STUDIES:
        if task not in LOGGED:
            continue
        steps = re.search(r"--steps (\d+)", seed_study().read_logs(LOGS / f"{task}.json.gz")["command"])[1]
        cells = [c.strip() for c in regenerated(task, tmp).split("| all |")[1].splitlines()[0].strip(" |").split("|")]
        runs, spread, mean, total = cells
        rows.append(f"| `{task}` | {hypothesis} | {runs} | {steps} | {total} min | {spread} s, {mean} s |")
    return rows
