"""Every figure in README.md and docs/**.md is recomputed from committed data or a command, or is a dated measurement
that names it, and tests/docs/figures.lock lists every one as written: a one-digit edit to any figure fails here.

**What counts as a figure** (tests/helpers/doc_figures.py): in prose, tables and unlabelled fences (printed output),
outside inline code, HTML comments, links, and fences of commands or code (```bash, ```python, ```yaml: their
numbers are settings), any number that

* has a decimal point (``0.886``, ``4.7e-6``), or ends with ``%``, or
* is followed by a unit of time or count (``27 s``, ``13 minutes``, ``40 steps``, ``10 seeds``, ``1,019 tests``), or
* is a table cell of its own (a count in a table).

Not figures: version numbers (``TRL 1.16``, ``Python >= 3.10``), arXiv ids, model sizes (``1.5B``), dates, numbers
inside identifiers (``Qwen2.5``, ``H100``) and whole numbers in prose without a unit (line references, ``G=291``).

**A figure passes** when one of these holds:

1. *Recomputed.* Its file and section (the headings above it) are listed in ``SOURCES``
   (tests/helpers/figure_table.py; the sources are in tests/helpers/figure_sources.py), and one of the
   section's sources, rounded as the figure is written, gives it (signs are ignored, as prose writes "0.18 lower";
   ``81%`` may be 0.81 or 81; a figure written "a ± b" or "[a, b]" matches only a pair of the source written so).
   In a table row (but those of ``SUMMARY_TABLES``), the figure and another figure of its row must come from
   one line of the source. A source reads committed data (``docs/results/logs/*.json.gz``: each run's
   ``log_history`` and the command that made it; ``docs/results/logs/eval_demo/*.json``) through the same scripts
   the docs name, or runs a cheap command (``scripts/advantage_groups.py``, pytest's collection).
2. *Measured.* Its block (paragraph, list item, table or fence) is followed by, or holds, the team's dated-measurement
   marker that names it: ``<!-- measured YYYY-MM-DD, <machine>: figures 27.4 s, 81%: <command> -->`` (each figure
   as written, ", " between them; the command is required). Such a figure is not recomputed here (a timing, a GPU
   run): the marker says when, where and how to measure it again. A marker covers the figures it names, not its
   block: another figure of the block fails. Markers written before figures were named
   (``<!-- measured YYYY-MM-DD, <machine>: <command> -->``) cover only the figures the lock lists as measured by
   that command, as written; a figure the marker names but its block no longer holds fails too.
3. *Cited.* Its block carries ``<!-- cited: figures 0.5, 0.667: <source> -->`` naming it: a figure quoted from
   elsewhere (the paper), not ours. As with a measured marker, one that names no figures covers only those the lock
   lists as cited from that source.
4. *A setting.* Its section's own command, code or config fences hold it (``--max_steps 2`` makes "2 steps" a
   setting), or it is one of ``SETTINGS``' design values of that file (the pre-registration's sample sizes,
   the statistic's levels), each listed with the reason it is not a result.

Generated files (``docs/results/<task>.md``) are compared whole with their regeneration from the raw logs, and
the per-run rows beside them (``docs/results/<task>.json``: each run's ``final`` per reward) with the rows
seed_study.py writes from the same logs.

**The lock.** tests/docs/figures.lock lists every figure of README.md and docs/**.md in order, each with its
section and what backs it (``recomputed <source>``, ``measured: <command>``, ``cited: <source>``, ``setting``,
``generated``). A figure edited, added, removed or backed differently without the same change in the lock fails
:func:`test_the_lock_lists_every_figure_as_written`: so a one-digit edit fails even where recomputation alone would
let it through (a figure changed to another of its sources' numbers, a measured figure). After a deliberate,
reviewed change to the docs, regenerate the lock and review its diff with the change:

    python -m tests.helpers.figure_lock --update

It refuses (exit 1, ``UNBACKED`` in the lock) any figure nothing backs. ``python -m tests.helpers.figure_sweep`` edits
every figure's last digit in turn and counts those these checks miss.

Limits: the lock pins what a figure says, not that it is right: a measured figure is only as good as its marker,
and an update run without review accepts any edit. A source that reads committed JSON reads it as written: the JSON
with raw rows beside it (study H8's analysis, cpu_path.json) is recomputed from them by
tests/docs/test_recomputed_json.py.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path

import pytest

from tests.helpers import figure_lock
from tests.helpers.figure_checks import UNBACKED, doc_files, stale_names
from tests.helpers.figure_sources import GENERATED, regenerated, regenerated_rows
from tests.helpers.studies import LOGGED, LOGS, OTHER_LOGS, RESULTS, ROOT, STUDIES


@functools.cache
def _found(tmp: str) -> dict:
    """Per file, (figure, kind) for every figure of the docs, the measured ones judged against the committed lock."""
    return figure_lock.current(tmp, figure_lock.read())


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    """One folder for the module: each study is regenerated from its logs once."""
    return str(tmp_path_factory.mktemp("figures"))


@pytest.fixture(scope="module")
def found(tmp):
    return _found(tmp)


@pytest.mark.slow  # about 15 s alone (pytest's collection of one file, two small subprocesses); longer under load
def test_every_figure_is_recomputed_measured_or_cited(found):
    checked = sum(map(len, found.values()))
    failures = [
        f"{f.path}:{f.line}: {f.text!r} ({f.section or 'top'})"
        for pairs in found.values()
        for f, kind in pairs
        if kind == UNBACKED and f.path not in GENERATED
    ]
    assert checked > 300, f"only {checked} figures found: the extraction is broken"
    assert not failures, (
        f"{len(failures)} figure(s) neither recomputed from committed data, nor named by a marker "
        "`<!-- measured YYYY-MM-DD, <machine>: figures A, B: <command> -->`, nor cited "
        "(tests/docs/test_figures.py says how):\n" + "\n".join(failures)
    )


@pytest.mark.slow
def test_the_lock_lists_every_figure_as_written(found):
    changes = figure_lock.differences(figure_lock.read(), figure_lock.as_entries(found))
    assert not changes, (
        "tests/docs/figures.lock differs from the docs' figures (- lock, + docs). If the change is deliberate and "
        "reviewed: python -m tests.helpers.figure_lock --update\n" + "\n".join(changes[:60])
    )


def test_measured_markers_name_figures_their_blocks_hold():
    stale = [s for rel in doc_files() for s in stale_names(rel, (ROOT / rel).read_text(encoding="utf-8"))]
    assert not stale, "a measured marker names a figure its block does not hold:\n" + "\n".join(stale)


@pytest.mark.parametrize("rel", [rel for rel in GENERATED if Path(rel).stem in LOGGED])
def test_generated_tables_are_regenerated_from_their_raw_logs(rel, tmp):
    task = Path(rel).stem
    assert (ROOT / rel).read_text(encoding="utf-8") == regenerated(task, tmp), rel


@pytest.mark.parametrize("task", [task for task in STUDIES if task in LOGGED])
def test_per_run_rows_equal_their_raw_logs(task, tmp):
    """docs/results/<task>.json, whose finals the study figures are recomputed from, row by row from the logs."""
    committed = json.loads((RESULTS / f"{task}.json").read_text(encoding="utf-8"))
    logged = json.loads(regenerated_rows(task, tmp))
    assert len(committed) == len(logged), task
    for row, expected in zip(committed, logged, strict=True):
        assert row == expected, f"docs/results/{task}.json: {row} but its raw logs give {expected}"


def test_markers_name_a_command():
    """A measured marker without a command, or a misspelt one, does not count (and is reported here)."""
    bad = []
    for rel in doc_files():
        for number, line in enumerate((ROOT / rel).read_text(encoding="utf-8").splitlines(), 1):
            for comment in re.findall(r"<!--\s*(measured|cited)\b.*?-->", line):
                if not re.search(r"<!-- (measured \d{4}-\d{2}-\d{2}, [^:]+: \S|cited: \S)", line):
                    bad.append(f"{rel}:{number}: {comment}")
    assert not bad, "malformed markers (want `<!-- measured YYYY-MM-DD, <machine>: <command> -->`):\n" + "\n".join(bad)


def test_logs_hold_their_commands():
    found = sorted(p.name for p in LOGS.glob("*.json.gz"))
    assert found == sorted(f"{t}.json.gz" for t in [*LOGGED, *OTHER_LOGS])
    for name in found:
        data = json.loads(gzip.decompress((LOGS / name).read_bytes()))
        assert data["command"].strip() and data["runs"], name
