"""Recipes and accelerate configs ship in the package: reached by name from any folder, with one copy in the repo.

The wheel itself is checked end to end by scripts/wheel_check.sh (CI): built, installed in a fresh environment and run
from an empty folder. These tests check the same lookups against this checkout's install, from a folder elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gdpo_trl.cli import launch
from gdpo_trl.cli.first_checks import split_launch
from gdpo_trl.cli.main import main as gdpo
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.shipped import shipped_folder
from gdpo_trl.recipe.arguments import parse_args
from gdpo_trl.recipe.field_table import load_table
from gdpo_trl.recipe.names import recipe_names, recipe_path, resolve_config_flag, resolve_recipe

ROOT = Path(__file__).resolve().parents[2]
REPO_RECIPES = sorted(
    p.parent.relative_to(ROOT / "recipes").as_posix() for p in (ROOT / "recipes").rglob("config.yaml")
)


@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    """Every test runs from an empty folder outside the checkout, as a user of the wheel would."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def split_launch_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """gdpo train's one split (:func:`gdpo_trl.cli.first_checks.split_launch`) with the committed field table."""
    return split_launch(argv, load_table())


def test_the_shipped_folders_are_the_repositorys_own():
    # One source of truth: the package reads the repository's folders, not a copy of them.
    assert shipped_folder("recipes").resolve() == ROOT / "recipes"
    assert shipped_folder("accelerate_configs").resolve() == ROOT / "accelerate_configs"
    assert len(REPO_RECIPES) >= 20 and recipe_names() == REPO_RECIPES
    with pytest.raises(ValueError, match="no shipped folder 'data'"):
        shipped_folder("data")


@pytest.mark.parametrize("name", ["cpu/gdpo", "cpu/gdpo/", "recipes/cpu/gdpo/config.yaml", "cpu/gdpo/config.yaml"])
def test_a_recipe_by_name_or_by_its_repository_path(name):
    assert Path(resolve_recipe(name)).resolve() == ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml"


def test_a_file_wins_over_a_recipe_name(elsewhere):
    local = elsewhere / "cpu" / "gdpo"
    local.parent.mkdir()
    local.write_text("max_steps: 1\n")
    assert resolve_recipe("cpu/gdpo") == "cpu/gdpo"
    assert resolve_config_flag(["--max_steps", "2", "--config", "cpu/gdpo"]) == [
        "--max_steps",
        "2",
        "--config",
        "cpu/gdpo",
    ]


def test_an_unknown_recipe_names_the_closest():
    with pytest.raises(InputError, match=r"Recipe 'cpu/gdp' not found: .*did you mean cpu/gdpo, .*gdpo recipes list"):
        recipe_path("cpu/gdp")


def test_train_parses_a_recipe_by_name():
    argv = ["--config", "Qwen2.5-1.5B-Instruct/gdpo", "--max_steps", "3", "--use_cpu", "true"]  # parse on a CPU
    script_args, training_args, model_args = parse_args(argv)
    assert model_args.model_name_or_path == "Qwen/Qwen2.5-1.5B-Instruct" and training_args.max_steps == 3
    assert script_args.reward_funcs == ["correctness", "integer", "format"]


def test_recipes_list_names_every_recipe(capsys):
    assert gdpo(["recipes", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == REPO_RECIPES
    described = dict(line.split(None, 1) for line in lines)  # name, then its header's first line (columns aligned)
    assert described["cpu/gdpo"] == "GDPO on CPU, offline, in about two minutes from the shipped warm start"
    assert len({line.index(described[line.split()[0]]) for line in lines}) == 1


def test_recipes_copy_then_edit(elsewhere, capsys):
    assert gdpo(["recipes", "copy", "cpu/gdpo", "my.yaml"]) == 0
    assert "Copied cpu/gdpo to my.yaml. Edit it, then: gdpo train --config my.yaml" in capsys.readouterr().out
    copied = elsewhere / "my.yaml"
    assert copied.read_text() == (ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml").read_text()
    copied.write_text(copied.read_text().replace("learning_rate: 3.0e-4", "learning_rate: 1.0e-5"))
    assert parse_args(["--config", "my.yaml"])[1].learning_rate == 1.0e-5

    with pytest.raises(SystemExit) as exit_info:  # never overwrites an edited copy by accident
        gdpo(["recipes", "copy", "cpu/grpo", "my.yaml"])
    assert exit_info.value.code == 2 and "my.yaml already exists" in capsys.readouterr().err
    assert gdpo(["recipes", "copy", "cpu/grpo", "my.yaml", "--force"]) == 0
    assert "multi_objective_aggregation: sum_then_normalize" in copied.read_text()

    (elsewhere / "folder").mkdir()
    assert gdpo(["recipes", "copy", "Qwen2.5-1.5B-Instruct/grpo", "folder"]) == 0
    assert (elsewhere / "folder" / "config.yaml").read_text().startswith("# GRPO baseline on GSM8K")


def test_accelerate_configs_by_name_from_any_folder(elsewhere):
    _, options = split_launch_args(["--config", "cpu/gdpo", "--accelerate_config", "zero2"])
    assert options[0] == "--config_file" and Path(options[1]).resolve() == ROOT / "accelerate_configs" / "zero2.yaml"
    own = elsewhere / "zero2"  # a file of that name wins, as in TRL
    own.write_text("distributed_type: NO\n")
    assert launch.resolve_accelerate_config(["--accelerate_config", "zero2"]) == ["--config_file", "zero2"]


def test_mixed_precision_follows_the_recipe_unless_given():
    full, bf16 = SimpleNamespace(bf16=False, fp16=False), SimpleNamespace(bf16=True, fp16=False)
    given = ["--config_file", "zero2.yaml", "--mixed_precision=bf16"]
    assert launch.recipe_precision(["--config_file", "zero2.yaml"], full)[-2:] == ["--mixed_precision", "no"]
    assert launch.recipe_precision(["--num_processes", "2"], bf16)[-2:] == ["--mixed_precision", "bf16"]
    assert launch.recipe_precision(given, full) == given


def test_compare_default_recipe_from_any_folder():
    from gdpo_trl.cli import compare_args

    assert compare_args.parse_args([]).config == "cpu/gdpo"
    assert Path(compare_args.find_recipe(compare_args.DEFAULT_RECIPE)).resolve() == ROOT / "recipes/cpu/gdpo/config.yaml"
