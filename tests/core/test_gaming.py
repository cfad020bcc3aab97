"""The gaming watch's rule (gdpo_trl/core/gaming.py, docs/gaming.md) against hand-computed windows."""

import math

import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.core.gaming import GamingRule, check_window, scan, training_entries, warning_text


def entry(step, length, **means):
    return {"step": step, "completions/mean_length": length, **{f"rewards/{k}/mean": v for k, v in means.items()}}


# H9's shape: format climbs, correctness stays near 0, completions shorten.
GAMING = [
    entry(1, 200.0, format=0.0, correctness=0.0, integer=0.5),
    entry(2, 160.0, format=0.2, correctness=0.0625, integer=0.6),
    entry(3, 90.0, format=0.5, correctness=0.0, integer=0.9),
    entry(4, 70.0, format=0.8, correctness=0.0625, integer=1.0),
]


def test_fires_on_an_easy_reward_rising_alone_with_shorter_completions():
    check = check_window(GAMING)
    # halves: format 0.1 -> 0.65, integer 0.55 -> 0.95, correctness 0.03125 -> 0.03125, length 180 -> 80
    assert check.fired and check.step == 4 and check.hardest == "correctness"
    assert check.risen == ("format", "integer")  # largest rise first: 0.55 then 0.40
    assert check.easy_rise == pytest.approx(0.55) and check.hard_rise == pytest.approx(0.0)
    assert check.length_change == pytest.approx(80 / 180 - 1)
    assert check.metrics() == {
        "gaming/fired": 1.0,
        "gaming/easy_rise": pytest.approx(0.55),
        "gaming/hard_rise": pytest.approx(0.0),
        "gaming/length_change": pytest.approx(80 / 180 - 1),
    }
    line = warning_text(check)
    assert "at step 4" in line and "format 0.10 -> 0.65" in line and "correctness" in line
    assert "180 -> 80 tokens" in line and "reward_conditions" in line and "\n" not in line


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"correctness": [0.0, 0.0, 0.1, 0.1]}, "the hardest rises by 0.1 >= 0.05"),
        ({"length": [200.0, 160.0, 150.0, 130.0]}, "length 180 -> 140 is a fall of 22% < 25%"),
        ({"format": [0.0, 0.2, 0.2, 0.3], "integer": [0.5, 0.6, 0.6, 0.7]}, "rises of 0.15 < 0.25"),
    ],
)
def test_stays_silent_when_one_condition_fails(change, why):
    entries = [dict(e) for e in GAMING]
    for name, values in change.items():
        key = "completions/mean_length" if name == "length" else f"rewards/{name}/mean"
        for e, value in zip(entries, values, strict=True):
            e[key] = value
    assert check_window(entries).fired is False, why


def test_the_hardest_already_met_is_no_gaming():
    # correctness at 0.6 (>= hard_ceiling 0.5) is the lowest mean, flat; format rises, completions shorten.
    entries = [entry(i + 1, 200.0 - 40 * i, format=0.6 + 0.2 * i, correctness=0.6) for i in range(4)]
    check = check_window(entries)
    assert check.hardest == "correctness" and check.risen == ("format",) and not check.fired
    assert check_window(entries, GamingRule(hard_ceiling=0.7)).fired


def test_tie_for_hardest_takes_the_first_logged():
    entries = [entry(i + 1, 100.0, a=0.0, b=0.0) for i in range(4)]
    assert check_window(entries).hardest == "a"


def test_scan_judges_from_the_window_th_training_step_and_skips_other_entries():
    history = [*GAMING[:2], {"step": 2, "eval_loss": 1.0}, *GAMING[2:], entry(5, 60.0, format=0.9, correctness=0.0,
               integer=1.0), {"step": 5, "train_runtime": 3.0}]  # fmt: skip
    assert len(training_entries(history)) == 5
    checks = scan(history)
    assert [c.step for c in checks] == [4, 5]
    assert scan(history, GamingRule(window=6)) == []


def test_windows_it_cannot_judge():
    one_reward = [entry(i + 1, 100.0, a=float(i)) for i in range(4)]
    assert check_window(one_reward) is None
    # A reward with a missing mean in the window is left out; with one reward left, nothing to judge.
    gap = [dict(e) for e in GAMING]
    del gap[1]["rewards/format/mean"]
    gap[2]["rewards/integer/mean"] = math.nan
    assert check_window(gap) is None
    assert check_window(GAMING[:3]) is None


@pytest.mark.parametrize(
    "bad", [{"window": 3}, {"window": 0}, {"rise": math.nan}, {"length_drop": 1.0}, {"length_drop": -0.1}]
)
def test_bad_thresholds_are_refused_in_one_line(bad):
    with pytest.raises(InputError, match="gaming watch"):
        GamingRule(**bad)
