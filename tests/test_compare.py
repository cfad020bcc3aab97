"""The method comparison: its pure helpers on hand values, and a 3-step smoke run that writes table and plot."""

import json

import pytest

from gdpo_trl.compare import MethodCurves, collect, comparison_table, steps_to_reach


def test_steps_to_reach():
    steps = [1, 2, 3, 4]
    assert steps_to_reach(steps, [0.0, 0.1, 0.5, 0.5], 0.3, window=1) == 3
    # Smoothed over 2 steps: 0, .05, .3, .5 -> reaches .3 at step 3.
    assert steps_to_reach(steps, [0.0, 0.1, 0.5, 0.5], 0.3, window=2) == 3
    assert steps_to_reach(steps, [0.0, 0.1, 0.2, 0.2], 0.3, window=1) is None


def test_comparison_table_hand_values():
    curves = [
        MethodCurves(
            "gdpo",
            [1, 2, 3],
            {"rewards/format_reward/mean": [[0.0, 0.5, 1.0], [0.2, 0.2, 0.6]]},
        )
    ]
    table = comparison_table(curves, ["format_reward"], gain=0.3, window=1, tail=1)
    # start: mean(0.0, 0.2) = 0.1; finals 1.0 and 0.6 -> 0.800 ± 0.283; seed 1 reaches 0.3 at step 2, seed 2 (0.5)
    # at step 3 -> mean 2.5; mean levels: (0.25+0.75)/2 = 0.5 and (0.2+0.4)/2 = 0.3 -> 0.400 ± 0.141.
    assert "| GDPO | format_reward | 0.100 | 0.800 ± 0.283 | 2.5 (2/2 seeds) | 0.400 ± 0.141 |" in table


def test_collect_aligns_runs_on_common_steps(tmp_path):
    for seed, steps in ((0, [1, 2, 3]), (1, [1, 2])):
        run = tmp_path / f"gdpo-seed{seed}"
        run.mkdir()
        log = [{"step": s, "rewards/format_reward/mean": s / 10 + seed, "reward": 1.0} for s in steps]
        (run / "trainer_state.json").write_text(json.dumps({"log_history": log}))
    curves = collect(tmp_path, "gdpo", [0, 1], ["rewards/format_reward/mean", "reward"])
    assert curves.steps == [1, 2]
    assert curves.values["rewards/format_reward/mean"] == [[0.1, 0.2], [1.1, 1.2]]


@pytest.mark.slow
def test_three_step_comparison_writes_table_and_plot(tmp_path):
    from gdpo_trl.cli import compare as compare_methods

    out = tmp_path / "compare"
    compare_methods.main(["--steps", "3", "--seeds", "0", "1", "--methods", "grpo", "gdpo", "--out-dir", str(out)])
    table = (out / "comparison.md").read_text()
    for method in ("GRPO", "GDPO"):
        for reward in ("format_reward", "correctness_reward", "integer_reward", "reward"):
            assert f"| {method} | {reward} |" in table
    assert "2 seeds [0, 1]; 3 steps" in table
    png = (out / "comparison.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # Each run left its own trainer_state.json, readable by gdpo-plot.
    assert (out / "gdpo-seed1" / "trainer_state.json").is_file()


@pytest.mark.parametrize("method", ["grpo", "grpo_no_std", "gdpo", "gdpo_no_bn"])
def test_methods_differ_in_aggregation_fields_only(method, tmp_path):
    from gdpo_trl import GDPOConfig
    from gdpo_trl.compare import METHOD_FIELDS

    assert set(METHOD_FIELDS[method]) <= {"multi_objective_aggregation", "scale_rewards", "gdpo_batch_norm"}
    GDPOConfig(output_dir=str(tmp_path), bf16=False, use_cpu=True, **METHOD_FIELDS[method])
