"""The committed JSON the docs quote is what its raw rows give (tests/helpers/figure_recompute.py): study H8's analysis
and tables from every evaluated completion and the RL logs, byte for byte; cpu_path.json's medians, ratio, peaks and
shares of the bounds from each run's rows. And the check has teeth: a one-digit edit of a copy (a seed's outcome, a
CI bound, a table cell, an evaluation's summary or one completion's reward, a raw step time, a derived median) is
found. Three such edits once went through: the docs' figures are pinned by tests/docs/figures.lock, but the files
they are quoted from were read as written."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from gdpo_trl.eval.scoring import summarize
from tests.helpers.figure_recompute import H8, cpu_path_differences, h8_differences
from tests.helpers.studies import RESULTS

REAL = RESULTS / "real_model"
CPU_PATHS = ("cpu_path.json", "cpu_path_busy.json")


def edit_digit(text: str, anchor: str) -> str:
    """``text`` with the last digit of the first number after ``anchor`` changed (9 becomes 0): a one-digit edit."""
    start = text.index(anchor) + len(anchor)
    number = re.compile(r"\d+(\.\d+)?").search(text, start)
    end = number.end() - 1
    edited = text[:end] + str((int(text[end]) + 1) % 10) + text[end + 1 :]
    assert edited != text
    return edited


def edit_file(path: Path, anchor: str) -> None:
    path.write_text(edit_digit(path.read_text(), anchor))


@pytest.fixture
def h8_copy(tmp_path) -> Path:
    """A copy of H8's committed files laid out as under docs/results: evaluations, logs, analysis and tables."""
    shutil.copytree(RESULTS / H8, tmp_path / H8)
    (tmp_path / "logs").mkdir()
    shutil.copy(RESULTS / "logs" / f"{H8}.json.gz", tmp_path / "logs" / f"{H8}.json.gz")
    for suffix in (".json", ".md"):
        shutil.copy(RESULTS / f"{H8}{suffix}", tmp_path / f"{H8}{suffix}")
    return tmp_path


def test_h8_analysis_and_tables_are_their_recomputation():
    assert h8_differences(RESULTS) == []
    result = json.loads((RESULTS / f"{H8}.json").read_text())
    assert len(result["runs"]) == 15 and len(result["comparisons"]) == 9  # the whole design was compared


@pytest.mark.parametrize(
    ("name", "anchor", "expected"),
    [
        (f"{H8}.json", '"seed": 3,\n      "format": ', "runs[9].format: 0.716 but recomputed 0.715"),  # GDPO seed 3
        (f"{H8}.json", '"ci": [\n        -', "comparisons[0].ci[0]: -0.02399999999999992"),  # past a float's digits
        (f"{H8}.json", '"ci": [\n        -0.02399999999999991,\n        0.07', "comparisons[0].ci[1]"),  # the upper
        (f"{H8}.json", '"holm_p": ', "comparisons[0].holm_p"),  # a Holm-adjusted p
        (f"{H8}.json", '"training": {', "training.gdpo.format.per_step[0]"),  # a training curve's first point
        (f"{H8}.md", "| gdpo - sft | format | +0.08", "| gdpo - sft | format | +0.089 |"),  # a table cell
    ],
)
def test_a_one_digit_edit_of_h8s_analysis_is_found(h8_copy, name, anchor, expected):
    edit_file(h8_copy / name, anchor)
    found = h8_differences(h8_copy)
    assert len(found) == 1 and found[0].startswith(f"{name}:") and expected in found[0], found


def test_a_one_digit_edit_of_an_evaluations_summary_is_refused(h8_copy):
    edit_file(h8_copy / H8 / "eval-grpo-seed2" / "summary.json", '"format_rate": ')
    with pytest.raises(SystemExit, match=r"eval-grpo-seed2/summary.json: format_rate is .* but its completions give"):
        h8_differences(h8_copy)


def test_one_completions_reward_changes_the_analysis(h8_copy):
    """A seed's outcomes come from its completions: one completion's format flipped (and its summary made to agree,
    which the analysis would otherwise refuse) moves that seed's format by 1/200, and the committed files differ."""
    folder = h8_copy / H8 / "eval-gdpo-seed1"
    rows = [json.loads(line) for line in gzip.decompress((folder / "completions.jsonl.gz").read_bytes()).splitlines()]
    rows[0]["rewards"][0]["format"] = 1.0 - rows[0]["rewards"][0]["format"]
    (folder / "completions.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    summary = json.loads((folder / "summary.json").read_text())
    summary["metrics"] |= summarize(rows)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    found = h8_differences(h8_copy)
    assert any(line.startswith(f"{H8}.json:") for line in found) and any(
        line.startswith(f"{H8}.md:") for line in found
    )


@pytest.mark.parametrize("name", CPU_PATHS)
def test_cpu_path_derived_figures_are_their_raw_rows(name):
    assert cpu_path_differences(REAL / name) == []


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        # A raw step time: the second step of the first run of the float32 path, which the quoted median (86.85) uses.
        (
            '"before": [\n      {\n        "step_seconds": [\n          78.8,\n          ',
            "step_seconds_before: 86.85 but recomputed 86.9",
        ),
        ('"step_seconds_after": ', "step_seconds_after"),  # the derived median itself, past its last digit
        ('"peak_gb": ', "peak_gb_before"),  # the float32 path's first run's peak, the quoted 17.59
        ('"copy_gb_per_s": ', "share_of_copy_bandwidth"),  # a bound: generation's share of it
    ],
)
def test_a_one_digit_edit_of_cpu_path_is_found(tmp_path, anchor, expected):
    copy = tmp_path / "cpu_path.json"
    copy.write_text(edit_digit((REAL / "cpu_path.json").read_text(), anchor))
    found = cpu_path_differences(copy)
    assert found and expected in found[0], found
