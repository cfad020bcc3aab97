"""H8's and H9's secondary reading (studies/second_reading.py): docs/results/second_reading.json and .md recomputed
from the committed evaluations, byte for byte, and its Welch intervals and McNemar tests checked against scipy on
values read here straight from the committed files (the analyses' per-run rates, every completion's rewards)."""

import gzip
import json

import numpy as np
import pytest
from scipy import stats as sps

from studies import second_reading
from tests.helpers.studies import RESULTS

pytestmark = pytest.mark.slow  # reads 22 evaluations and simulates the bootstrap: about ten seconds


@pytest.fixture(scope="module")
def result():
    return second_reading.reading()


def test_the_committed_reading_is_recomputed_from_the_committed_files(result):
    assert (RESULTS / "second_reading.json").read_text() == second_reading.json_text(result)
    assert (RESULTS / "second_reading.md").read_text() == second_reading.tables(result)


def _rewards(stem: str, arm: str, seed: int, outcome: str) -> np.ndarray:
    path = RESULTS / stem / f"eval-{arm}-seed{seed}" / "completions.jsonl.gz"
    rows = sorted(
        (json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()), key=lambda r: r["index"]
    )
    return np.array([row["rewards"][0][outcome] for row in rows])


@pytest.mark.parametrize("name", ["H9", "H8"])
def test_welch_intervals_and_mcnemar_against_scipy(result, name):
    study = next(s for s in result["studies"] if s["study"] == name)
    stem = second_reading.STUDIES[name]["stem"]
    analysis = json.loads((RESULTS / f"{stem}.json").read_text())
    rates = {(run["arm"], run["seed"]): run for run in analysis["runs"]}
    assert study["seeds"] == analysis["seeds"]
    for c in study["comparisons"]:
        first, second = c["difference"].split(" - ")
        a = [rates[first, s][c["outcome"]] for s in study["seeds"]]
        b = [rates[second, s][c["outcome"]] for s in study["seeds"]]
        ref = sps.ttest_ind(a, b, equal_var=False)
        assert c["welch_ci"] == pytest.approx(list(ref.confidence_interval()), abs=1e-9), c
        assert c["welch_p"] == pytest.approx(ref.pvalue, abs=1e-9)
        registered = next(r for r in analysis["comparisons"]
                          if r.get("difference", "gdpo - grpo") == c["difference"] and r["outcome"] == c["outcome"])  # fmt: skip
        assert c["registered_bootstrap_ci"] == registered["ci"] and c["welch_p"] == pytest.approx(registered["p"])
        won = lost = 0
        for seed, test in zip(study["seeds"], c["per_seed"], strict=True):
            x, y = _rewards(stem, first, seed, c["outcome"]), _rewards(stem, second, seed, c["outcome"])
            assert x.mean() == pytest.approx(rates[first, seed][c["outcome"]])  # the analysis's rate, per problem
            k, m = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
            assert (test["first_only"], test["second_only"]) == (k, m)
            expected = 1.0 if k + m == 0 else sps.binomtest(k, k + m, 0.5).pvalue
            assert test["p"] == pytest.approx(expected, rel=1e-12)
            won, lost = won + k, lost + m
        assert c["pooled"]["p"] == pytest.approx(sps.binomtest(won, won + lost, 0.5).pvalue, rel=1e-12)


def test_what_the_reading_says(result):
    """The figures docs/results/README.md states from it, as plain facts about the committed data."""
    h9 = next(s for s in result["studies"] if s["study"] == "H9")
    correctness = next(c for c in h9["comparisons"] if c["outcome"] == "correctness")
    assert [round(v, 3) for v in correctness["welch_ci"]] == [-0.030, 0.057]  # the audit's Welch interval
    assert round(h9["power"]["power_of_reported_difference"]["at_holm_level"], 2) == 0.47
    coverage = {c["seeds"]: c for c in result["bootstrap_coverage"]}
    assert coverage[3]["bootstrap"] < 0.85 < 0.94 < coverage[3]["welch"]  # far below its nominal 95% at 3 seeds
