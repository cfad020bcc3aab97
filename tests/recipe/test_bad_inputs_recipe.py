"""Recipe files and flags that used to fail poorly (a key twice kept the last one, a wrong type printed the
204-line usage, a binary recipe gave a traceback, ``-1e-3`` was read as an option), and the ``gdpo`` subcommands'
own argument errors (``gdpo compare --steps 0`` named an internal field, ``gdpo plot`` did not name a
damaged ``trainer_state.json``).

Train rows run ``gdpo train``'s ``main`` (:func:`tests.helpers.bad_inputs.check_train_rejects`): exit status 2, one
``gdpo train: error:`` line with the words, no traceback, ``output_dir`` untouched.
"""

import json

import pytest
import yaml

from gdpo_trl.cli.compare import main as compare_main
from gdpo_trl.cli.main import main as gdpo
from gdpo_trl.cli.plot import main as plot_main
from gdpo_trl.recipe.arguments import parse_args
from tests.helpers.bad_inputs import BASE_RECIPE, assert_one_line_error, check_train_rejects, run_cli, snapshot

TINY = "model_name_or_path: builtin:tiny\n"

# (id, recipe overrides, extra flags, setup, words the one-line error must contain). setup as in test_bad_inputs.py,
# plus "bytes:<latin-1 text>" for a recipe that is not UTF-8.
RECIPE_ROWS = [
    ("key_twice", None, [], f"raw:{TINY}max_steps: 1\nseed: 3\nmax_steps: 5\n", ["recipe.yaml:4", "'max_steps' appears twice", "line 2", "keep one"]),
    ("key_twice_nested", None, [], f'raw:{TINY}reward_kwargs:\n  format: {{}}\n  format: {{}}\n', ["recipe.yaml:4", "'format' appears twice"]),
    ("learning_rate_word", {"learning_rate": "fast"}, [], None, ["recipe.yaml", "learning_rate: 'fast' is not a number", "e.g. learning_rate: 1e-06"]),
    ("seed_word", {"seed": "forty"}, [], None, ["recipe.yaml", "seed: 'forty' is not an integer", "e.g. seed: 42"]),
    ("bool_word", {"use_cpu": "maybe"}, [], None, ["recipe.yaml", "use_cpu: 'maybe' is not true or false"]),
    ("list_item_word", {"reward_weights": [1, "heavy", 1]}, [], None, ["recipe.yaml", "reward_weights[1]: 'heavy' is not a number"]),
    ("binary", None, [], "bytes:\x00\x01\x02model_name_or_path: x\n", ["recipe.yaml", "binary file", "not YAML"]),
    ("not_utf8", None, [], f"bytes:{TINY}system_prompt: caf\xe9\n", ["recipe.yaml:2", "not UTF-8", "0xe9", "save it as UTF-8"]),
    ("recipe_is_a_folder", None, ["--config", "{tmp}"], None, ["is a folder", "config.yaml"]),
    ("flag_without_value_last", {}, ["--learning_rate"], None, ["--learning_rate needs a value", "gdpo train --help"]),
    ("flag_without_value_before_flag", {}, ["--seed", "--max_steps", "1"], None, ["--seed needs a value"]),
    ("flag_wrong_type", {}, ["--seed", "forty"], None, ["--seed", "invalid int value", "'forty'"]),
    ("flag_bool_word", {}, ["--use_cpu", "maybe"], None, ["--use_cpu: Truthy value expected: got maybe"]),
    # A negative number in exponent form is a value, so the range check sees it (argparse took it for an option).
    ("negative_exponent_value", {}, ["--learning_rate", "-1e-3"], None, ["learning_rate=-0.001", ">= 0"]),
    ("bare_recipe_after_flags", {}, ["{tmp}/recipe.yaml"], None, ["did you mean `--config", "recipe.yaml`?"]),
]


@pytest.mark.parametrize(
    ("overrides", "flags", "setup", "words"), [r[1:] for r in RECIPE_ROWS], ids=[r[0] for r in RECIPE_ROWS]
)
def test_gdpo_train_rejects_recipe(tmp_path, capsys, monkeypatch, overrides, flags, setup, words):
    err = check_train_rejects(tmp_path, capsys, monkeypatch, overrides, flags, setup, words)
    assert "usage:" not in err  # one line, not argparse's usage of every field


def test_a_bare_recipe_path_asks_for_config(tmp_path, capsys):
    recipe = tmp_path / "my.yaml"
    recipe.write_text(yaml.safe_dump(BASE_RECIPE))
    code, err = run_cli(gdpo, ["train", str(recipe), "--max_steps", "1"], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo train", [f"did you mean `--config {recipe}`?"])


def test_a_single_value_where_a_list_belongs_is_a_one_element_list(tmp_path):
    """`reward_funcs: format` reads as `--reward_funcs format` does (it reached the trainer as a string before)."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({**BASE_RECIPE, "reward_funcs": "format", "reward_weights": 2, "seed": "7"}))
    script, training, _ = parse_args(["--config", str(recipe), "--output_dir", str(tmp_path / "out")])
    assert script.reward_funcs == ["format"] and training.reward_weights == [2.0] and training.seed == 7


def test_negative_numbers_in_exponent_form_are_values(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(BASE_RECIPE))
    flags = ["--reward_weights", "1", "-1e-3", "-2.5E+1", "--temperature", "1e-1", "--output_dir", str(tmp_path)]
    _, training, _ = parse_args(["--config", str(recipe), *flags])
    assert training.reward_weights == [1.0, -0.001, -25.0] and training.temperature == 0.1


# --- gdpo compare and gdpo plot ------------------------------------------------------------------------------------

COMPARE_ROWS = [
    ("steps_0", ["--steps", "0"], ["--steps 0: must be at least 1"]),
    ("prompts_per_step_0", ["--prompts_per_step", "0"], ["--prompts_per_step 0"]),
    ("num_generations_1", ["--num_generations", "1"], ["--num_generations 1: must be at least 2"]),
    ("scale_0", ["--scale", "0"], ["--scale 0"]),
    ("learning_rate_negative", ["--learning_rate", "-1e-3"], ["--learning_rate -0.001", ">= 0"]),
    ("flag_without_value", ["--steps"], ["--steps needs a value", "gdpo compare --help"]),
    ("recipe_missing", ["--config", "{tmp}/nope.yaml"], ["nope.yaml", "not found"]),
    ("recipe_key_twice", ["--config", "{tmp}/twice.yaml"], ["twice.yaml:2", "'seed' appears twice"]),
]


@pytest.mark.parametrize(("flags", "words"), [r[1:] for r in COMPARE_ROWS], ids=[r[0] for r in COMPARE_ROWS])
def test_gdpo_compare_rejects(tmp_path, capsys, flags, words):
    (tmp_path / "twice.yaml").write_text("seed: 1\nseed: 2\n")
    out = tmp_path / "compare"
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    code, err = run_cli(compare_main, [*flags, "--output_dir", str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo compare", words)
    assert not out.exists()


def test_gdpo_plot_names_a_damaged_trainer_state(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trainer_state.json").write_text('{"log_history": [{"step": 1, "rew')  # cut short while saving
    before = snapshot(tmp_path)
    code, err = run_cli(plot_main, [str(run), "--output_file", str(tmp_path / "p.png")], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo plot", [str(run / "trainer_state.json"), "not valid JSON at line 1", "cut short"])
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("given", "written"), [("d", "d.png"), ("d.svg", "d.svg"), ("folder", "folder/runs.png")])
def test_gdpo_plot_writes_the_file_it_names(tmp_path, capsys, given, written):
    run = tmp_path / "run"
    run.mkdir()
    log = [{"step": s, "rewards/format_reward/mean": 0.1 * s, "reward": 0.1 * s} for s in (1, 2)]
    (run / "trainer_state.json").write_text(json.dumps({"log_history": log}))
    (tmp_path / "folder").mkdir()
    assert plot_main([str(run), "--output_file", str(tmp_path / given)]) == 0
    err = capsys.readouterr().err
    assert f"wrote plot to {tmp_path / written}" in err and (tmp_path / written).is_file()
    assert not (tmp_path / given).is_file() or given == written


# --- gdpo compare's advice: only flags it accepts --------------------------------------------------------


def assert_compare_accepts(line: str) -> None:
    """Every flag ``line`` advises parses with gdpo compare's own parser (with the value the line gives it)."""
    from gdpo_trl.cli.compare_advice import FLAG
    from gdpo_trl.cli.compare_args import build_parser

    parser = build_parser()
    for match in FLAG.finditer(line):
        flag, value = "--" + match.group(1), match.group(2)
        action = parser._option_string_actions.get(flag)
        assert action is not None or flag == "--debug", f"gdpo compare does not accept {flag}: {line!r}"
        if action is not None and flag != "--help":
            parser.parse_args([flag, *([value] if value else [] if action.nargs == 0 else ["1"])])


def test_gdpo_compare_advises_only_its_own_flags_for_a_run_folder_in_use(tmp_path, capsys, monkeypatch):
    from tests.helpers.bad_inputs import earlier_run

    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(BASE_RECIPE))
    out = tmp_path / "compare"
    earlier_run(out / "grpo-seed0", "checkpoints")  # gdpo train's advice: --resume_from_checkpoint true, ...
    argv = ["--config", str(tmp_path / "recipe.yaml"), "--methods", "grpo", "--seeds", "0", "--steps", "1"]
    code, err = run_cli(compare_main, [*argv, "--output_dir", str(out)], capsys)
    assert code == 2
    line = next(line for line in err.splitlines() if "error:" in line)
    assert_one_line_error(err, "gdpo compare", ["already holds a run", "`overwrite_output_dir: true` in the --config"])
    assert_compare_accepts(line)


TRAIN_ADVICE = [
    "Run it with --num_processes 2, or train a new run from this checkpoint (--model_name_or_path /r/checkpoint-2 and "
    "a new --output_dir). Nothing was changed.",
    "bf16: true needs a GPU: set use_cpu: true and bf16: false (--use_cpu true --bf16 false), or use a GPU.",
    "lower --max_steps, or see gdpo compare --help.",
]


@pytest.mark.parametrize("message", TRAIN_ADVICE, ids=["processes", "bf16", "steps"])
def test_gdpo_train_advice_said_in_compare_terms(message):
    from gdpo_trl.cli.compare_advice import accepted_flags, in_compare_terms
    from gdpo_trl.cli.compare_args import build_parser

    said = in_compare_terms(message, accepted_flags(build_parser()))
    assert_compare_accepts(said)
    assert "--model /r/checkpoint-2" in said or "--steps" in said or "`bf16: false` in the --config recipe" in said
