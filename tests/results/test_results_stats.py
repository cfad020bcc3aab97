"""The studies' statistics (gdpo_trl/results/stats.py) on hand values, and the export: rows from run logs, the JSON
round trip, the tables."""

import json
import math

import pytest

from gdpo_trl.results import stats as rs


def test_betainc_hand_values():
    # I_x(2, 3) = P(Binomial(4, x) >= 2) = 1 - (1-x)^4 - 4x(1-x)^3; at x = 0.4: 1 - .1296 - .3456 = .5248.
    assert rs.betainc(2, 3, 0.4) == pytest.approx(0.5248, abs=1e-12)
    # I_x(1, b) = 1 - (1-x)^b; I_x(a, 1) = x^a; both sides of the continued-fraction switch.
    assert rs.betainc(1, 5, 0.1) == pytest.approx(1 - 0.9**5, abs=1e-12)
    assert rs.betainc(1, 5, 0.9) == pytest.approx(1 - 0.1**5, abs=1e-12)
    assert rs.betainc(3, 1, 0.7) == pytest.approx(0.343, abs=1e-12)
    assert rs.betainc(0.5, 0.5, 0.5) == pytest.approx(0.5, abs=1e-12)  # symmetric
    assert rs.betainc(2, 3, 0.0) == 0.0 and rs.betainc(2, 3, 1.0) == 1.0
    with pytest.raises(ValueError):
        rs.betainc(0, 1, 0.5)


@pytest.mark.parametrize("t", [0.0, 0.5, 1.0, 2.0, 7.5, -3.0])
def test_t_p_value_closed_forms(t):
    # df = 1 is the Cauchy distribution: P(|T| >= t) = 1 - (2/pi) atan|t|; df = 2: 1 - |t| / sqrt(2 + t^2).
    assert rs.t_two_sided_p(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(abs(t)), abs=1e-12)
    assert rs.t_two_sided_p(t, 2) == pytest.approx(1 - abs(t) / math.sqrt(2 + t * t), abs=1e-12)
    # A large df is nearly the normal distribution, erfc(|t| / sqrt 2) (the gap shrinks as 1 / df).
    assert rs.t_two_sided_p(t, 1e6) == pytest.approx(math.erfc(abs(t) / math.sqrt(2)), abs=1e-6)


def test_t_p_value_table_values():
    # Student's t table: the two-sided 5% critical values for 10 and 4 df; 1% for 20 df.
    assert rs.t_two_sided_p(2.228138852, 10) == pytest.approx(0.05, abs=1e-9)
    assert rs.t_two_sided_p(2.776445105, 4) == pytest.approx(0.05, abs=1e-9)
    assert rs.t_two_sided_p(2.845339710, 20) == pytest.approx(0.01, abs=1e-9)


def test_welch_hand_values():
    # a: mean 2.5, var 5/3 -> 5/12 per mean; b: mean 6, var 10 -> 2. t = -3.5 / sqrt(29/12);
    # df = (29/12)^2 / ((5/12)^2 / 3 + 2^2 / 4) = 5.520788 (Welch-Satterthwaite).
    result = rs.welch_t_test([1, 2, 3, 4], [2, 4, 6, 8, 10])
    assert result.t == pytest.approx(-3.5 / math.sqrt(29 / 12), abs=1e-12)
    assert result.df == pytest.approx((29 / 12) ** 2 / ((5 / 12) ** 2 / 3 + 1), abs=1e-12)
    assert result.p == pytest.approx(rs.t_two_sided_p(result.t, result.df))
    assert 0.05 < result.p < 0.10  # |t| = 2.25 with 5.5 df lies between the 10% and 5% critical values
    # Equal variances and sizes: df = 2n - 2 and the pooled t.
    equal = rs.welch_t_test([1, 2, 3], [2, 3, 4])
    assert equal.df == pytest.approx(4) and equal.t == pytest.approx(-1 / math.sqrt(2 / 3))


def test_welch_degenerate():
    assert rs.welch_t_test([1, 1], [1, 1]).p == 1.0
    same = rs.welch_t_test([2, 2, 2], [1, 1])
    assert same.p == 0.0 and same.t == math.inf
    with pytest.raises(ValueError):
        rs.welch_t_test([1], [1, 2])


def test_bootstrap_ci():
    assert rs.bootstrap_diff_ci([1, 1, 1], [0, 0], resamples=100) == (1.0, 1.0)
    a, b = [0.9, 1.1, 1.0, 1.2, 0.8], [0.1, -0.1, 0.0, 0.2, -0.2]
    ci = rs.bootstrap_diff_ci(a, b, seed=3)
    assert ci == rs.bootstrap_diff_ci(a, b, seed=3)  # seeded: reproducible
    assert ci[0] < 1.0 < ci[1] and ci[0] > 0.7 and ci[1] < 1.3
    # Resampled means never leave [min(a) - max(b), max(a) - min(b)].
    assert ci[0] >= 0.8 - 0.2 and ci[1] <= 1.2 + 0.2


def test_verdict():
    assert rs.verdict((0.01, 0.2)) == rs.AHEAD
    assert rs.verdict((-0.2, -0.01)) == rs.BEHIND
    assert rs.verdict((-0.1, 0.1)) == rs.LEVEL
    assert rs.verdict((0.0, 0.1)) == rs.LEVEL  # touching 0 does not exclude it
    assert rs.verdict((-0.2, -0.01), higher_is_better=False) == rs.AHEAD


def test_format_p():
    assert rs.format_p(0.0991) == "0.099" and rs.format_p(0.00012) == "1.2e-04" and rs.format_p(0.0) == "0.000"


def test_final_value_and_rows():
    values = [float(i) for i in range(20)]
    assert rs.final_value(values, 10) == pytest.approx(14.5)  # mean of 10..19
    with pytest.raises(ValueError):
        rs.final_value(values[:5], 10)
    rows = rs.run_rows("t", "gdpo", 3, {"format": values, "total": [1.0] * 12}, tail=10)
    assert rows == [
        {"task": "t", "method": "gdpo", "seed": 3, "reward": "format", "final": 14.5},
        {"task": "t", "method": "gdpo", "seed": 3, "reward": "total", "final": 1.0},
    ]


def _rows():
    rows = []
    for seed, (g, r) in enumerate([(1.0, 0.0), (2.0, 1.0), (3.0, 2.0)]):
        rows += rs.run_rows("t", "gdpo", seed, {"format": [g] * 10}, 10)
        rows += rs.run_rows("t", "grpo", seed, {"format": [r] * 10}, 10)
    return rows


def test_json_round_trip_and_tables(tmp_path):
    rows = _rows()
    path = rs.write_rows(rows, tmp_path / "sub" / "t.json")
    assert rs.read_rows(path) == rows
    assert rs.finals(rs.read_rows(path), "gdpo", "format") == [1.0, 2.0, 3.0]
    summary = rs.summary_table(rows, {"gdpo": "GDPO"})
    assert "| GDPO | format | 2.000 ± 1.000 | 3 |" in summary and "| grpo | format | 1.000 ± 1.000 | 3 |" in summary
    c = rs.compare(rows, "format", "gdpo", "grpo", resamples=1000)
    # t = 1 / sqrt(1/3 + 1/3) = 1.2247, df = 4.
    assert c.diff == pytest.approx(1.0) and c.welch.t == pytest.approx(math.sqrt(1.5)) and c.welch.df == 4
    assert c.verdict == rs.LEVEL  # 3 seeds of spread 1 cannot tell a difference of 1
    assert "| format | gdpo − grpo | 1.000 | +1.000 | 1.22 (4.0) |" in rs.comparison_table([c])
    with_m = rs.comparison_table([c], bonferroni_m=4)
    assert with_m.splitlines()[0].endswith("| p < 0.05/4 |") and with_m.splitlines()[-1].endswith("**level** | - |")
    (tmp_path / "bad.json").write_text(json.dumps([{"task": "t", "seed": 0}]))
    with pytest.raises(ValueError):
        rs.read_rows(tmp_path / "bad.json")
    with pytest.raises(KeyError):
        rs.finals(rows, "gdpo", "missing")


def test_holm_adjusted_p_values():
    # Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, then 0.04 x 1 = 0.04 raised to the running 0.06.
    assert rs.holm_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert rs.holm_adjusted([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert rs.holm_adjusted([0.02]) == [0.02] and rs.holm_adjusted([]) == []
    rows = [*_method_rows("gd2po", [1.0, 1.1, 1.2]), *_method_rows("gdpo", [0.0, 0.1, 0.2])]
    c = rs.compare(rows, "f", "gd2po", "gdpo", seed=0)
    table = rs.comparison_table([c, c], {"gd2po": "GD2PO"}, bonferroni_m=2, holm={0: 0.004})
    head, _, first, second = table.splitlines()
    assert head.endswith("| Holm p | holds under Holm |") and "0.05/2" not in head
    assert first.endswith("**ahead** | 0.004 | yes |") and second.endswith("**ahead** | - | - |")


def _method_rows(method: str, finals: list[float]) -> list[dict]:
    return [{"task": "t", "method": method, "seed": s, "reward": "f", "final": v} for s, v in enumerate(finals)]
