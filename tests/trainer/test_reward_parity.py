"""Multi-process parity: a reward that is None/NaN on one process only is warned about once in a
2-process run, as in a 1-process run (gdpo_trl.trainer.reward_pipeline's RewardWatch gathers every
process's rows)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gdpo_trl.rewards.process import process_reward
from gdpo_trl.trainer.process_rewards import ProcessRewardSlot
from gdpo_trl.trainer.reward_checks import CheckedReward
from gdpo_trl.trainer.reward_pipeline import RewardWatch, silent_slices
from tests.helpers.toy import parity_reward

ROOT = Path(__file__).resolve().parents[2]
NAN = math.nan


def silent_on_rank_1(completions, **kwargs):
    """1.0 per completion, None on the process of rank 1 (a reward whose inputs only that process lacks)."""
    return [None if os.environ.get("RANK") == "1" else float(len(str(c)) % 2) for c in completions]


def test_the_process_whose_rows_are_all_nan_is_found_per_reward():
    rewards = torch.tensor([[1.0, NAN], [0.0, NAN], [NAN, 1.0], [NAN, NAN]])  # 2 processes x 2 rows, 2 rewards
    assert silent_slices(rewards, 2) == {0: [1], 1: [0]}
    assert silent_slices(torch.tensor([[NAN, 1.0], [NAN, 0.0]]), 2) == {0: [0]}  # one process: its batch


def test_the_watch_warns_once_naming_the_process():
    """What each of two processes decides from the gathered rows (the slow test below runs it for real)."""
    import warnings

    steps = ProcessRewardSlot(process_reward(lambda completions, **kwargs: [None] * len(completions)), "steps")
    funcs = [parity_reward, CheckedReward(silent_on_rank_1), steps]
    watch = RewardWatch(funcs, ["parity_reward", "silent_on_rank_1", "steps"])
    rewards = torch.tensor(
        [[1.0, 1.0, 1.0], [0.0, 0.0, NAN], [1.0, NAN, NAN], [0.0, NAN, NAN]]
    )  # 2 processes x 2 rows
    with pytest.warns(UserWarning) as caught:
        watch.check_empty(rewards, 2, processes=2, warn=True)
    assert [str(w.message).split(":")[0] for w in caught] == [
        "Reward function 'silent_on_rank_1' returned None/NaN for all 2 completions of a batch on process 1 of 2",
        "Process reward 'steps' scored no step in any of the 2 completions of a batch on process 1 of 2",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        watch.check_empty(rewards, 2, processes=2, warn=True)  # once for the run
        with watch.scoring():  # while scoring, the wrapper leaves it to the watch
            assert watch.checked[1](completions=["a", "b"]) == [1.0, 1.0]


@pytest.mark.slow  # two processes loading torch and TRL, one step of builtin:tiny
def test_a_reward_silent_on_one_of_two_processes_is_warned_once(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "model_name_or_path: builtin:tiny\ndataset_name: synthetic\nsynthetic_size: 16\n"
        "reward_funcs: [tests.helpers.toy.parity_reward, tests.trainer.test_reward_parity.silent_on_rank_1]\n"
        "num_generations: 2\nper_device_train_batch_size: 2\nmax_completion_length: 4\nmax_steps: 2\n"
        "use_cpu: true\nbf16: false\ncpu_threads: 1\nreport_to: none\nsave_strategy: 'no'\nlogging_steps: 1\n"
    )
    command = [sys.executable, "-m", "gdpo_trl.cli.main", "train", "--config", str(recipe), "--num_processes", "2",
               "--output_dir", str(tmp_path / "out")]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    warned = [line for line in output.splitlines() if "returned None/NaN for all" in line]
    assert len(warned) == 1, output[-3000:]
    assert "'silent_on_rank_1' returned None/NaN for all 2 completions of a batch on process 1 of 2" in warned[0]
