"""Ctrl-C on a one-process run is one line and exit 130, as on two (a 52-118-line KeyboardInterrupt
traceback before)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gdpo_trl.cli.errors import cli_errors
from gdpo_trl.cli.interrupts import output_dir_of
from gdpo_trl.cli.orphans import INTERRUPTED, LAUNCHER_ENV
from tests.helpers.bad_inputs import BASE_RECIPE

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("prog", "argv", "line"),
    [
        ("gdpo train", ["--output_dir", "{tmp}/none"], "gdpo train: stopped by SIGINT. No checkpoint was written yet"),
        ("gdpo train", ["--output_dir", "{tmp}"], "gdpo train: stopped by SIGINT. Run the same command with "
                                                  "--resume_from_checkpoint true to continue from the last checkpoint"),
        ("gdpo eval", [], "gdpo eval: stopped by SIGINT (Ctrl-C); nothing more was written."),
    ],
    ids=["train_no_checkpoint", "train_checkpoint", "eval"],
)  # fmt: skip
def test_ctrl_c_is_one_line_and_130(tmp_path, capsys, monkeypatch, prog, argv, line):
    monkeypatch.delenv(LAUNCHER_ENV, raising=False)
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    (tmp_path / "checkpoint-2").mkdir()

    @cli_errors(prog)
    def main(argv):
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as info:
        main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert info.value.code == INTERRUPTED == 130
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith(line), err


def test_a_launched_process_leaves_the_line_to_its_launcher(monkeypatch):
    monkeypatch.setenv(LAUNCHER_ENV, str(os.getpid()))

    @cli_errors("gdpo train")
    def main(argv):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # gdpo_trl.cli.orphans.quiet_interrupt ends it quietly
        main([])


def test_the_output_dir_comes_from_the_flag_else_the_recipe(tmp_path):
    (tmp_path / "r.yaml").write_text("output_dir: from/recipe\n")
    assert output_dir_of(["--config", str(tmp_path / "r.yaml")]) == "from/recipe"
    assert output_dir_of(["--config", str(tmp_path / "r.yaml"), "--output_dir", "flag"]) == "flag"
    assert output_dir_of(["--output_dir=eq"]) == "eq"
    assert output_dir_of([]) is None


@pytest.mark.slow  # a real SIGINT to a real run: ~15 s, most of it imports
def test_a_real_ctrl_c_on_one_process(tmp_path):
    config = tmp_path / "recipe.yaml"
    recipe = {**BASE_RECIPE, "reward_funcs": ["format", "tests.helpers.bad_rewards.slow_reward"], "max_steps": 5}
    config.write_text(yaml.safe_dump(recipe))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SLOW_REWARD_SECONDS": "30", "HF_HUB_OFFLINE": "1"}
    env.pop(LAUNCHER_ENV, None)
    argv = [sys.executable, "-m", "gdpo_trl.cli.main", "train", "--config", str(config), "--output_dir",
            str(tmp_path / "out")]  # fmt: skip
    run = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "out").exists() and time.monotonic() < deadline:  # training has started
        time.sleep(0.5)
    time.sleep(3)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == INTERRUPTED, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    lines = [x for x in err.replace("\r", "\n").splitlines() if "stopped by SIGINT" in x]
    assert lines == ["gdpo train: stopped by SIGINT. No checkpoint was written yet, so there is nothing to resume."]
