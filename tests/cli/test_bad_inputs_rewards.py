"""Rewards that misbehave inside ``gdpo train``, and launcher options accelerate would fail on: one line each, no
traceback, the output folder unchanged.

The reward rows train ``builtin:tiny`` for one step in this process; the launcher rows stop before any process starts.
Rows on two processes are in ``tests/cli/test_gdpo_command.py`` (slow).
"""

import importlib.util
import logging

import pytest
import yaml

from gdpo_trl.cli.main import main as gdpo
from gdpo_trl.trainer import reward_checks
from gdpo_trl.trainer.reward_checks import CheckedAsyncReward, CheckedReward, RewardFunctionError
from tests.helpers.bad_inputs import BASE_RECIPE, CALL, assert_one_line_error, check_train_rejects, run_cli, snapshot

BAD = "tests.helpers.bad_rewards"

# (id, reward added to the recipe's, extra recipe fields, exit status, words of the one line)
REWARD_ROWS = [
    (
        "raises",
        f"{BAD}.raising_reward",
        {},
        1,
        ["Reward function 'raising_reward' raised KeyError: 'gold' (defined at tests/helpers/bad_rewards.py:22)"],
    ),
    ("sys_exit", f"{BAD}.exiting_reward", {}, 1, ["Reward function 'exiting_reward' called sys.exit(3)"]),
    ("os_exit", f"{BAD}.process_exit_reward", {}, 1, ["Reward function 'process_exit_reward' called os._exit(3)"]),
    (
        "times_out",
        f"{BAD}.slow_reward",
        {"reward_timeout": 1},
        2,
        ["Reward function 'slow_reward' took longer than reward_timeout=1 s", "raise reward_timeout"],
    ),
]


@pytest.mark.parametrize(
    ("reward", "fields", "code", "words"), [r[1:] for r in REWARD_ROWS], ids=[r[0] for r in REWARD_ROWS]
)
def test_a_misbehaving_reward_is_one_line(tmp_path, capsys, monkeypatch, reward, fields, code, words):
    monkeypatch.setenv("SLOW_REWARD_SECONDS", "4")
    overrides = {"reward_funcs": ["format", reward], **fields}
    err = check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words, code=code)
    # Before: an 80-line traceback above the line. Now only progress bars come before it, and it has its own line.
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "%|" not in line]
    assert [line for line in lines if "examples" not in line] == [lines[-1]], err
    assert lines[-1].startswith("gdpo train: error: Reward function"), err


def test_debug_shows_the_reward_traceback(tmp_path, monkeypatch):
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**BASE_RECIPE, "reward_funcs": ["format", f"{BAD}.raising_reward"]}))
    with pytest.raises(RewardFunctionError, match="raising_reward") as info:
        gdpo(["train", "--config", str(config), "--output_dir", str(tmp_path / "out"), "--debug"])
    assert isinstance(info.value.__cause__, KeyError)


def test_a_slow_reward_says_it_is_waiting(monkeypatch, caplog):
    """A line naming the reward and the seconds, after FIRST_NOTICE_S (10 s; shortened here) then each time the wait
    doubles (a handful of lines before reward_timeout stops it, not one every 30 s)."""
    import asyncio

    monkeypatch.setattr(reward_checks, "FIRST_NOTICE_S", 0.35)
    monkeypatch.setenv("SLOW_REWARD_SECONDS", "1.2")
    from tests.helpers.bad_rewards import slow_reward

    async def slow_async(completions, **kwargs):
        await asyncio.sleep(1.2)
        return [1.0] * len(completions)

    with caplog.at_level(logging.WARNING, logger=reward_checks.__name__):
        assert len(CheckedReward(slow_reward, timeout=60)(**CALL)) == 2
        assert asyncio.run(CheckedAsyncReward(slow_async, timeout=60)(**CALL)) == [1.0, 1.0]
    notices = [r.getMessage() for r in caplog.records]
    sync = [m for m in notices if "'slow_reward' is still running after" in m]
    late = [m for m in notices if "'slow_async' is still running after" in m]
    assert len(sync) == 2 and len(late) == 2, notices  # at 0.35 s and 0.7 s of 1.2 s (the next: 1.4 s)
    assert all(m.endswith(("(reward_timeout=60 s stops it in 60 s).", "stops it in 59 s).")) for m in sync + late)


def test_os_exit_outside_a_reward_is_left_alone():
    import os
    import threading

    from gdpo_trl.trainer import exit_guard

    with exit_guard.exits_raise():
        assert os._exit is exit_guard._guarded_exit and threading.get_ident() in exit_guard._guarded
    # This thread's os._exit is the real one again (the guard passes it through for threads outside a reward). The
    # function stays swapped only while another thread's reward still runs: one an earlier test timed out and left.
    assert threading.get_ident() not in exit_guard._guarded
    assert os._exit is exit_guard._real_exit or exit_guard._guarded


# --- launcher options: one line before anything starts ------------------------------------------------------------

FSDP_ON_CPU = "accelerate_configs/fsdp2.yaml"
LAUNCH_ROWS = [
    ("processes_0", ["--num_processes", "0"], None, ["--num_processes is 0", "must be >= 1"]),
    ("processes_negative", ["--num_processes", "-1"], None, ["--num_processes is -1", "must be >= 1"]),
    ("processes_word", ["--num_processes", "two"], None, ["--num_processes is 'two'", "whole number"]),
    ("port_too_high", ["--num_processes", "2", "--main_process_port", "99999"], None, ["99999", "1-65535"]),
    ("config_yaml_error", ["--accelerate_config", "{tmp}/bad.yaml"], "a: [1\nb: 2\n", ["bad.yaml:2", "YAML syntax"]),
    ("config_not_mapping", ["--accelerate_config", "{tmp}/bad.yaml"], "- 1\n", ["bad.yaml", "must be a mapping"]),
    ("config_processes_0", ["--accelerate_config", "{tmp}/bad.yaml"], "num_processes: 0\n", ["num_processes in the"]),
    ("fsdp_on_cpu", ["--accelerate_config", FSDP_ON_CPU, "--num_processes", "2"], None, ["asks for FSDP", "ddp.yaml"]),
    ("no_deepspeed", ["--accelerate_config", "zero2"], None, ["zero2.yaml runs DeepSpeed", "gdpo-trl[deepspeed]"]),
]


@pytest.mark.parametrize(("flags", "config", "words"), [r[1:] for r in LAUNCH_ROWS], ids=[r[0] for r in LAUNCH_ROWS])
def test_launch_options_are_one_line_before_anything_starts(tmp_path, capsys, monkeypatch, flags, config, words):
    monkeypatch.delenv("GDPO_TRL_DEBUG", raising=False)
    if "zero2" in flags:  # the wheel installed without its deepspeed extra
        find_spec = importlib.util.find_spec

        def hidden(name, *args, **kwargs):
            return None if name.split(".")[0] == "deepspeed" else find_spec(name, *args, **kwargs)

        monkeypatch.setattr(importlib.util, "find_spec", hidden)
    if config is not None:
        (tmp_path / "bad.yaml").write_text(config)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(BASE_RECIPE))
    out = tmp_path / "out"
    flags = [flag.replace("{tmp}", str(tmp_path)) for flag in flags]
    code, err = run_cli(gdpo, ["train", "--config", str(recipe), "--output_dir", str(out), *flags], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo train", words)
    assert len(err.strip().splitlines()) == 1, err  # FSDP on CPU: before, once per process and once more
    assert not out.exists() and snapshot(tmp_path)  # nothing started, nothing written


def test_a_stale_extension_lock_is_named_before_a_launch(tmp_path, monkeypatch):
    """A killed DeepSpeed op build leaves torch's ``lock`` file, and every later DeepSpeed run sleeps on it forever."""
    import os
    import time

    from gdpo_trl.cli.engines import STALE_LOCK_S, stale_extension_locks

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    old, fresh = tmp_path / "py311_cpu" / "deepspeed_shm_comm" / "lock", tmp_path / "py311_cpu" / "other_op" / "lock"
    for lock in (old, fresh):
        lock.parent.mkdir(parents=True)
        lock.touch()
    now = time.time()
    os.utime(old, (now - STALE_LOCK_S - 60, now - STALE_LOCK_S - 60))
    lines = stale_extension_locks(now)
    assert len(lines) == 1 and str(old) in lines[0] and "min old" in lines[0] and "deepspeed_shm_comm" in lines[0]
    old.unlink()
    assert stale_extension_locks(now) == []
