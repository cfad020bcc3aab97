"""The method comparison: its pure helpers on hand values, how each run is made from a recipe and a method, and
short runs that write table and plot."""

import json
from pathlib import Path

import pytest

from gdpo_trl.results.compare import MethodCurves, collect, comparison_table, logged_reward_names, steps_to_reach
from gdpo_trl.results.runs import Run

ROOT = Path(__file__).resolve().parents[2]


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
    # start: mean(0.0, 0.2) = 0.1; finals 1.0 and 0.6 -> 0.800 ± 0.283; range seen 1.0 - 0.0, so the target is
    # start + 0.3: seed 1 reaches 0.3 at step 2, seed 2 (0.5) at step 3 -> mean 2.5; mean levels:
    # (0.25+0.75)/2 = 0.5 and (0.2+0.4)/2 = 0.3 -> 0.400 ± 0.141.
    assert "| GDPO | format_reward | 0.100 | 0.800 ± 0.283 | 1.000 | 2.5 (2/2 seeds) | 0.400 ± 0.141 |" in table
    # The threshold is a share of the reward's range: the same reward on a 0..5 scale reaches it at the same steps.
    five = [MethodCurves("gdpo", [1, 2, 3], {"rewards/format_reward/mean": [[0.0, 2.5, 5.0], [1.0, 1.0, 3.0]]})]
    assert "| 5.000 | 2.5 (2/2 seeds) |" in comparison_table(five, ["format_reward"], gain=0.3, window=1, tail=1)
    flat = [MethodCurves("gdpo", [1, 2], {"rewards/format_reward/mean": [[1.0, 1.0]]})]
    assert "| 0.000 | - |" in comparison_table(flat, ["format_reward"], gain=0.1, window=1, tail=1)  # nothing moved


def test_a_short_comparison_says_what_its_final_column_covers_and_why_its_methods_agree():
    """A 3-step compare averaged all 3 steps under "final (last 5 steps)", and its three methods' identical rows
    (one seed: the same samples until the updates change one) read as a bug; both are now said."""
    same = {"rewards/format_reward/mean": [[0.5, 0.5, 0.6]], "reward": [[1.5, 1.4, 1.6]]}
    curves = [MethodCurves(m, [1, 2, 3], same) for m in ("grpo", "grpo_no_std", "gdpo")]
    table = comparison_table(curves, ["format_reward"], gain=0.1, window=5, tail=5)
    assert table.splitlines()[0].startswith(
        "| method | reward | start | final (all 3 steps) | range seen | steps to start + 10% of range |"
    )
    # final: all three steps; the range 0.1 puts the target at 0.51, which the smoothed 0.533 of step 3 reaches.
    assert "| GDPO | format_reward | 0.500 | 0.533 | 0.100 | 3.0 (1/1 seeds) | 0.525 |" in table
    assert "Note: GRPO, GRPO w/o std and GDPO logged the same rewards at every step." in table
    curves[2] = MethodCurves("gdpo", [1, 2, 3], {**same, "reward": [[1.5, 1.4, 1.7]]})  # GDPO parts from them
    table = comparison_table(curves, ["format_reward"], gain=0.1, window=5, tail=5)
    assert "Note: GRPO and GRPO w/o std logged the same rewards" in table and "GDPO logged" not in table
    long = [
        MethodCurves(m, list(range(1, 41)), {"reward": [[i / 40 + k for i in range(40)]]}) for k, m in enumerate("ab")
    ]
    assert "| start | final (last 5 steps) |" in comparison_table(long, ["reward"], gain=0.1, window=5, tail=5)
    assert "Note" not in comparison_table(long, ["reward"], gain=0.1, window=5, tail=5)
    assert "final (its only step)" in comparison_table([MethodCurves("a", [1], {"reward": [[1.0]]})], ["reward"],
                                                         gain=0.1, window=5, tail=5)  # fmt: skip


def test_conflict_table_hand_values():
    from gdpo_trl.results.compare import conflict_table

    gdpo = MethodCurves("gdpo", [1, 2], {"conflict/share": [[0.25, 0.75], [0.5, 0.5]]})
    shares = {
        "conflict/share": [[0.5, 0.5]],
        "conflict/masked_share": [[0.0, 0.25]],
        "conflict/kept_share": [[1, 0.75]],
    }
    table = conflict_table([gdpo, MethodCurves("gd2po", [1, 2], shares)]).splitlines()
    assert table[0] == "| method | `conflict/share` | `conflict/masked_share` | `conflict/kept_share` |"
    # GDPO: each seed's mean over steps is 0.5 -> 0.500 ± 0.000; one seed prints its mean alone.
    assert table[2:] == ["| GDPO | 0.500 ± 0.000 | - | - |", "| GD2PO | 0.500 | 0.125 | 0.875 |"]
    # Every run logs what GD2PO would mask; only a GD2PO run masks, so only its rows (and only with one) show it.
    gdpo.values["conflict/masked_share"] = [[0.25, 0.25], [0.0, 0.5]]
    assert conflict_table([gdpo, MethodCurves("gd2po", [1, 2], shares)]).splitlines()[2] == (
        "| GDPO | 0.500 ± 0.000 | - | - |"
    )
    assert conflict_table([gdpo]).splitlines() == [
        "| method | `conflict/share` |",
        "|---|---:|",
        "| GDPO | 0.500 ± 0.000 |",
    ]
    assert conflict_table([MethodCurves("grpo", [1], {"rewards/f/mean": [[1.0]]})]) == ""  # one reward: no table


def test_the_plot_ticks_whole_steps_and_keeps_its_legend_off_the_lines():
    from gdpo_trl.results.compare import comparison_figure

    values = {"rewards/format_reward/mean": [[0.1, 0.4, 0.5]], "reward": [[0.1, 0.4, 0.5]]}
    curves = [MethodCurves(m, [1, 2, 3], values) for m in ("grpo", "gdpo")]
    fig = comparison_figure(curves, ["format_reward"], window=1, title="t")
    fig.canvas.draw()  # ticks are placed at draw time
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2
    for ax in axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(t == int(t) for t in ticks), ticks  # no 1.5-step ticks on a 3-step run
        assert ax.get_legend() is None  # no legend inside a panel, over its lines
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["GRPO", "GDPO"]
    box, panels = legend.get_window_extent(), [ax.get_window_extent() for ax in axes]
    assert all(box.y1 <= panel.y0 for panel in panels)  # below every panel


def test_compared_rewards_are_those_logged_in_the_recipes_order():
    """A conditioned reward is compared under its logged name, and an environment's own reward (which the recipe
    does not list; trainer_state.json sorts its keys) comes after the recipe's."""
    history = {
        f"rewards/{name}/mean": [(1, 0.5)]
        for name in sorted(["agent_success", "agent_format", "agent_cost_if_agent_success", "ShopEnv"])
    }
    history["reward"] = [(1, 2.0)]
    runs = [Run("gdpo-seed0", Path("."), history)]
    assert logged_reward_names(["agent_success", "agent_format", "agent_cost"], runs) == [
        "agent_success",
        "agent_format",
        "agent_cost_if_agent_success",
        "ShopEnv",
    ]


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
    compare_methods.main(["--steps", "3", "--seeds", "0", "1", "--methods", "grpo", "gdpo", "--output_dir", str(out)])
    table = (out / "comparison.md").read_text()
    for method in ("GRPO", "GDPO"):
        for reward in ("format_reward", "correctness_reward", "integer_reward", "reward"):
            assert f"| {method} | {reward} |" in table
    assert "2 seeds [0, 1]; 3 steps" in table
    png = (out / "comparison.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # Each run left its own trainer_state.json, readable by gdpo plot.
    assert (out / "gdpo-seed1" / "trainer_state.json").is_file()
    # Re-read with other batch flags, the header still says what the runs did (each recorded its recipe).
    assert "3 steps of 4 prompts x 8 completions" in table
    compare_methods.main(
        [
            "--seeds",
            "0",
            "1",
            "--methods",
            "grpo",
            "gdpo",
            "--prompts_per_step",
            "2",
            "--skip_training",
            "--overwrite",
            "--output_dir",
            str(out),
        ]
    )
    assert "3 steps of 4 prompts x 8 completions" in (out / "comparison.md").read_text()


def _recipe(name: str) -> str:
    return str(ROOT / "recipes" / "cpu" / name / "config.yaml")


def _shared(*flags, recipe="gdpo"):
    from gdpo_trl.cli import compare, compare_args
    from gdpo_trl.recipe.arguments import parse_args

    args = compare_args.parse_args(["--config", _recipe(recipe), *flags])
    return args, compare.comparison_fields(args, parse_args(["--config", args.config]))


def test_comparison_settings_come_from_the_recipe_unless_given():
    # recipes/cpu/gdpo: 40 steps of 32 = 4 prompts x 8 completions, 48 tokens, lr 3e-4.
    _, shared = _shared()
    assert (shared["max_steps"], shared["per_device_train_batch_size"], shared["num_generations"]) == (40, 32, 8)
    assert (shared["max_completion_length"], shared["learning_rate"]) == (48, 3e-4)
    assert _shared(recipe="toolcall_gdpo")[1]["max_completion_length"] == 160
    # --scale multiplies steps and prompts per step; the flags win over the recipe.
    _, shared = _shared("--scale", "2", "--prompts_per_step", "3", "--num_generations", "4", "--steps", "5")
    assert (shared["max_steps"], shared["per_device_train_batch_size"], shared["num_generations"]) == (10, 24, 4)
    assert (shared["logging_steps"], shared["save_strategy"]) == (1, "no")  # a curve point per step, no checkpoints


@pytest.mark.parametrize("method", ["grpo", "grpo_no_std", "gdpo", "gdpo_no_bn", "gdpo_outcome_only", "gd2po"])
def test_each_run_is_the_recipe_with_the_method_fields_and_seed(method, tmp_path):
    from gdpo_trl.cli import compare
    from gdpo_trl.results.compare import METHODS, OUTCOME_ONLY

    assert set(METHODS[method]) <= {"multi_objective_aggregation", "scale_rewards", "gdpo_batch_norm", OUTCOME_ONLY}
    args, shared = _shared("--output_dir", str(tmp_path), "--max_completion_length", "20")
    _, config, model, rewards = compare.run_config(args, args.config, shared, method, seed=3)
    for name, value in METHODS[method].items():
        if name != OUTCOME_ONLY:
            assert getattr(config, name) == value
    assert (config.seed, config.output_dir) == (3, str(tmp_path / f"{method}-seed3"))
    assert (config.max_completion_length, config.max_steps, config.beta) == (20, 40, 0.0)  # flag, recipe, recipe
    assert [f.__name__ for f in rewards] == ["format_reward", "correctness_reward", "integer_reward"]
    assert model.dtype == "float32"  # the recipe's ModelConfig, which build_trainer passes on as gdpo train does


def test_outcome_only_keeps_process_rewards_as_weight_zero_scores(tmp_path):
    from gdpo_trl.cli import compare
    from gdpo_trl.rewards.process import is_process_reward

    args, shared = _shared("--output_dir", str(tmp_path), recipe="gdpo_process")
    _, config, _, rewards = compare.run_config(args, args.config, shared, "gdpo", seed=0)
    assert config.reward_weights is None and is_process_reward(rewards[3])  # the recipe as is: trained on
    _, config, _, rewards = compare.run_config(args, args.config, shared, "gdpo_outcome_only", seed=0)
    assert config.reward_weights == [1.0, 1.0, 1.0, 0.0]
    score = rewards[3]
    assert not is_process_reward(score) and score.__name__ == "equations_reward"  # logged under the same name
    completions = [
        [{"role": "assistant", "content": "<think>3*4=12\n2+2=5</think><answer>12</answer>"}],  # right, wrong
        [{"role": "assistant", "content": "<think>no equation</think><answer>7</answer>"}],
        [{"role": "assistant", "content": "<think>6/3=2</think><answer>2</answer>"}],
    ]
    assert score(completions=completions) == [0.5, None, 1.0]


@pytest.mark.parametrize("gdpo", [True, False])
def test_a_weight_zero_reward_changes_no_advantage(gdpo):
    """Why OUTCOME_ONLY may log the process score as a reward of weight 0: GDPO and GRPO advantages are those of
    the other rewards alone, also where the score is missing (NaN)."""
    import torch

    from gdpo_trl.core.advantages import gdpo_advantages, grpo_advantages

    outcomes = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    score = torch.tensor([[0.5], [float("nan")], [1.0], [0.0], [float("nan")], [1.0]])
    advantages = gdpo_advantages if gdpo else grpo_advantages
    with_score = advantages(torch.cat([outcomes, score], dim=1), [1.0, 1.0, 0.0], 3)
    torch.testing.assert_close(with_score, advantages(outcomes, [1.0, 1.0], 3))
    assert with_score.abs().sum() > 0


def test_unknown_recipe_fails_naming_it():
    from gdpo_trl.cli import compare_args
    from gdpo_trl.core.errors import InputError

    with pytest.raises(InputError, match="Recipe 'no/such.yaml' not found"):
        compare_args.find_recipe("no/such.yaml")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("recipe", "model", "methods", "rows", "total"),
    [
        ("toolcall_gdpo", "builtin:tiny", ["grpo", "gdpo", "gd2po"], ["tool_format", "tool_correctness"], True),
        # The warm start (the recipe's model): a random model writes no equations to score.
        ("gdpo_process", None, ["gdpo_outcome_only", "gdpo"], ["correctness_reward", "equations_reward"], False),
    ],
)
def test_two_step_comparison_of_another_recipe(recipe, model, methods, rows, total, tmp_path):
    from gdpo_trl.cli import compare

    out = tmp_path / "compare"
    argv = ["--config", _recipe(recipe), "--steps", "2", "--seeds", "0", *(["--model", model] if model else [])]
    compare.main(
        [*argv, "--prompts_per_step", "2", "--num_generations", "2", "--methods", *methods, "--output_dir", str(out)]
    )
    table = (out / "comparison.md").read_text()
    for method in methods:
        label = {"grpo": "GRPO", "gdpo": "GDPO", "gd2po": "GD2PO", "gdpo_outcome_only": "GDPO outcome only"}[method]
        for reward in rows:
            assert f"| {label} | {reward} |" in table
        assert (f"| {label} | reward |" in table) is total  # no total when one method trains on fewer rewards
        history = json.loads((out / f"{method}-seed0" / "trainer_state.json").read_text())["log_history"]
        steps = [entry for entry in history if "loss" in entry]
        assert len(steps) == 2, history  # an empty filter must not pass the check below
        assert all(f"rewards/{rows[-1]}/mean" in entry for entry in steps)
    assert f"recipe {_recipe(recipe)}" in table and "2 steps of 2 prompts x 2 completions" in table
    assert "; 1 seed [0]; " in table
    assert table.startswith("**1 seed per arm: this comparison cannot show a difference between the methods**")
    # Outcome rewards: every method's conflict share, and GD2PO's kept share (process rewards log none yet, so of
    # gdpo_process's methods only the outcome-only one logs them).
    conflicts = [line for line in table.splitlines() if line.startswith("| method | `conflict/share`")]
    assert len(conflicts) == (recipe == "toolcall_gdpo" or "gdpo_outcome_only" in methods)
    if conflicts:
        assert ("`conflict/kept_share`" in conflicts[0]) == ("gd2po" in methods)
    assert (out / "comparison.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
