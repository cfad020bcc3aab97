"""``gdpo train``'s first answer: mistakes the command line and recipe show are found before torch and TRL are
imported, in the words the full parser uses, and the batch is checked over the processes the run will start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gdpo_trl.cli.first_checks import launch_processes, read_request
from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.field_table import load_table

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ["--config", "cpu/gdpo"]  # 8 generations, 32 completions per device, 1 accumulation step

# (flags after the recipe, words the one-line error holds)
MISTAKES = [
    (["--max_step", "2"], ["unknown command-line argument '--max_step'", "did you mean max_steps"]),
    (["--max_steps", "two"], ["--max_steps", "invalid int value: 'two'"]),
    (["--reward_funcs", "format", "corectness"], ["unknown reward 'corectness'", "did you mean correctness"]),
    (["--dataset_train_split", "test"], ["dataset_train_split 'test'", "leave it 'train'"]),
    (["--learning_rate", "-1e-3"], ["learning_rate=-0.001"]),
    (["--lr_scheduler_type", "cosine_typo"], ["--lr_scheduler_type", "invalid choice"]),
    (["--reward_weights", "1", "2"], ["2 weights for 3 reward functions"]),
    (["--num_generations", "1"], ["num_generations=1", "at least 2"]),
    (["--per_device_train_batch_size", "6"], ["generation batch of 6", "num_generations (8)"]),
    (
        ["--num_processes", "3", "--per_device_train_batch_size", "4"],
        ["12 completions (3 processes x", "--num_processes"],
    ),
    (["--num_processes", "2", "--generation_batch_size", "32"], ["global batch of 64", "2 processes"]),
    (["--eval_strategy", "steps", "--per_device_eval_batch_size", "3"], ["eval batch of 3", "multiple of 8"]),
]


@pytest.mark.parametrize("flags,words", MISTAKES, ids=[" ".join(flags) for flags, _ in MISTAKES])
def test_each_mistake_is_answered_from_the_table(flags, words):
    argv = [*RECIPE, *flags]
    with pytest.raises(InputError) as error:
        read_request(argv)
    assert all(word in str(error.value) for word in words), str(error.value)


@pytest.mark.parametrize("flags,words", MISTAKES[:9], ids=[" ".join(flags) for flags, _ in MISTAKES[:9]])
def test_the_full_parser_refuses_the_same(flags, words):
    """Nothing the table refuses is accepted by the full path (reward names and splits are checked when built)."""
    from gdpo_trl.recipe.arguments import build_reward_funcs, parse_args
    from gdpo_trl.run.checks import check_recipe

    with pytest.raises((InputError, ValueError)):
        script_args, training_args, model_args = parse_args([*RECIPE, *flags])
        check_recipe(script_args, training_args, model_args)
        build_reward_funcs(script_args)
        if "--dataset_train_split" in flags:
            from gdpo_trl.data.sources import source_options

            source_options(script_args)


def test_a_batch_that_divides_over_the_processes_is_not_refused():
    """4 per device x 2 processes = 8 = one group: TRL trains it, so gdpo train must not refuse it."""
    from gdpo_trl.recipe.arguments import parse_args

    argv = [*RECIPE, "--num_processes", "2", "--per_device_train_batch_size", "4", "--max_steps", "2"]
    request = read_request(argv)
    assert request.processes == 2 and request.recipe_argv[2:] == argv[4:] and "--num_processes" in request.launch
    _, training_args, _ = parse_args([*RECIPE, "--per_device_train_batch_size", "4", "--max_steps", "2"], 2)
    assert training_args.generation_batch_size == 8 and training_args.steps_per_generation == 1


@pytest.mark.parametrize("per_device", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("processes", [1, 2, 3, 4])
@pytest.mark.parametrize("accumulation", [1, 2, 3])
@pytest.mark.parametrize("generation_batch", [None, 24, 48])
def test_batch_check_agrees_with_trl(per_device, processes, accumulation, generation_batch):
    """gdpo's check refuses exactly what TRL's GRPOConfig refuses with that many processes (world_size)."""
    from types import SimpleNamespace

    from trl import GRPOConfig

    from gdpo_trl.core.config_checks import check_generation_batch

    fields = dict(
        per_device_train_batch_size=per_device, gradient_accumulation_steps=accumulation, num_generations=8,
        generation_batch_size=generation_batch, steps_per_generation=None,
    )  # fmt: skip
    trl_config = type("Config", (GRPOConfig,), {"world_size": property(lambda self: processes)})
    try:
        trl_config(output_dir="unused", use_cpu=True, bf16=False, report_to="none", **fields)
        trl_refuses = False
    except ValueError:
        trl_refuses = True
    try:
        check_generation_batch(SimpleNamespace(**fields), processes)
        ours_refuses = False
    except InputError as error:
        ours_refuses = True
        assert f"{processes} process" in str(error) and ("set " in str(error) or "give " in str(error))
    assert ours_refuses == trl_refuses


def test_processes_of_a_launch(tmp_path):
    assert launch_processes([]) == 1
    assert launch_processes(["--num_processes", "4"]) == 4
    config = tmp_path / "accelerate.yaml"
    config.write_text("distributed_type: MULTI_GPU\nnum_processes: 3\n")
    assert launch_processes(["--config_file", str(config)]) == 3
    assert launch_processes(["--num_processes", "two"]) is None  # check_launch_options names it later


def test_first_checks_import_neither_torch_nor_trl():
    """The point of the table: a mistake is answered without the seconds those imports take."""
    code = (
        "import sys\n"
        "from gdpo_trl.cli.first_checks import read_request\n"
        "from gdpo_trl.cli.train_help import short_help\n"
        "from gdpo_trl.recipe.field_table import load_table\n"
        "from gdpo_trl.core.errors import InputError\n"
        "short_help(load_table())\n"
        "try:\n"
        "    read_request(['--config', 'cpu/gdpo', '--bf16', 'maybe'])\n"
        "except InputError as error:\n"
        "    print(error)\n"
        "print(sorted({'torch', 'trl', 'transformers', 'accelerate'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "--bf16: Truthy value expected" in out and out.strip().endswith("[]")


def test_short_help_leads_with_gdpo_and_points_to_every_field(capsys):
    from gdpo_trl.cli.train_help import answer_help

    assert answer_help(["--help"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("usage: gdpo train --config RECIPE")
    gdpo = lines.index("GDPO's fields (GDPOConfig):")
    assert gdpo < 8 and "--multi_objective_aggregation" in lines[gdpo + 1]
    assert "most used fields:" in lines and len(lines) < 150
    text = "\n".join(lines)
    assert "--help-all" in text and "--accelerate_config" in text and "--lora_r" not in text


def test_the_committed_table_is_the_installed_libraries_view():
    """After changing a field (gdpo_trl/core/config.py, gdpo_trl/recipe/arguments.py) or a library version, write
    the table again: python -m gdpo_trl.recipe.field_table."""
    from gdpo_trl.recipe.field_table import TABLE, build_table

    committed = json.loads(TABLE.read_text(encoding="utf-8"))
    assert json.loads(json.dumps(build_table())) == committed, "run: python -m gdpo_trl.recipe.field_table"
    assert load_table() == committed
