"""Rewards from the user's own file: ``path/to/rewards.py:function`` and a module in the current folder work
in a recipe's reward list and on the command line, without ``PYTHONPATH=.``; a missing file or module and a misspelled
function are answered in one line, with the nearest names, before torch is imported.

Each row runs ``gdpo train`` in a fresh interpreter whose ``sys.path`` lacks the current folder, as the ``gdpo``
console script's does (``python -c`` and ``python -m`` would add it), and lists the heavy modules it had loaded when
the line came. The rows whose reward names are right end on the next check of the recipe (one weight per reward),
which shows the names passed before torch loaded; ``test_a_file_reward_trains`` trains with both spellings.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gdpo_trl.cli.main import main as gdpo
from tests.helpers.bad_inputs import BASE_RECIPE

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "trl", "transformers", "accelerate", "datasets")
PROBE = """
import os, sys
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]  # as the gdpo console script starts
sys.path.insert(0, {root!r})
from gdpo_trl.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    print("exit", stop.code, "loaded", [m for m in {heavy!r} if m in sys.modules])
"""
REWARDS = """
from pathlib import Path


def length_bonus(completions, **kwargs):
    Path("called_length_bonus").touch()  # the run called it
    return [min(len(str(c)) / 100, 1.0) for c in completions]


def ends_well(completions, **kwargs):
    Path("called_ends_well").touch()
    return [1.0 if str(c).rstrip().endswith(">") else 0.0 for c in completions]
"""
WEIGHTS = "reward_weights has 1 weights for 2 reward functions"  # the check after the names': they passed

# (id, reward names in the recipe, command-line flags, words of the one line)
ROWS = [
    ("module_in_current_folder", ["format", "my_rewards.length_bonus"], ["--reward_weights", "1.0"], [WEIGHTS]),
    ("module_colon_function", ["format", "my_rewards:ends_well"], ["--reward_weights", "1.0"], [WEIGHTS]),
    ("file_and_function", ["format", "lib/task_rewards.py:ends_well"], ["--reward_weights", "1.0"], [WEIGHTS]),
    (
        "misspelled_function",
        ["format", "lib/task_rewards.py:lenght_bonus"],
        [],
        [
            "reward path 'lib/task_rewards.py:lenght_bonus': file 'lib/task_rewards.py' has no attribute 'lenght_bonus'",
            "(did you mean length_bonus?)",
        ],
    ),
    (
        "missing_file",
        ["format", "lib/task_reward.py:ends_well"],
        [],
        [
            "reward path 'lib/task_reward.py:ends_well': there is no file lib/task_reward.py",
            "relative to the current folder",
            "did you mean 'lib/task_rewards.py'?",
        ],
    ),
    (
        "misspelled_module",
        ["format", "my_reward.length_bonus"],
        [],
        ["reward path 'my_reward.length_bonus': cannot import module 'my_reward'", "did you mean my_rewards?"],
    ),
    (
        "command_line",
        None,
        ["--reward_funcs", "format", "my_rewards.py:lenght_bonus"],
        ["file 'my_rewards.py' has no attribute 'lenght_bonus' (did you mean length_bonus?)"],
    ),
]


def task_folder(folder: Path, rewards: list[str] | None) -> Path:
    """A user's folder: ``my_rewards.py`` beside the recipe, ``lib/task_rewards.py`` below it."""
    (folder / "my_rewards.py").write_text(REWARDS)
    (folder / "lib").mkdir()
    (folder / "lib" / "task_rewards.py").write_text(REWARDS)
    recipe = {**BASE_RECIPE, **({"reward_funcs": rewards} if rewards else {})}
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    return folder / "recipe.yaml"


@pytest.mark.parametrize(("rewards", "flags", "words"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_reward_of_your_own_is_checked_before_torch(tmp_path, rewards, flags, words):
    task_folder(tmp_path, rewards)
    argv = ["train", "--config", "recipe.yaml", "--output_dir", "out", *flags]
    probe = PROBE.format(root=str(ROOT), heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "exit 2 loaded []", result.stdout + result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gdpo train: error: "), result.stderr
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    assert not list(tmp_path.glob("called_*")) and not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_a_file_reward_trains(tmp_path, monkeypatch):
    """A module in the current folder and a file by path, in one recipe: both called in training, no PYTHONPATH."""
    recipe = task_folder(tmp_path, ["my_rewards.length_bonus", "lib/task_rewards.py:ends_well"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for name in ("my_rewards", "task_rewards"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    try:
        gdpo(["train", "--config", str(recipe), "--output_dir", str(tmp_path / "out")])
    except SystemExit as stop:
        assert stop.code in (0, None)
    finally:
        for name in ("my_rewards", "task_rewards"):
            sys.modules.pop(name, None)
    assert (tmp_path / "called_length_bonus").exists() and (tmp_path / "called_ends_well").exists()
