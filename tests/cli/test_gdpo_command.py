"""The `gdpo` command: subcommands, accelerate's launch options split from the recipe's flags, one-line errors."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gdpo_trl.cli import launch
from gdpo_trl.cli.first_checks import split_launch
from gdpo_trl.cli.main import SUBCOMMANDS
from gdpo_trl.cli.main import main as gdpo
from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.field_table import load_table

ROOT = Path(__file__).resolve().parents[2]
RECIPE = str(ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml")


def split_launch_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """gdpo train's one split (:func:`gdpo_trl.cli.first_checks.split_launch`) with the committed field table."""
    return split_launch(argv, load_table())


def test_help_lists_every_subcommand(capsys):
    assert gdpo(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("train", "eval", "compare", "plot", "gaming", "recipes")) and set(SUBCOMMANDS) == {
        "train",
        "eval",
        "pilot",
        "compare",
        "plot",
        "gaming",
        "recipes",
    }


def test_unknown_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        gdpo(["trian"])
    assert exit_info.value.code == 2 and "unknown subcommand 'trian'" in capsys.readouterr().err


def test_launch_options_are_split_from_the_recipe_flags():
    argv = ["--config", RECIPE, "--num_processes", "2", "--gradient_accumulation_steps", "2", "--max_steps=3"]
    recipe, options = split_launch_args([*argv, "--main_process_port=29555", "--accelerate_config", "zero3"])
    # --gradient_accumulation_steps is also an accelerate option: a training field wins, as with `trl grpo`.
    assert recipe == ["--config", RECIPE, "--gradient_accumulation_steps", "2", "--max_steps=3"]
    assert options[:3] == ["--num_processes", "2", "--main_process_port=29555"]
    assert options[3] == "--config_file" and Path(options[4]).resolve() == ROOT / "accelerate_configs" / "zero3.yaml"


def test_the_table_splits_as_the_live_dataclasses_do():
    """Where the field table does not fit the installed libraries, the split uses TRL's dataclasses and accelerate's
    parser: both give the same answer on the committed table's machine."""
    argv = ["--config", RECIPE, "--num_processes", "2", "--gradient_accumulation_steps", "2", "--mixed_precision=no"]
    assert split_launch(argv, None) == split_launch_args(argv)
    assert split_launch_args(argv)[1] == ["--num_processes", "2", "--mixed_precision=no"]


def test_no_launch_option_means_no_launch():
    assert split_launch_args(["--config", RECIPE, "--max_steps", "2"]) == (
        ["--config", RECIPE, "--max_steps", "2"],
        [],
    )


def test_a_bad_accelerate_config_names_the_choices():
    with pytest.raises(InputError, match=r"'zero9' is neither a file nor one of the configs \['ddp', 'fsdp2'"):
        split_launch_args(["--config", RECIPE, "--accelerate_config", "zero9"])
    with pytest.raises(InputError, match="--num_processes needs a value"):
        split_launch_args(["--config", RECIPE, "--num_processes"])


def test_launch_defaults_on_one_machine():
    options = launch.launch_defaults(["--num_processes", "2"])
    assert options[:2] == ["--num_processes", "2"] and "--multi_gpu" in options  # torchrun; gloo with use_cpu
    assert options[options.index("--num_machines") + 1] == "1"
    assert int(options[options.index("--main_process_port") + 1]) > 0  # a free port, not 29500
    # Several machines share one port: never picked here. A config file brings its own distributed type.
    several = launch.launch_defaults(["--num_machines", "2", "--machine_rank", "1", "--num_processes", "4"])
    assert "--main_process_port" not in several
    with_file = launch.launch_defaults(["--config_file", str(ROOT / "accelerate_configs" / "zero3.yaml")])
    assert "--multi_gpu" not in with_file and "--mixed_precision" not in with_file


def test_compare_refuses_a_bad_recipe_exactly_as_train_does(tmp_path, capsys):
    from gdpo_trl.cli.compare import main as compare

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({**yaml.safe_load(Path(RECIPE).read_text()), "learning_rat": 1e-4}))
    errors = []
    for command in (["train", "--config", str(recipe)], None):
        with pytest.raises(SystemExit) as exit_info:
            gdpo(command) if command else compare(["--config", str(recipe), "--output_dir", str(tmp_path / "c")])
        assert exit_info.value.code == 2
        errors.append(capsys.readouterr().err.strip().split(": error: ", 1))
    (train_prog, train_error), (compare_prog, compare_error) = errors
    assert (train_prog, compare_prog) == ("gdpo train", "gdpo compare")
    assert train_error == compare_error and "learning_rat" in train_error and "learning_rate" in train_error
    assert not (tmp_path / "c").exists()  # refused before any run folder was made


@pytest.mark.slow
def test_train_starts_two_processes_itself(tmp_path):
    """`gdpo train ... --num_processes 2`: no `accelerate launch` typed; both ranks train and one saves.

    What runs is `accelerate launch --multi_gpu ... -m gdpo_trl.cli.train` (torchrun underneath, gloo backend),
    the command a user may type instead: `--multi_gpu` selects the multi-process launcher (`--cpu --num_processes 2`
    starts a single process). One run serves both ways in (it was trained once more, typed by hand)."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "gdpo_trl.cli.main", "train", "--config", RECIPE, "--num_processes", "2"]
    flags = ["--model_name_or_path", "builtin:tiny", "--max_steps", "2", "--output_dir", str(out)]
    result = subprocess.run([*command, *flags], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("Training finished after 2 steps on 2 processes.") == 1  # printed by rank 0 only
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 2
    assert (out / "model.safetensors").is_file()


@pytest.mark.slow
def test_an_input_error_under_two_processes_is_one_line(tmp_path):
    """A mistake only the workers can see (too few rows for one step): one line for the run, exit 2, no traceback."""
    command = [sys.executable, "-m", "gdpo_trl.cli.main", "train", "--config", RECIPE, "--num_processes", "2"]
    flags = ["--model_name_or_path", "builtin:tiny", "--max_train_samples", "2", "--output_dir", str(tmp_path / "o")]
    result = subprocess.run([*command, *flags], capture_output=True, text=True, timeout=600)
    assert result.returncode == 2, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("gdpo train: error: The dataset has 2 rows"), result.stderr
    assert "Traceback" not in result.stderr and "ChildFailedError" not in result.stderr


def test_a_gpu_recipe_fits_this_machine_with_a_warning_each(caplog):
    """flash_attention_2 without CUDA becomes sdpa; a tracker that is not installed is left out (and said)."""
    from types import SimpleNamespace

    from gdpo_trl.run.checks import fit_to_machine

    training = SimpleNamespace(use_cpu=True, report_to=["wandb", "no-such-tracker"])
    model = SimpleNamespace(attn_implementation="flash_attention_2")
    with caplog.at_level("WARNING", logger="gdpo_trl"):
        fit_to_machine(training, model)
    assert model.attn_implementation == "sdpa" and training.report_to == []
    assert (
        "flash_attention_2 needs a CUDA GPU" in caplog.text and "wandb, no-such-tracker not installed" in caplog.text
    )


def test_train_help_all_reads_like_trl(capsys):
    """--help-all: usage, what the command is, --config, the accelerate options, --debug and two examples, then every
    field by group (the short --help: tests/recipe/test_first_checks.py)."""
    assert gdpo(["train", "--help-all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "usage: gdpo train --config RECIPE [--FIELD VALUE ...] [ACCELERATE OPTIONS] [--debug]"
    assert lines[2].startswith("Train a model with GDPO (or GRPO) from a TRL-style YAML recipe.")
    head = "\n".join(lines[:25])
    for word in (
        "  --config RECIPE",
        "--accelerate_config NAME_OR_FILE",
        "--num_processes N",
        "  --debug",
        "examples:",
    ):
        assert word in head, word
    examples = [line for line in lines[:25] if line.startswith("  gdpo train --config recipes/")]
    assert len(examples) == 2
    groups = [
        i for i, line in enumerate(lines) if line.startswith(("data and rewards", "training (", "model and LoRA"))
    ]
    assert len(groups) == 3 and groups == sorted(groups) and groups[0] < 25
    fields = "\n".join(lines[groups[0] :])
    assert "--reward_funcs" in fields and "--learning_rate" in fields and "--lora_r" in fields


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--config", "{tmp}/nope.yaml"],  # found by gdpo train itself
        ["train", "--config", "{tmp}/typo.yaml"],  # found by the command it runs (the flag used to stop at gdpo)
        ["eval", "--model", "builtin:tiny", "--task", "bfcl", "--temperature", "1"],
        ["compare", "--steps", "0"],
        ["plot", "{tmp}/no-run"],
    ],
    ids=["train", "train_nested", "eval", "compare", "plot"],
)
def test_debug_shows_the_traceback_in_every_subcommand(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    (tmp_path / "typo.yaml").write_text("model_name_or_path: builtin:tiny\nlearning_rat: 1\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        gdpo(argv)
    assert exit_info.value.code == 2 and capsys.readouterr().err.count("error:") == 1
    with pytest.raises((InputError, FileNotFoundError)):
        gdpo([*argv, "--debug"])
    assert "GDPO_TRL_DEBUG" not in os.environ  # set for the command it runs, then restored


def test_old_spellings_still_work_with_one_warning_each(tmp_path, capsys):
    from gdpo_trl.cli.compare_args import parse_args as compare_args

    args = compare_args(
        ["--out-dir", str(tmp_path), "--learning-rate", "1e-3", "--prompts-per-step=2", "--threads", "1"]
    )
    assert (args.output_dir, args.learning_rate, args.prompts_per_step, args.cpu_threads) == (
        str(tmp_path),
        1e-3,
        2,
        1,
    )
    warnings = capsys.readouterr().err.splitlines()
    assert warnings == [
        "gdpo compare: warning: --out-dir is deprecated, use --output_dir",
        "gdpo compare: warning: --learning-rate is deprecated, use --learning_rate",
        "gdpo compare: warning: --prompts-per-step is deprecated, use --prompts_per_step",
        "gdpo compare: warning: --threads is deprecated, use --cpu_threads",
    ]
    from gdpo_trl.cli.plot import main as plot

    (tmp_path / "run").mkdir()
    log = [{"step": 1, "rewards/format_reward/mean": 0.5, "reward": 0.5}]
    (tmp_path / "run" / "trainer_state.json").write_text(json.dumps({"log_history": log}))
    assert plot([str(tmp_path / "run"), "--out", str(tmp_path / "runs.png")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "gdpo plot: warning: --out is deprecated, use --output_file",
        f"wrote plot to {tmp_path / 'runs.png'}",
    ]


# A failure on one rank of two: one line for the run, naming the rank, whatever the other rank met meanwhile (blocked
# in a collective, "Connection closed by peer", killed by the launcher). Before: 146-148 lines of per-rank tracebacks,
# or, for a timeout on rank 1 only, exit 2 and nothing at all. (id, reward, extra flags, exit status, the line)
BAD = "tests.helpers.bad_rewards"
TWO_PROCESS_ROWS = [
    (
        "raises_on_rank_1",
        f"{BAD}.rank1_raising_reward",
        [],
        1,
        "gdpo train: error: Reward function 'rank1_raising_reward' raised KeyError on rank 1: 'gold'",
    ),
    (
        "times_out_on_rank_1",
        f"{BAD}.rank1_hanging_reward",
        ["--reward_timeout", "3"],
        2,
        "gdpo train: error: Reward function 'rank1_hanging_reward' took longer than reward_timeout=3 s on one batch "
        "on rank 1;",
    ),
    (
        "killed_on_rank_1",
        f"{BAD}.rank1_killed_reward",
        [],
        1,
        "gdpo train: error: rank 1 was killed by SIGKILL without an error message:",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reward", "flags", "code", "line"), [r[1:] for r in TWO_PROCESS_ROWS], ids=[r[0] for r in TWO_PROCESS_ROWS]
)
def test_a_failure_on_one_rank_is_one_line(tmp_path, reward, flags, code, line):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "gdpo_trl.cli.main", "train", "--config", RECIPE, "--num_processes", "2"]
    recipe_flags = ["--model_name_or_path", "builtin:tiny", "--max_steps", "1", "--output_dir", str(out)]
    recipe_flags += ["--reward_funcs", "format", reward, *flags]
    result = subprocess.run([*command, *recipe_flags], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == code, result.stderr[-3000:]
    # What is left besides progress bars: torch's launcher's OMP_NUM_THREADS notice (every run), and the line.
    text = result.stderr.replace("\r", "\n")
    lines = [x for x in text.splitlines() if x.strip() and "%|" not in x and "torch/distributed/run.py" not in x]
    assert lines and [x for x in lines if "examples" not in x] == [lines[-1]], result.stderr[-3000:]
    assert lines[-1].startswith(line), lines[-1]
    assert "Traceback" not in result.stderr and "Connection closed" not in result.stderr
    assert not (out / "model.safetensors").exists()


def test_a_reader_closing_the_pipe_ends_the_command_quietly():
    """`gdpo recipes list | head -1`: no traceback, and the status of a command killed by SIGPIPE (141). The reader
    here is `true`, which exits before Python has started, so the write always meets a closed pipe."""
    command = f"{shlex.quote(sys.executable)} -m gdpo_trl.cli.main recipes list | true; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT)
    assert done.stderr == "" and done.returncode == 141, done.stderr
