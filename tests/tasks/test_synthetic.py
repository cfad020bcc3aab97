"""Tests for gdpo_trl.tasks.synthetic: determinism, and every answer recomputed here from the question's numbers."""

import os
import re

import pytest

from gdpo_trl.data.gsm8k import SYSTEM_PROMPT
from gdpo_trl.tasks.synthetic import TEMPLATES, generate_problems, load_synthetic

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# Written independently of the generator: for each template, the operand names in the order their numbers appear
# in the question, and the answer as a formula of those operands.
EXPECTED = {
    "buy_items": (["count", "price"], lambda o: o["count"] * o["price"]),
    "share_equally": (["total", "friends"], lambda o: o["total"] / o["friends"]),
    "speed_time": (["speed", "hours"], lambda o: o["speed"] * o["hours"]),
    "add_remove": (["start", "gained", "lost"], lambda o: o["start"] + o["gained"] - o["lost"]),
    "multiply_groups": (["boxes", "per_box", "extra"], lambda o: o["boxes"] * o["per_box"] + o["extra"]),
    "leftover_after_spending": (["money", "count", "price"], lambda o: o["money"] - o["count"] * o["price"]),
    # The fraction is written in words, so only the total appears as digits; the word is checked separately.
    "fraction_given_away": (["total"], lambda o: o["total"] - o["total"] / o["denominator"]),
    "two_items_total": (
        ["count1", "price1", "count2", "price2"],
        lambda o: o["count1"] * o["price1"] + o["count2"] * o["price2"],
    ),
    "wage_then_spend": (["rate", "hours", "days", "spent"], lambda o: o["rate"] * o["hours"] * o["days"] - o["spent"]),
    "packs_keep_share": (
        ["packs", "per_pack", "kept", "friends"],
        lambda o: (o["packs"] * o["per_pack"] - o["kept"]) / o["friends"],
    ),
}
FRACTION_WORDS = {2: "half", 3: "a third", 4: "a quarter", 5: "a fifth"}
EQUATION = re.compile(r"(\d+(?:\s*[-+*/]\s*\d+)+)\s*=\s*(-?\d+)")

ROWS = generate_problems(600, seed=123)


def _gold(row):
    return row["answer"].rsplit("####", 1)[1].strip()


def test_deterministic_in_seed():
    assert generate_problems(50, seed=7) == generate_problems(50, seed=7)
    assert generate_problems(50, seed=7) != generate_problems(50, seed=8)
    # A longer run extends a shorter one with the same seed.
    assert generate_problems(80, seed=7)[:50] == generate_problems(50, seed=7)


def test_row_shape():
    assert generate_problems(0) == []
    for row in ROWS:
        assert set(row) == {"question", "answer", "equations", "steps", "template", "operands"}
        solution, _, gold = row["answer"].partition("\n#### ")
        assert solution.strip()  # a worked solution comes before the marker
        assert "####" not in gold


def test_every_template_is_covered_by_this_test():
    assert set(EXPECTED) == set(TEMPLATES)
    assert {row["template"] for row in ROWS} == set(TEMPLATES)
    assert len(TEMPLATES) >= 6


def test_answers_recomputed_from_question_numbers():
    for row in ROWS:
        order, formula = EXPECTED[row["template"]]
        operands = row["operands"]
        numbers = [int(n) for n in re.findall(r"\d+", row["question"])]
        assert numbers == [operands[name] for name in order], row["question"]
        if row["template"] == "fraction_given_away":
            assert FRACTION_WORDS[operands["denominator"]] in row["question"]
        expected = formula(operands)
        assert expected == int(expected), f"inexact division in {row['question']!r}"
        assert _gold(row) == str(int(expected)), row


def test_answers_are_small_non_negative_integers():
    for row in ROWS:
        assert re.fullmatch(r"\d+", _gold(row)), row["answer"]
        assert 0 <= int(_gold(row)) < 1000


def test_worked_solution_arithmetic_is_right():
    for row in ROWS:
        solution = row["answer"].rsplit("####", 1)[0]
        equations = EQUATION.findall(solution)
        assert len(equations) == row["steps"], solution
        for expression, result in equations:
            value = eval(expression)  # digits and + - * / only, per the regex
            assert value == int(result) >= 0, solution
        assert equations[-1][1] == _gold(row)


def test_steps_and_question_length():
    for row in ROWS:
        assert 1 <= row["steps"] <= 3
        assert row["steps"] == TEMPLATES[row["template"]][0]
        assert len(row["question"]) < 160


@pytest.mark.parametrize(("low", "high"), [(1, 1), (2, 2), (3, 3), (2, 3)])
def test_step_range_filter(low, high):
    rows = generate_problems(60, seed=1, min_steps=low, max_steps=high)
    # Exactly the templates in range are drawn, all of them (60 draws from at most 7 templates).
    assert {row["template"] for row in rows} == {
        name for name, (steps, _) in TEMPLATES.items() if low <= steps <= high
    }


@pytest.mark.parametrize(
    ("n", "kw", "message"),
    [
        (5, {"min_steps": 0}, "min_steps"),
        (5, {"max_steps": 4}, "max_steps"),
        (5, {"min_steps": 3, "max_steps": 2}, "min_steps"),
        (-1, {}, "n must be"),
    ],
)
def test_bad_arguments(n, kw, message):
    with pytest.raises(ValueError, match=message):
        generate_problems(n, **kw)


def test_load_synthetic_shape():
    rows = generate_problems(25, seed=3, max_steps=2)
    ds = load_synthetic(25, seed=3, max_steps=2)
    assert len(ds) == 25
    assert set(ds.column_names) == {"prompt", "answer", "steps", "template"}
    for example, row in zip(ds, rows, strict=True):
        assert example["prompt"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": row["question"]},
        ]
        assert example["answer"] == _gold(row)
        assert example["steps"] == row["steps"] <= 2
        assert example["template"] == row["template"]


def test_equations_are_the_solution_lines():
    """The structured equations and the worked-solution text come from one source and agree."""
    for row in ROWS:
        lines = row["answer"].rsplit("\n####", 1)[0].split("\n")
        assert len(row["equations"]) == len(lines) == row["steps"]
        for (left, op, right, result), line in zip(row["equations"], lines, strict=True):
            assert f"{left} {op} {right} = {result}" in line
        assert str(row["equations"][-1][3]) == _gold(row)


def test_template_and_operand_options():
    rows = generate_problems(300, seed=2, templates=["buy_items", "add_remove"], max_operand=7)
    assert {row["template"] for row in rows} == {"buy_items", "add_remove"}
    assert max(max(row["operands"].values()) for row in rows) == 7  # the bound is reached, never passed
    # Without the bound the same templates draw larger numbers (prices up to 20, counts up to 60).
    assert max(max(row["operands"].values()) for row in generate_problems(300, 2, templates=["buy_items"])) > 7


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"templates": ["buy_item"]}, "unknown or no templates"),
        ({"templates": []}, "unknown or no templates"),
        ({"templates": ["speed_time"], "max_operand": 5}, "speed_time never drew"),  # speeds are multiples of 5 >= 10
    ],
)
def test_bad_options(kw, message):
    with pytest.raises(ValueError, match=message):
        generate_problems(3, **kw)
