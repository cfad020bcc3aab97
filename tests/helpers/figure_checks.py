"""What backs each figure of README.md and docs/**.md: the rule tests/docs/test_figures.py states, applied to a file's
text in-process, so that tests/helpers/figure_sweep.py can apply it to thousands of edited copies."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from tests.helpers.doc_figures import Figure, code_numbers, figures_in, matches, matches_pair, numbers, pairs
from tests.helpers.figure_sources import GENERATED, regenerated
from tests.helpers.figure_table import LINE_SOURCES, ROW_SOURCES, SETTINGS, SOURCES, SUMMARY_TABLES
from tests.helpers.studies import ROOT

UNBACKED = "UNBACKED"


def doc_files() -> list[str]:
    """README.md and every docs/**.md, relative to the repository."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(found) > 5, "README.md and docs/**.md not found"
    return [str(p.relative_to(ROOT)) for p in found]


def _at(pattern: str, figure: Figure, section: str) -> bool:
    return bool(re.fullmatch(pattern, figure.path) and re.search(section, figure.section))


def _summary_table(figure: Figure) -> bool:
    return any(_at(path, figure, section) for path, section in SUMMARY_TABLES)


@functools.cache
def _rows(source, tmp: str) -> frozenset:
    return frozenset(source(tmp))


@functools.cache
def _values(source, tmp: str) -> tuple[list[float], list[tuple], list[list[float]]]:
    """A source's numbers and, when it returns text, its "a ± b" and "[a, b]" pairs and each table row's numbers.
    A table's header row is left out: its numbers are labels ("steps 21-30", "p < 0.05/4"), not results."""
    found = source(tmp)
    if not isinstance(found, str):
        return found, [], []
    lines = found.splitlines()
    headers = {i for i in range(len(lines) - 1) if lines[i].startswith("|") and lines[i + 1].startswith("|---")}
    found = "\n".join(line for i, line in enumerate(lines) if i not in headers)
    return numbers(found), pairs(found), [numbers(line) for line in found.splitlines() if line.startswith("|")]


def recomputed(figure: Figure, tmp: str, mates: tuple = (), line: str = "") -> str | None:
    """The name of the source that recomputes a figure, or None; ``mates``: the other figures of its table row;
    ``line``: the line it is on."""
    for path, section, rows in ROW_SOURCES:
        if figure.row and _at(path, figure, section):
            return rows.__name__ if figure.row in _rows(rows, tmp) else None
    for path, section, pattern, printed in LINE_SOURCES:
        if _at(path, figure, section) and re.match(pattern, line.strip()):
            return printed.__name__ if line.strip() in _rows(printed, tmp) else None
    for path, section, sources in SOURCES:
        if not _at(path, figure, section):
            continue
        for source in sources:
            values, value_pairs, lines = _values(source, tmp)
            if not (matches_pair(figure, value_pairs) if figure.pair else matches(figure, values)):
                continue
            name = source.__qualname__
            if not (figure.row and mates and lines) or _summary_table(figure):
                return name
            # In a table row, the figure and another figure of its row must come from one line of the source (a
            # row of its table), not from anywhere in it.
            if any(matches(figure, line) and any(matches(m, line) for m in mates) for line in lines):
                return name
    return None


def kind(figure: Figure, tmp: str, code: dict, locked_measured: frozenset, mates: tuple = (), line: str = "") -> str:
    """How a figure is backed, as tests/docs/figures.lock records it: ``setting``, ``recomputed <source>``,
    ``measured: <command>``, ``cited: <source>``, or :data:`UNBACKED`. ``code``: its file's :func:`code_numbers`;
    ``locked_measured``: the (command or source, figure) pairs the lock lists as measured or cited."""
    if figure.text in SETTINGS.get(figure.path, {}):
        return "setting"
    if figure.decimals == 0 and not figure.percent and matches(figure, code.get(figure.section, [])):
        return "setting"
    source = recomputed(figure, tmp, mates, line)
    if source:
        return f"recomputed {source}"
    for command in figure.commands:  # a measured marker's command, or a cited marker's source
        if (command, figure.text) in figure.named or (command, figure.text) in locked_measured:
            return f"{figure.marked}: {command}"
    return UNBACKED


def row_mates(figure: Figure, found: list[Figure]) -> tuple:
    return tuple(f for f in found if f.line == figure.line and f.row and f.value != figure.value)


def file_kinds(rel: str, text: str, tmp: str, locked_measured: frozenset, lines=None, found=None) -> list:
    """``(figure, kind)`` for every figure of a file's text (of ``lines`` only, when given; ``found``: its figures,
    when already extracted). A generated file's figures are ``generated`` when the whole file equals its
    regeneration from the raw logs, else unbacked."""
    found = figures_in(text, rel) if found is None else found
    if rel in GENERATED:
        same = text == regenerated(Path(rel).stem, tmp)
        return [(f, "generated" if same else UNBACKED) for f in found if lines is None or f.line in lines]
    code, text_lines = code_numbers(text), text.splitlines()
    return [
        (f, kind(f, tmp, code, locked_measured, row_mates(f, found), text_lines[f.line - 1]))
        for f in found
        if lines is None or f.line in lines
    ]


def stale_names(rel: str, text: str) -> list[str]:
    """Figures a measured marker names that its block does not hold (a name left behind by an edit)."""
    found = figures_in(text, rel)
    by_block: dict[int, set] = {}
    for f in found:
        by_block.setdefault(f.block, set()).add(f.text)
    stale = set()
    for f in found:
        stale |= {(f.line, name) for _, name in f.named if name not in by_block[f.block]}
    return [f"{rel}: block of line {line}: {name!r}" for line, name in sorted(stale)]
