"""Tests for gdpo_trl.results.runs, gdpo_trl.results.plots and gdpo plot on small synthetic trainer_state.json files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gdpo_trl.results.plots import grid_shape, plot_panels, plot_runs
from gdpo_trl.results.runs import (
    curve_stats,
    find_trainer_state,
    load_run,
    load_runs,
    reward_names,
    smooth,
    summary_table,
    unique_names,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _entry(step, format_mean, other: dict, reward, **extra):
    """A GRPO-style training log entry with the keys that must not define reward panels mixed in."""
    return {
        "loss": 0.01,
        "grad_norm": 0.3,
        "rewards/format_reward/mean": format_mean,
        "rewards/format_reward/std": 0.4,
        "rewards/format_reward/frac_zero_std": 0.1,
        "advantage_share/format_reward": 0.5,
        **{f"rewards/{name}/mean": value for name, value in other.items()},
        "reward": reward,
        "reward_std": 0.9,
        **extra,
        "epoch": step / 10,
        "step": step,
    }


# Run A: logs every step, beta > 0 (has kl), only checkpoint folders (no final trainer_state.json).
RUN_A = [
    _entry(1, 0.0, {"correctness_reward": 0.0}, 0.0, kl=0.0, **{"completions/mean_length": 50.0}),
    _entry(2, 0.5, {"correctness_reward": 0.0}, 0.5, kl=0.001, **{"completions/mean_length": 60.0}),
    _entry(3, 1.0, {"correctness_reward": 0.2}, 1.2, kl=0.002, **{"completions/mean_length": 70.0}),
    _entry(4, 1.0, {"correctness_reward": 0.4}, 1.4, kl=0.003, **{"completions/mean_length": 80.0}),
    {"eval_loss": 0.5, "eval_runtime": 1.0, "epoch": 0.4, "step": 4},
]
# Run B: logs every 2 steps, beta = 0 (no kl), a reward A lacks, and the final train_runtime summary entry.
RUN_B = [
    _entry(2, 0.2, {"integer_reward": 0.5}, 0.7, **{"completions/mean_length": 40.0}),
    _entry(4, 0.4, {"integer_reward": 0.5}, 0.9, **{"completions/mean_length": 45.0}),
    _entry(6, 0.9, {"integer_reward": 0.5}, 1.4, **{"completions/mean_length": 42.0}),
    {"train_runtime": 10.0, "train_loss": 0.1, "train_samples_per_second": 3.0, "epoch": 0.6, "step": 6},
]

# Hand-computed (first, last, trapezoid AUC over steps, AUC / step span).
EXPECTED = {
    ("run_a", "format_reward"): (0.0, 1.0, 0.25 + 0.75 + 1.0, 2.0 / 3),
    ("run_a", "correctness_reward"): (0.0, 0.4, 0.0 + 0.1 + 0.3, 0.4 / 3),
    ("run_a", "reward (total)"): (0.0, 1.4, 0.25 + 0.85 + 1.3, 2.4 / 3),
    ("run_b", "format_reward"): (0.2, 0.9, 2 * 0.3 + 2 * 0.65, 1.9 / 4),
    ("run_b", "integer_reward"): (0.5, 0.5, 2.0, 0.5),
    ("run_b", "reward (total)"): (0.7, 1.4, 2 * 0.8 + 2 * 1.15, 3.9 / 4),
}


def _write_state(folder: Path, log_history: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "trainer_state.json"
    path.write_text(json.dumps({"global_step": log_history[-1]["step"], "log_history": log_history}))
    return path


@pytest.fixture
def run_dirs(tmp_path: Path) -> tuple[Path, Path]:
    run_a = tmp_path / "run_a"
    _write_state(run_a / "checkpoint-9", RUN_A[:2])
    _write_state(run_a / "checkpoint-10", RUN_A)
    (run_a / "checkpoint-11").mkdir()  # a checkpoint still being written: no state file yet
    run_b = tmp_path / "run_b"
    _write_state(run_b / "checkpoint-2", RUN_B[:1])
    _write_state(run_b, RUN_B)
    return run_a, run_b


# --- find_trainer_state / load_run ---


def test_find_trainer_state_choices(run_dirs):
    run_a, run_b = run_dirs
    # checkpoint-10 beats checkpoint-9 (numeric, not text order); checkpoint-11 has no state file.
    assert find_trainer_state(run_a) == run_a / "checkpoint-10" / "trainer_state.json"
    # The output_dir's own file beats its checkpoints.
    assert find_trainer_state(run_b) == run_b / "trainer_state.json"
    assert find_trainer_state(run_a / "checkpoint-9") == run_a / "checkpoint-9" / "trainer_state.json"
    state = run_b / "checkpoint-2" / "trainer_state.json"
    assert find_trainer_state(str(state)) == state


def test_find_trainer_state_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"trainer_state\.json") as err:
        find_trainer_state(tmp_path / "nowhere")
    assert "nowhere" in str(err.value)
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(FileNotFoundError, match=r"notes\.txt is not a trainer_state\.json"):
        find_trainer_state(tmp_path / "notes.txt")
    (tmp_path / "empty_run" / "checkpoint-3").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"checkpoint-\*"):
        find_trainer_state(tmp_path / "empty_run")


def test_load_run_names_and_skips_entries_without_the_metric(run_dirs):
    run_a, run_b = run_dirs
    a = load_run(run_a)
    assert a.name == "run_a"
    assert load_run(run_a / "checkpoint-9").name == "run_a"  # a checkpoint is named after its output_dir
    assert load_run(run_a, name="GDPO").name == "GDPO"
    assert a.history["kl"] == [(1, 0.0), (2, 0.001), (3, 0.002), (4, 0.003)]
    b = load_run(run_b)
    # The train_runtime summary and eval entries add no zero rewards.
    assert b.history["reward"] == [(2, 0.7), (4, 0.9), (6, 1.4)]
    assert "kl" not in b.history
    assert a.history["eval_loss"] == [(4, 0.5)]


def test_duplicate_names_get_suffixes(run_dirs):
    run_a, _ = run_dirs
    assert [run.name for run in load_runs([run_a, run_a / "checkpoint-9", run_a])] == ["run_a", "run_a-2", "run_a-3"]
    assert unique_names(["x", "x-2", "x"]) == ["x", "x-2", "x-3"]
    with pytest.raises(ValueError, match="2 names for 1 runs"):
        load_runs([run_a], names=["a", "b"])


# --- analysis ---


def test_reward_names_union_in_first_seen_order(run_dirs):
    runs = load_runs(list(run_dirs))
    assert reward_names(runs) == ["format_reward", "correctness_reward", "integer_reward"]
    assert reward_names(runs[::-1]) == ["format_reward", "integer_reward", "correctness_reward"]


def test_smooth():
    values = [1.0, 3.0, 5.0, 7.0]
    assert smooth(values, 1) == values
    assert smooth(values, 2) == pytest.approx([1.0, 2.0, 4.0, 6.0])
    assert smooth(values, 3) == pytest.approx([1.0, 2.0, 3.0, 5.0])
    assert smooth(values, 10) == pytest.approx([1.0, 2.0, 3.0, 4.0])
    assert smooth([], 3) == []
    with pytest.raises(ValueError, match="window"):
        smooth(values, 0)


def test_curve_stats_single_point_and_uneven_steps():
    assert curve_stats([(5, 0.3)]).mean_level == 0.3
    stats = curve_stats([(0, 0.0), (1, 1.0), (5, 1.0)])  # AUC 0.5 + 4.0 over a span of 5
    assert (stats.first, stats.last, stats.auc, stats.mean_level) == pytest.approx((0.0, 1.0, 4.5, 0.9))


def _parse_table(table: str) -> dict[tuple[str, str], list[str]]:
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.strip().splitlines()]
    header, body = rows[0], rows[2:]
    assert header[:5] == ["run", "reward", "steps", "first", "last"]
    return {(row[0], row[1]): row[3:] for row in body}


def test_summary_table_matches_hand_computed_values(run_dirs):
    table = summary_table(load_runs(list(run_dirs)))
    rows = _parse_table(table)
    assert set(rows) == set(EXPECTED)  # run_b has no correctness_reward row, run_a no integer_reward row
    for key, numbers in EXPECTED.items():
        assert rows[key] == [f"{x:.3f}" for x in numbers], key
    assert "AUC / step span" in table


# --- plotting ---


def test_plot_panels_skip_metrics_no_run_has(run_dirs):
    run_a, run_b = load_runs(list(run_dirs))
    assert [key for key, _ in plot_panels([run_b])] == [
        "rewards/format_reward/mean",
        "rewards/integer_reward/mean",
        "reward",
        "completions/mean_length",
    ]
    assert [key for key, _ in plot_panels([run_a, run_b])][-1] == "kl"


def test_grid_shape():
    assert [grid_shape(n) for n in range(1, 8)] == [(1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (2, 3), (4, 2)]


def test_plot_runs_writes_png(run_dirs, tmp_path):
    out = plot_runs(load_runs(list(run_dirs)), tmp_path / "plots" / "runs.png", window=2, title="test")
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 1024


# --- CLI ---


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "gdpo_trl.cli.plot", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_prints_table_and_writes_files(run_dirs, tmp_path):
    out, table = tmp_path / "runs.png", tmp_path / "runs.md"
    flags = ["--names", "A", "B", "--window", "2", "--output_file", str(out), "--table", str(table)]
    result = _cli(*map(str, run_dirs), *flags)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("| run | reward |")
    assert "| A | format_reward |" in result.stdout
    assert "| B | integer_reward |" in result.stdout
    assert table.read_text() == result.stdout
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert str(out) in result.stderr


def test_cli_bad_path_exits_2(tmp_path):
    result = _cli(str(tmp_path / "missing_run"), "--output_file", str(tmp_path / "x.png"))
    assert result.returncode == 2
    assert "trainer_state.json" in result.stderr
    assert "missing_run" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x.png").exists()


# --- recipe order and whole steps ---


def _recorded_run(folder: Path, reward_funcs: list[str], names: list[str], steps=(1, 2)) -> Path:
    """A run as gdpo train writes it: log keys sorted (transformers' TrainerState does), the recipe recorded."""
    history = [
        dict(sorted({"step": step, **{f"rewards/{name}/mean": 0.1 * step for name in names}}.items()))
        for step in steps
    ]
    record = {"RecipeRecord": {"args": {"recipe": {"reward_funcs": reward_funcs}}, "attributes": {}}}
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(
        json.dumps({"log_history": history, "stateful_callbacks": record}, sort_keys=True)
    )
    return folder


def test_rewards_come_in_the_recipes_order_not_alphabetically(tmp_path):
    """Before: gdpo plot drew says_color after brevity (the log's sorted keys), whatever the recipe said."""
    specs = ["rewards.py:says_color", "my_pkg.rewards.brevity", "format", "length"]
    names = ["says_color", "brevity", "format_reward", "length_reward_if_correctness_reward", "unlisted"]
    run = load_run(_recorded_run(tmp_path / "run", specs, names))
    assert run.recipe_rewards == specs
    assert reward_names([run]) == names
    assert [title for _, title in plot_panels([run])][:5] == names
    plain = load_run(_recorded_run(tmp_path / "plain", [], names))  # no record: the log's (sorted) order
    assert reward_names([plain]) == sorted(names)


def test_plot_ticks_are_whole_steps(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    drawn = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (drawn.append(self), save(self, *a, **k))[1])
    run = load_run(_recorded_run(tmp_path / "run", ["format"], ["format_reward"], steps=(1, 2)))
    plot_runs([run], tmp_path / "runs.png")
    ticks = [tick for ax in drawn[0].axes if ax.get_visible() for tick in ax.get_xticks()]
    assert ticks and all(float(tick).is_integer() for tick in ticks), ticks
