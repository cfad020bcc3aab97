"""The figures test's rules on small made-up pages (fast; tests/docs/test_figures.py applies them to the real docs):
a measured or cited marker covers only the figures it names or the lock lists, and the lock sees a one-digit edit."""

from __future__ import annotations

from tests.helpers import figure_lock
from tests.helpers.doc_figures import code_numbers, figures_in
from tests.helpers.figure_checks import UNBACKED, kind, stale_names

PAGE = "docs/made_up.md"  # no SOURCES entry matches its section


def _kinds(text: str, locked: frozenset = frozenset()) -> dict[str, str]:
    found = figures_in(text, PAGE)
    return {f.text: kind(f, "/nonexistent", code_numbers(text), locked) for f in found}


def test_a_measured_marker_covers_the_figures_it_names_only():
    text = (
        "# Made up\n\nIt took 27.4 s and 37 steps.\n<!-- measured 2026-11-26, a machine: figures 27.4 s: run it -->\n"
    )
    assert _kinds(text) == {"27.4 s": "measured: run it", "37 steps": UNBACKED}
    assert stale_names(PAGE, text.replace("27.4 s and", "28.4 s and")) == [f"{PAGE}: block of line 3: '27.4 s'"]


def test_a_marker_that_names_nothing_covers_what_the_lock_lists():
    text = "# Made up\n\nIt took 27.4 s and 37 steps.\n<!-- measured 2026-11-26, a machine: run it -->\n"
    assert set(_kinds(text).values()) == {UNBACKED}
    assert _kinds(text, frozenset({("run it", "27.4 s")})) == {"27.4 s": "measured: run it", "37 steps": UNBACKED}
    cited = "# Made up\n\nThe paper's 0.5 and 0.667.\n<!-- cited: figures 0.667: the paper -->\n"
    assert _kinds(cited) == {"0.5": UNBACKED, "0.667": "cited: the paper"}


def test_the_lock_sees_a_one_digit_edit_and_its_update_round_trips(tmp_path):
    entries = {PAGE: [("# Made up", "27.4 s", "measured: run it"), ("# Made up", "0.886", "recomputed x")]}
    path = tmp_path / "figures.lock"
    path.write_text(figure_lock.render(entries), encoding="utf-8")
    assert figure_lock.read(path) == entries
    assert figure_lock.locked_measured(entries) == {("run it", "27.4 s")}
    edited = {PAGE: [entries[PAGE][0], ("# Made up", "0.887", "recomputed x")]}
    assert [line for line in figure_lock.differences(entries, edited) if line[0] in "+-" and line[1] != line[0]] == [
        "-# Made up | 0.886\trecomputed x",
        "+# Made up | 0.887\trecomputed x",
    ]
    assert figure_lock.differences(entries, entries) == []


def test_the_sweep_raises_one_digit():
    from tests.helpers import figure_sweep as sweep
    assert sweep.bump("a 0.889 b", 2) == "a 0.880 b"
    assert sweep.bump("took 1,265 tests", 5) == "took 1,266 tests"
    assert sweep.bump("p 1.3e-04", 2) == "p 1.3e-05"
