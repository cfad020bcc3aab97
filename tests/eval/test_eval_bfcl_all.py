"""BFCL on all of its AST data: every entry of the four categories, rendered from its possible answers (optional
parameters kept, and omitted), scored through gdpo eval's own scoring path; and wrong answers of many kinds fail."""

import copy
import json

import pytest

from tests.helpers.requirements import require_bfcl

require_bfcl()  # skips without bfcl-eval, fails in CI

from gdpo_trl.eval.bfcl import CATEGORIES, evaluate_bfcl, load_category, score_completion  # noqa: E402
from gdpo_trl.eval.bfcl_render import answer_calls, answer_completion, render_completion  # noqa: E402

SIZES = {"simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200}

# Entries that pass under one rendering only, with BFCL's own reason for failing the other. Each is an
# inconsistency between BFCL's possible answer and its function schema:
ONLY_KEPT = {  # the possible answer marks a parameter optional (""), the schema lists it as required
    "simple_python_17": "Missing required parameter: 'formatted'.",
    "simple_python_200": "Missing required parameter: 'fuel_efficiency'.",
    "parallel_88": "Missing required parameter: 'initial_velocity'.",
    "parallel_multiple_87": "Missing required parameter: 'initial_velocity'.",
    "parallel_multiple_119": "Missing required parameter: 'league_name'.",
}
ONLY_OMITTED = {  # the possible answer offers a value for a parameter the function does not have
    "parallel_multiple_12": "Unexpected parameter: 'permeability'.",
    "parallel_multiple_26": "Unexpected parameter: 'type'.",
}


@pytest.fixture(scope="module")
def everything():
    return {category: load_category(category) for category in CATEGORIES}


@pytest.fixture(scope="module")
def verdicts(everything):
    """entry id -> {True: row with optional parameters kept, False: row with them omitted}."""
    return {
        entry["id"]: {
            keep: score_completion(entry, category, answer_completion(entry, keep_optional=keep))
            for keep in (True, False)
        }
        for category, entries in everything.items()
        for entry in entries
    }


def test_all_entries_are_covered(everything, verdicts):
    assert {category: len(entries) for category, entries in everything.items()} == SIZES
    assert len(verdicts) == sum(SIZES.values()) == 1000


def test_every_entry_passes_under_at_least_one_rendering(verdicts):
    failing = {
        i: rows[True]["error"] for i, rows in verdicts.items() if not (rows[True]["valid"] or rows[False]["valid"])
    }
    assert not failing
    assert sum(rows[True]["valid"] for rows in verdicts.values()) == 1000 - len(ONLY_OMITTED)  # 998
    assert sum(rows[False]["valid"] for rows in verdicts.values()) == 1000 - len(ONLY_KEPT)  # 995
    # Every completion is in the training layout, so format is 1 everywhere.
    assert all(row["format"] for rows in verdicts.values() for row in rows.values())


def test_entries_passing_under_one_rendering_only_and_why(verdicts):
    only = {
        keep: {i for i, rows in verdicts.items() if rows[keep]["valid"] and not rows[not keep]["valid"]}
        for keep in (True, False)
    }
    assert only == {True: set(ONLY_KEPT), False: set(ONLY_OMITTED)}
    for reasons, failed in ((ONLY_KEPT, False), (ONLY_OMITTED, True)):
        for entry_id, reason in reasons.items():
            assert reason in verdicts[entry_id][failed]["error"], verdicts[entry_id][failed]["error"]


def test_nested_options_are_resolved_at_every_depth(everything):
    by_id = {entry["id"]: entry for entries in everything.values() for entry in entries}
    (call,) = answer_calls(by_id["simple_python_89"])  # a dictionary parameter: {key: [options]}
    assert call["parameters"]["conditions"] == {"department": "Science", "school": "Bluebird High School"}
    (call,) = answer_calls(by_id["simple_python_96"])  # a list of dictionaries, each {key: [options]}
    assert call["parameters"]["conditions"][1] == {"field": "job", "operation": "=", "value": "engineer"}
    (call,) = answer_calls(by_id["simple_python_0"], keep_optional=False)  # "unit": ["units", ""] left out
    assert call == {"name": "calculate_triangle_area", "parameters": {"base": 10, "height": 5}}
    nested = {"id": "x", "possible_answer": [{"f": {"d": [{"a": ["", 1], "b": [[{"c": [2, ""]}]]}]}}]}
    assert answer_calls(nested) == [{"name": "f", "parameters": {"d": {"a": 1, "b": [{"c": 2}]}}}]
    assert answer_calls(nested, keep_optional=False) == [{"name": "f", "parameters": {"d": {"b": [{}]}}}]
    with pytest.raises(ValueError, match="one {name: params}"):
        answer_calls({"id": "y", "possible_answer": [{"f": {}, "g": {}}]})


def test_gdpo_eval_path_on_all_entries(everything):
    """evaluate_bfcl itself (prompt rendering, per-category report) with the kept renderings as the 'model'."""
    answers = iter([[answer_completion(entry) for entry in everything[category]] for category in CATEGORIES])
    summary = evaluate_bfcl(generate_fn=lambda prompts: next(answers))
    n = {category: stats["n"] for category, stats in summary["categories"].items()}
    assert n == SIZES
    assert summary["categories"]["parallel_multiple"]["accuracy"] == pytest.approx(198 / 200)
    assert summary["overall"]["accuracy"] == pytest.approx(998 / 1000)


def _mutated(entry, change):
    calls = copy.deepcopy(answer_calls(entry))
    change(calls)
    return render_completion(calls)


def _set(index, key, value):
    def change(calls):
        calls[index]["parameters"][key] = value

    return change


def _drop(index, key):
    return lambda calls: calls[index]["parameters"].pop(key)


def _line(text):
    return f"<think>x</think>\n<tool_call>\n{text}\n</tool_call>"


GOOD_SIMPLE = json.dumps({"name": "calculate_triangle_area", "parameters": {"base": 10, "height": 5}})
WRONG = [  # (category, entry index, completion or change of the right calls, a piece of BFCL's reason)
    ("simple", 0, lambda c: c[0].update(name="calculate_triangle_areas"), "not found in model output"),
    ("simple", 0, _set(0, "base", "10"), "Incorrect type for parameter 'base'"),
    ("simple", 0, _set(0, "base", 10.0), "Incorrect type for parameter 'base'"),
    ("simple", 0, _set(0, "base", True), "Incorrect type for parameter 'base'"),
    ("simple", 0, _drop(0, "height"), "Missing required parameter: 'height'"),
    ("simple", 0, _set(0, "color", "red"), "Unexpected parameter: 'color'"),
    ("simple", 0, _set(0, "base", 11), "Invalid value for parameter 'base'"),
    ("simple", 0, _set(0, "unit", "cm"), "Invalid value for parameter 'unit'"),
    ("simple", 0, lambda c: c.append(c[0]), "Wrong number of functions"),
    ("simple", 0, _line(GOOD_SIMPLE.replace('"', "'")), "no readable <tool_call> block"),  # malformed JSON
    ("simple", 0, _line(GOOD_SIMPLE)[: -len("</tool_call>")], "no readable <tool_call> block"),  # no closing tag
    ("simple", 0, "<think>x</think>\n<response>The area is 25.</response>", "no readable <tool_call> block"),
    ("simple", 0, _line(json.dumps({"name": "calculate_triangle_area"})), "no readable <tool_call> block"),
    ("simple", 0, _line(json.dumps({"name": "calculate_triangle_area", "parameters": [10, 5]})), "no readable"),
    ("simple", 0, _line(json.dumps({"name": 7, "parameters": {"base": 10, "height": 5}})), "no readable"),
    ("simple", 0, _line(""), "no readable <tool_call> block"),  # empty block
    ("simple", 0, _line(GOOD_SIMPLE + "\u00a0\n" + GOOD_SIMPLE), "no readable <tool_call> block"),  # no-break space
    ("simple", 89, lambda c: c[0]["parameters"]["conditions"].update(department="Arts"), "Invalid value"),
    ("simple", 89, lambda c: c[0]["parameters"]["conditions"].update(grade=9), "Unexpected dict key parameter"),
    ("simple", 96, lambda c: c[0]["parameters"]["conditions"].pop(), "Wrong number of dictionaries"),
    ("multiple", 0, lambda c: c[0].update(name="circle_properties.get"), "not found in model output"),
    ("parallel", 0, lambda c: c.pop(), "Wrong number of functions"),
    ("parallel", 0, lambda c: c.append(c[0]), "Wrong number of functions"),
    ("parallel", 0, lambda c: c.__setitem__(1, c[0]), "Could not find a matching function"),
    ("parallel_multiple", 0, _set(0, "multiples", [3, 6]), "Invalid value for parameter 'multiples'"),
    ("parallel_multiple", 0, lambda c: c.reverse() or c[0].update(name=c[1]["name"]), "Could not find a matching"),
]


@pytest.mark.parametrize(("category", "index", "wrong", "reason"), WRONG)
def test_wrong_answers_fail_with_bfcls_reason(everything, category, index, wrong, reason):
    entry = everything[category][index]
    assert score_completion(entry, category, answer_completion(entry))["valid"]  # the right answer passes
    text = wrong if isinstance(wrong, str) else _mutated(entry, wrong)
    row = score_completion(entry, category, text)
    assert not row["valid"] and reason in row["error"], row["error"]
