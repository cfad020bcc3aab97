"""Whole numbers in prose that count something are figures (tests/helpers/doc_figures.py's OF_PAIR and grouped
thousands): H9's "1,169 of them" and "47 of GDPO's 60" are recomputed from the committed files, and a one-digit edit
of either is caught."""

from pathlib import Path

import pytest

from tests.helpers import figure_lock
from tests.helpers.doc_figures import figures_in
from tests.helpers.figure_checks import UNBACKED, file_kinds

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "docs/results/README.md"


@pytest.mark.parametrize(
    ("prose", "figures"),
    [
        ("and 1,169 of them think in one line", ["1,169"]),
        ("in 47 of GDPO's 60 training groups", ["47", "60"]),
        ("14 of the 30 runs", ["14", "30 runs"]),
        ("had reached step 12 of 30 in 8 min", ["8 min"]),  # a position, not a count
        ("the last 5 of 40 steps", ["40 steps"]),  # a window
        ("Qwen2.5 of 3 kinds, H100", []),
    ],
)
def test_which_whole_numbers_count(prose, figures):
    assert [f.text for f in figures_in(prose, "docs/x.md")] == figures


def _h9_block(text: str) -> set[int]:
    """The lines of H9's "What both arms learned" bullet."""
    start = text.index("* **What both arms learned.**")
    end = text.index("* **The expectation written before the runs** (level; format")
    return set(range(text.count("\n", 0, start) + 1, text.count("\n", 0, end) + 1))


@pytest.mark.parametrize(("written", "edited"), [("1,169 of them", "1,168 of them"), ("47 of GDPO", "48 of GDPO")])
def test_the_lock_lists_h9s_counts_so_a_one_digit_edit_fails(written, edited):
    text = (ROOT / RESULTS).read_text(encoding="utf-8")
    lines = _h9_block(text)
    locked = [figure for _, figure, _ in figure_lock.read()[RESULTS]]
    count = written.split(" of ")[0]
    assert [f.text for f in figures_in(text, RESULTS) if f.line in lines].count(count) == 1
    assert count in locked
    changed = text.replace(written, edited, 1)
    assert [f.text for f in figures_in(changed, RESULTS) if f.line in lines].count(edited.split(" of ")[0]) == 1


@pytest.mark.slow  # recomputes H9's counts from every committed completion (a few seconds)
def test_h9s_one_line_count_is_recomputed_and_its_edit_is_not(tmp_path):
    text = (ROOT / RESULTS).read_text(encoding="utf-8")
    lines = _h9_block(text)
    kinds = {f.text: kind for f, kind in file_kinds(RESULTS, text, str(tmp_path), frozenset(), lines)}
    assert kinds["1,169"] == "recomputed h9_audit" and kinds["1,200"] != UNBACKED
    edited = text.replace("1,169 of them", "1,168 of them", 1)
    kinds = {f.text: kind for f, kind in file_kinds(RESULTS, edited, str(tmp_path), frozenset(), lines)}
    assert kinds["1,168"] == UNBACKED
