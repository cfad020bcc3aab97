"""An independent oracle for the seed studies' statistics (docs/results/README.md, part 1).

Nothing here imports ``gdpo_trl.results.stats`` or ``studies/seed_study.py``: from the committed raw logs
(``docs/results/logs/<task>.json.gz``) this recomputes each run's final value with plain Python, the means and sample
standard deviations with numpy, Welch's t, df and p with scipy, the bootstrap interval from the pre-registered
recipe (and, within Monte Carlo error, with scipy's own bootstrap), the verdicts, and the exploratory Signal tables;
then it compares them with the numbers printed in ``docs/results/<task>.md`` and the rows of ``<task>.json``.
"""

import gzip
import json
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from tests.helpers.studies import LOGGED, PILOTS, RESULTS
from tests.helpers.studies import SEEDS as STUDY_SEEDS
from tests.helpers.studies import STUDIES as FLAGS

STUDIES = [task for task in LOGGED if task not in PILOTS]  # a fixed list: a missing study fails
METHOD = {"GRPO": "grpo", "GRPO w/o std": "grpo_no_std", "GDPO": "gdpo", "GDPO outcome only": "gdpo_outcome_only"}
METHOD["GD2PO"] = "gd2po"
TAIL, RESAMPLES, SEEDS = 10, 10_000, 10


def _logs(task: str) -> dict:
    return json.loads(gzip.decompress((RESULTS / "logs" / f"{task}.json.gz").read_bytes()))


def _finals(task: str) -> dict[tuple[str, int, str], float]:
    """``(method, seed, reward) -> final``: the mean of the last 10 logged values of each reward (and the total)."""
    out = {}
    for name, log in _logs(task)["runs"].items():
        method, seed = name.rsplit("-seed", 1)
        keys = {k for entry in log for k in entry if k.startswith("rewards/") and k.endswith("/mean")}
        for key in keys | {"reward"}:
            values = [entry[key] for entry in log if key in entry]
            reward = "total" if key == "reward" else key[len("rewards/") : -len("/mean")]
            out[(method, int(seed), reward)] = sum(values[-TAIL:]) / TAIL
    return out


def _table(task: str, heading: str) -> list[list[str]]:
    """The body rows of the first Markdown table after ``heading`` in docs/results/<task>.md, split into cells."""
    text = (RESULTS / f"{task}.md").read_text(encoding="utf-8")
    assert heading in text, f"{task}.md has no section {heading!r}"
    lines = text[text.index(heading) :].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    body = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        body.append([cell.strip() for cell in line.strip("|").split("|")])
    assert body, f"{task}.md: empty table after {heading!r}"
    return body


def _shows(text: str, *values: float) -> bool:
    """Whether ``text`` ("0.886 ± 0.020", "5.70 (14.0)", "[+0.051, +0.100]", "5.5e-05") shows ``values``, each
    rounded as printed: within half a unit of its last digit (plus 1e-9, so that a value exactly at a rounding tie,
    which two float summation orders may put on either side, is read the same by both)."""
    import re

    shown = re.findall(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?", text)
    if len(shown) != len(values):
        return False
    for number, value in zip(shown, values, strict=True):
        mantissa, _, exponent = number.partition("e")
        unit = 10.0 ** (int(exponent or 0) - len(mantissa.split(".")[1]))
        if abs(float(number) - value) > unit / 2 + 1e-9:
            return False
    return True


def _seeds(finals, method, reward) -> list[float]:
    return [v for (m, _, r), v in sorted(finals.items()) if m == method and r == reward]


@pytest.mark.parametrize("task", STUDIES)
def test_rows_are_each_runs_mean_of_its_last_ten_steps(task):
    rows = json.loads((RESULTS / f"{task}.json").read_text())
    committed = {(r["method"], r["seed"], r["reward"]): r["final"] for r in rows}
    finals = _finals(task)
    if "--no-total" in FLAGS[task]:  # exported with --no-total: the methods train on different sums
        finals = {k: v for k, v in finals.items() if k[2] != "total"}
    assert committed.keys() == finals.keys()
    for key, value in finals.items():
        assert committed[key] == pytest.approx(value, abs=1e-12), key


@pytest.mark.parametrize("task", STUDIES)
def test_summary_means_and_sample_stds(task):
    finals = _finals(task)
    body = _table(task, "## Final values")
    for label, reward, cell, seeds in body:
        values = _seeds(finals, METHOD[label], reward)
        assert len(values) == int(seeds) == STUDY_SEEDS.get(task, SEEDS), (task, label, reward)
        assert _shows(cell, np.mean(values), np.std(values, ddof=1)), (task, label, reward, cell)


def _pre_registered_bootstrap(a, b, seed=0):
    """Part 1's recipe: 10,000 resamples, each method's finals resampled with replacement on their own (a first,
    then b, from one numpy.random.default_rng(0) per comparison), the 2.5% and 97.5% percentiles of the difference."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a), np.asarray(b)
    resampled_a = a[rng.integers(0, len(a), size=(RESAMPLES, len(a)))].mean(axis=1)
    resampled_b = b[rng.integers(0, len(b), size=(RESAMPLES, len(b)))].mean(axis=1)
    return np.quantile(resampled_a - resampled_b, [0.025, 0.975])


@pytest.mark.parametrize("task", STUDIES)
def test_welch_bootstrap_and_verdicts_against_scipy(task):
    finals = _finals(task)
    body = _table(task, "against each other method")
    assert len(body) >= 4
    for reward, pair, baseline, diff, t_df, p, ci, verdict, *_ in body:
        method, other = (METHOD[x.strip()] for x in pair.split("−"))
        a, b = _seeds(finals, method, reward), _seeds(finals, other, reward)
        welch = sps.ttest_ind(a, b, equal_var=False)
        where = (task, reward, pair)
        assert _shows(baseline, np.mean(b)) and _shows(diff, np.mean(a) - np.mean(b)), where
        assert _shows(t_df, welch.statistic, welch.df), (where, t_df, welch)
        assert _shows(p, welch.pvalue) and ("e" in p) == (welch.pvalue < 0.001), (where, p, welch.pvalue)
        low, high = _pre_registered_bootstrap(a, b)
        assert _shows(ci, low, high), (where, ci, low, high)
        # scipy's percentile bootstrap draws other resamples: it agrees within Monte Carlo error.
        ref = sps.bootstrap(
            (a, b),
            lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
            method="percentile",
            n_resamples=RESAMPLES,
            paired=False,
            vectorized=True,
            rng=np.random.default_rng(1),
        ).confidence_interval
        assert abs(ref.low - low) < 0.01 and abs(ref.high - high) < 0.01, (where, ref, low, high)
        expected = "ahead" if low > 0 else "behind" if high < 0 else "level"
        assert verdict == f"**{expected}**", where


def _holm(pvalues: list[float]) -> list[float]:
    """Holm's adjusted p by its definition: for each p, the largest over the p-values no larger than it (ties
    included) of min(1, (m - rank + 1) p), rank counted from 1 among the ascending p-values."""
    ranked = sorted(pvalues)
    return [max(min(1.0, (len(ranked) - i) * q) for i, q in enumerate(ranked) if q <= p) for p in pvalues]


@pytest.mark.parametrize("task", [task for task in STUDIES if "--holm" in FLAGS[task]])
def test_holm_column_against_scipy_p_values(task):
    """The multiple-comparison reading of H7: Holm over the task's comparisons other than the total."""
    finals = _finals(task)
    body = [row for row in _table(task, "against each other method") if row[0] != "total"]
    pvalues = []
    for reward, pair, *_ in body:
        method, other = (METHOD[x.strip()] for x in pair.split("−"))
        pvalues.append(sps.ttest_ind(_seeds(finals, method, reward), _seeds(finals, other, reward), equal_var=False))
    adjusted = _holm([w.pvalue for w in pvalues])
    for row, p in zip(body, adjusted, strict=True):
        *_, verdict, shown, holds = row
        assert _shows(shown, p) or (shown == "1.000" and p == 1.0), (task, row, p)
        assert holds == ("-" if verdict == "**level**" else "yes" if p <= 0.05 else "no"), (task, row, p)


@pytest.mark.parametrize("task", STUDIES)
def test_signal_tables(task):
    """Each diagnostic: every run's mean over the steps that logged it, then mean ± sample std over seeds."""
    text = (RESULTS / f"{task}.md").read_text(encoding="utf-8")
    header = next(line for line in text[text.index("## Signal") :].splitlines() if line.startswith("| method"))
    keys = [cell.strip().strip("`") for cell in header.strip("|").split("|")][1:]
    assert "frac_reward_zero_std" in keys and any(k.endswith("/advantage_share") for k in keys)
    runs = _logs(task)["runs"]
    body = _table(task, "## Signal")
    assert len(body) == len({name.rsplit("-seed", 1)[0] for name in runs})
    for label, *cells in body:
        for key, cell in zip(keys, cells, strict=True):
            per_run = [
                statistics.fmean(entry[key] for entry in log if key in entry)
                for name, log in runs.items()
                if name.rsplit("-seed", 1)[0] == METHOD[label] and any(key in entry for entry in log)
            ]
            if not per_run:
                assert cell == "-", (task, label, key)
                continue
            assert _shows(cell, np.mean(per_run), np.std(per_run, ddof=1)), (task, label, key, cell)


def test_the_oracle_checks_some_study():
    assert len(STUDIES) >= 2, "no seed study has committed raw logs: the oracle above checked nothing"
