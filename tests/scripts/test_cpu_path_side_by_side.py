"""docs/results/real_model/cpu_path_side_by_side.json and its two quiet runs (scripts/benchmark_cpu_path.py
--side_by_side): each summary is what its raw rows give, by the script's own function, and a one-digit edit of a raw
row is found; the side-by-side rows alternate the samplers and carry the load beside each; the "same training" check
says nothing where nothing was scored."""

from __future__ import annotations

import copy
import json

import pytest

from tests.helpers.figure_recompute import benchmark_script
from tests.helpers.studies import RESULTS

SIDE_BY_SIDE = RESULTS / "real_model" / "cpu_path_side_by_side.json"  # shared machine, with the recipe steps
QUIET = RESULTS / "real_model" / "cpu_path_side_by_side_quiet.json"  # quiet machine, decode and training rows only
STEP_QUIET = RESULTS / "real_model" / "cpu_path_step_quiet.json"  # quiet machine, SmolLM2 with the recipe steps
TABULATED = (SIDE_BY_SIDE, QUIET)  # the files whose decode and training rows the Speed section tabulates


@pytest.fixture(scope="module", params=[SIDE_BY_SIDE, QUIET, STEP_QUIET], ids=lambda p: p.stem)
def source(request):
    return request.param


@pytest.fixture(scope="module")
def record(source) -> dict:
    return json.loads(source.read_text())


def test_the_summary_is_its_raw_rows(record):
    assert record["complete"] is True
    assert record["summary"] == benchmark_script().side_by_side_summary(record)


def test_a_one_digit_edit_of_a_raw_row_is_found(record):
    edited = copy.deepcopy(record)
    row = next(r for r in edited["decode"][0]["rows"] if r["sampler"] == "fast")
    row["decode_step_ms"] = round(row["decode_step_ms"] * 3 + 1, 1)  # its round's ratio moves, and the median
    assert benchmark_script().side_by_side_summary(edited) != record["summary"]
    edited = copy.deepcopy(record)
    edited["training"][0]["seconds"] += 1.0
    assert benchmark_script().side_by_side_summary(edited) != record["summary"]


def test_the_samplers_alternate_with_the_load_beside_each(record):
    for found in record["decode"]:
        order = [(r["round"], r["sampler"]) for r in found["rows"]]
        assert order[:4] == [(1, "transformers"), (1, "fast"), (2, "fast"), (2, "transformers")], order
        assert all(len(r["load"]) == 2 for r in found["rows"])
    for runs in record["runs"].values():
        assert all(len(run["load"]) == 2 for run in runs)


def test_same_training_is_not_claimed_where_every_reward_is_0():
    same = benchmark_script().same_training
    zero = {"rewards": [[0.0, 0.0, 0.0]], "loss": [0.0]}
    scored = {"rewards": [[0.5, 0.0, 0.25]], "loss": [0.01]}
    assert same(zero, copy.deepcopy(zero)) is None
    assert same(scored, copy.deepcopy(scored)) is True
    assert same(scored, {"rewards": [[0.5, 0.0, 0.25]], "loss": [0.02]}) is False


def test_the_speed_section_quotes_the_json(source, record):
    """docs/real_model.md's Speed section quotes these figures of the file as written (the tables and the goals)."""
    text = (RESULTS.parent / "real_model.md").read_text()
    speed = text[text.index("## Speed") : text.index("## GDPO against GRPO")]
    summary = record["summary"]
    quoted = []
    for found in record["decode"] if source in TABULATED else []:
        model = summary["models"][found["model"]]
        quoted.append(f"{found['weights_read_per_step_gb']} GB")
        quoted += [f"{model[s]['decode_step_ms']} ms" for s in ("transformers", "fast")]
        quoted.append(", ".join(map(str, model["decode_step_fast_over_transformers_by_round"])))
        for category in found["profiled"]["fast"]["by_category_ms"]:
            pair = [found["profiled"][s]["by_category_ms"][category] for s in ("transformers", "fast")]
            quoted.append(f"{pair[0]} / {pair[1]} ms")
        quoted.append(
            f"{model['transformers']['share_of_copy_bandwidth']} / {model['fast']['share_of_copy_bandwidth']}"
        )
        quoted.append(f"{model['training_gflops']}, {model['training_share_of_bf16_gemm']}")
    if record["runs"]:
        steps = summary["step_seconds"]
        quoted += [
            f"{steps['before']} s",
            f"{steps['after, fast sampling']} s",
            f"({summary['step_ratio_after_over_before']})",
        ]
        quoted += [f"{gb} GB" for gb in summary["peak_gb"].values()]
    for big in summary.get("big_model_step", {}).values():
        quoted += [f"{big['step_seconds']} s", f"{big['peak_gb']} GB"]
    missing = [q for q in quoted if q not in speed]
    assert not missing, f"the Speed section does not quote {missing} of cpu_path_side_by_side.json"


@pytest.mark.parametrize(
    "path, steps_file",
    [("after, fast sampling", SIDE_BY_SIDE), ("after, fast sampling", STEP_QUIET), ("before", STEP_QUIET)],
)
def test_runs_of_one_path_trained_alike_on_rewards_that_are_not_all_0(path, steps_file):
    """(The shared run's second float32 run was killed by the OOM killer, so it has one run of float32.)"""
    found = json.loads(steps_file.read_text())
    runs = found["runs"][path]
    assert any(v for step in runs[0]["rewards"] for v in step)  # the format start scores: the check has teeth
    assert found["summary"]["same_training_in_both_runs"][path] is True
