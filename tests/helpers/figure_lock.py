"""tests/docs/figures.lock: every figure of README.md and docs/**.md, in order, with its file, section and what backs
it, so that an edit to any figure that is not also made in the lock fails tests/docs/test_figures.py.

After a deliberate, reviewed change to the docs' figures (or to what backs them), regenerate it and review its diff:

    python -m tests.helpers.figure_lock --update

A figure under a measured marker is written as measured only when the marker names it
(``<!-- measured DATE, MACHINE: figures 27.4 s, 81%: COMMAND -->``) or the old lock already lists it, as written,
as measured by that same command (and a cited figure likewise: ``<!-- cited: figures 0.5, 0.667: SOURCE -->``); any other figure nothing backs is written ``UNBACKED``, listed, and the update
exits 1 (the test fails on it until it is recomputed, named by a marker, cited or removed).
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

from tests.helpers.figure_checks import UNBACKED, doc_files, file_kinds
from tests.helpers.studies import ROOT

LOCK = ROOT / "tests" / "docs" / "figures.lock"
HEADER = (
    "# Every figure of README.md and docs/**.md: '@ file', '§ section', then 'figure<TAB>what backs it', in order.\n"
    "# Written by `python -m tests.helpers.figure_lock --update` (tests/docs/test_figures.py says when); review its diff.\n"
)


def read(path: Path = LOCK) -> dict[str, list[tuple[str, str, str]]]:
    """Per file, its figures as ``(section, figure, kind)``."""
    found: dict[str, list] = {}
    rel = section = ""
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line:
            continue
        if line.startswith("@ "):
            rel = line[2:]
            found[rel] = []
        elif line.startswith("§ "):
            section = line[2:]
        else:
            text, kind = line.split("\t", 1)
            found[rel].append((section, text, kind))
    return found


def locked_measured(lock: dict) -> frozenset:
    """The (command, figure) pairs the lock lists as measured, and the (source, figure) pairs it lists as cited: a
    marker that names no figures covers only these."""
    return frozenset(
        (kind.split(": ", 1)[1], text)
        for entries in lock.values()
        for _, text, kind in entries
        if kind.startswith(("measured: ", "cited: "))
    )


def render(entries: dict[str, list[tuple[str, str, str]]]) -> str:
    out = [HEADER]
    for rel, found in entries.items():
        out.append(f"@ {rel}\n")
        section = None
        for sec, text, kind in found:
            if sec != section:
                out.append(f"§ {sec}\n")
                section = sec
            out.append(f"{text}\t{kind}\n")
    return "".join(out)


def current(tmp: str, lock: dict) -> dict[str, list[tuple]]:
    """Per file, ``(figure, kind)`` for every figure the docs hold now."""
    measured = locked_measured(lock)
    return {rel: file_kinds(rel, (ROOT / rel).read_text(encoding="utf-8"), tmp, measured) for rel in doc_files()}


def as_entries(found: dict[str, list[tuple]]) -> dict[str, list[tuple[str, str, str]]]:
    return {rel: [(f.section, f.text, kind) for f, kind in pairs] for rel, pairs in found.items()}


def differences(lock: dict, entries: dict, context: int = 0) -> list[str]:
    """The lock's lines that the docs no longer hold (-) and the docs' lines the lock does not (+), per file."""
    out = []
    for rel in sorted(set(lock) | set(entries)):
        old = [f"{s} | {t}\t{k}" for s, t, k in lock.get(rel, [])]
        new = [f"{s} | {t}\t{k}" for s, t, k in entries.get(rel, [])]
        if old != new:
            diff = difflib.unified_diff(old, new, f"lock: {rel}", f"docs: {rel}", n=context, lineterm="")
            out += [line for line in diff if not line.startswith("@@")]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="rewrite tests/docs/figures.lock from the docs")
    args = parser.parse_args(argv)
    lock = read()
    with tempfile.TemporaryDirectory() as tmp:
        found = current(tmp, lock)
    entries = as_entries(found)
    changes = differences(lock, entries)
    print("\n".join(changes) if changes else "tests/docs/figures.lock lists every figure as the docs hold it")
    unbacked = [
        f"{f.path}:{f.line}: {f.text!r} ({f.section})" for pairs in found.values() for f, k in pairs if k == UNBACKED
    ]
    if args.update and changes:
        LOCK.write_text(render(entries), encoding="utf-8")
        print(f"wrote {LOCK.relative_to(ROOT)}: {sum(map(len, entries.values()))} figures; review `git diff` on it")
    if unbacked:
        print(f"{len(unbacked)} figure(s) nothing backs (recompute, name in a measured marker, cite or remove):")
        print("\n".join(unbacked))
    return 1 if unbacked or (changes and not args.update) else 0


if __name__ == "__main__":
    sys.exit(main())
