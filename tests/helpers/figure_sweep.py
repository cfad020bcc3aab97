"""Change the last digit of every figure of README.md and docs/**.md by +1 (9 becomes 0), one at a time in memory,
and count the edits tests/docs/test_figures.py's checks catch: the recomputation (a figure no longer recomputed,
named by its marker, or a generated table no longer equal to its regeneration) and the lock
(tests/docs/figures.lock). Also each per-run ``final`` of docs/results/<task>.json against its raw logs.

    python -m tests.helpers.figure_sweep            # every file
    python -m tests.helpers.figure_sweep README.md  # some files

Runs the checks in-process on each edited text (sources computed once), not pytest per edit. Prints per file the
figures edited, those caught by the checks, those caught by the lock alone, and those neither catches (listed);
exits 1 when any edit goes uncaught.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile

from tests.helpers import figure_lock
from tests.helpers.doc_figures import figures_in
from tests.helpers.figure_checks import UNBACKED, doc_files, file_kinds
from tests.helpers.figure_sources import regenerated_rows
from tests.helpers.studies import LOGGED, RESULTS, ROOT, STUDIES

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def bump(line: str, col: int) -> str:
    """The line with the last digit of the number starting at ``col`` raised by one (9 becomes 0)."""
    end = NUMBER.match(line, col).end()
    last = end - 1
    return line[:last] + str((int(line[last]) + 1) % 10) + line[end:]


def sweep_file(rel: str, tmp: str, lock: dict, measured: frozenset) -> tuple[int, int, list, list, list]:
    """(edits, caught by the checks, caught by the lock alone, uncaught, skipped: figures on a line already
    failing), the last three as lists of figures."""
    text = (ROOT / rel).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    found = figures_in(text, rel)
    failing = {f.line for f, k in file_kinds(rel, text, tmp, measured, found=found) if k == UNBACKED}
    locked = [(s, t) for s, t, _ in lock.get(rel, [])]
    edits = checks = 0
    by_lock, uncaught, skipped = [], [], []
    for figure in found:
        where = f"{rel}:{figure.line}: {figure.text!r} ({figure.section or 'top'})"
        if figure.line in failing:
            skipped.append(where)
            continue
        index = figure.line - 1
        edited_lines = [*lines[:index], bump(lines[index], figure.col), *lines[index + 1 :]]
        edited = "".join(edited_lines)
        again = figures_in(edited, rel)
        edits += 1
        kinds = file_kinds(rel, edited, tmp, measured, lines={figure.line}, found=again)
        if any(k == UNBACKED for _, k in kinds):
            checks += 1
        elif [(f.section, f.text) for f in again] != locked:
            by_lock.append(where)
        else:
            uncaught.append(where)
    return edits, checks, by_lock, uncaught, skipped


def sweep_rows(tmp: str) -> tuple[int, int, list[str]]:
    """Each per-run final of docs/results/<task>.json with its last digit raised (the last that changes its value),
    checked against the raw logs."""
    edits, caught, uncaught = 0, 0, []
    for task in (t for t in STUDIES if t in LOGGED):
        text = (RESULTS / f"{task}.json").read_text(encoding="utf-8")
        logged = json.loads(regenerated_rows(task, tmp))
        for m in re.finditer(r'"final": -?(\d[\d.e+-]*)', text):
            # The last digit that changes the parsed float (17 significant digits can end below its precision).
            digits = [m.start(1) + i for i, c in enumerate(m.group(1)) if c.isdigit()]
            edited = next(
                e
                for e in (text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :] for i in reversed(digits))
                if float(e[m.start(1) : m.end(1)]) != float(m.group(1))
            )
            edits += 1
            if json.loads(edited) != logged:
                caught += 1
            else:
                uncaught.append(f"docs/results/{task}.json, row {edits}: {m.group(0)}")
    return edits, caught, uncaught


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="files to sweep (default: README.md and docs/**.md)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the edits only the lock catches too")
    args = parser.parse_args(argv)
    lock = figure_lock.read()
    measured = figure_lock.locked_measured(lock)
    total = [0, 0, 0]
    survivors, lock_only, skipped = [], [], []
    verbose = args.verbose
    with tempfile.TemporaryDirectory() as tmp:
        for rel in args.files or doc_files():
            edits, checks, by_lock, uncaught, skip = sweep_file(rel, tmp, lock, measured)
            total = [total[0] + edits, total[1] + checks, total[2] + len(by_lock)]
            survivors, lock_only, skipped = survivors + uncaught, lock_only + by_lock, skipped + skip
            print(f"{rel}: {edits} edits; caught {checks} by the checks, {len(by_lock)} by the lock alone")
        row_edits, row_caught, row_uncaught = sweep_rows(tmp) if not args.files else (0, 0, [])
    edits, checks, by_lock = total
    print(
        f"\nfigures: {edits} one-digit edits; caught {checks + by_lock} ({checks} by the checks, {by_lock} by the lock "
        f"alone); uncaught {len(survivors)}"
    )
    if skipped:
        print(f"{len(skipped)} figure(s) not swept, their line already failing:\n  " + "\n  ".join(skipped))
    if row_edits:
        print(f"per-run rows: {row_edits} edits of a final; caught {row_caught}; uncaught {len(row_uncaught)}")
    for name, found in (
        ("caught by the lock alone", lock_only if verbose else []),
        ("uncaught", survivors + row_uncaught),
    ):
        if found:
            print(f"{name}:\n  " + "\n  ".join(found))
    return 1 if survivors or row_uncaught else 0


if __name__ == "__main__":
    sys.exit(main())
