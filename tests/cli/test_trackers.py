"""Trackers see GDPO: a tiny run with ``report_to: tensorboard`` and one with ``report_to: trackio`` (both local and
offline), read back from what each wrote. Every GDPO metric, per reward, must be there (README, "What it logs")."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from gdpo_trl.cli.train import main

REWARDS = ("format_reward", "correctness_reward", "integer_reward")
# What GDPOTrainer logs on top of TRL's (gdpo_trl.core.diagnostics.reward_diagnostics), with TRL's per-reward means.
GDPO_METRICS = sorted(
    [f"rewards/{name}/{what}" for name in REWARDS for what in ("mean", "frac_zero_std", "advantage_share")]
    + ["frac_reward_zero_std", "advantages/distinct_per_group", "advantages/distinct_per_group_grpo", "reward"]
)
RUN = ["--config", "cpu/gdpo", "--max_steps", "2"]


@pytest.fixture(autouse=True, scope="module")
def _restore_threads():
    """The CPU recipe's `cpu_threads: 1` applies to the whole pytest process: restore torch's setting afterwards."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_tensorboard_sees_every_gdpo_metric(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    main([*RUN, "--output_dir", str(tmp_path / "run"), "--report_to", "tensorboard"])
    events = sorted((tmp_path / "run" / "runs").glob("*/events.out.tfevents.*"))
    assert len(events) == 1, events
    logged = EventAccumulator(str(events[0])).Reload()
    tags = set(logged.Tags()["scalars"])
    assert {f"train/{metric}" for metric in GDPO_METRICS} <= tags, sorted(tags)
    shares = [logged.Scalars(f"train/rewards/{name}/advantage_share") for name in REWARDS]
    assert [[point.step for point in series] for series in shares] == [[1, 2]] * 3  # one point per logged step
    for step in (0, 1):  # each step's shares add up to one: the real values went through, not placeholders
        assert sum(series[step].value for series in shares) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_trackio_sees_every_gdpo_metric(tmp_path):
    """In a child process: trackio reads TRACKIO_DIR when it is imported."""
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "gdpo_trl.cli.train", *RUN, "--output_dir", str(tmp_path / "run")]
    command += ["--report_to", "trackio", "--project", "gdpo-tracker-test"]
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    databases = sorted((tmp_path / "trackio").glob("*.db"))
    assert [db.name for db in databases] == ["gdpo-tracker-test.db"]
    with sqlite3.connect(databases[0]) as db:
        rows = [(step, json.loads(metrics)) for step, metrics in db.execute("SELECT step, metrics FROM metrics")]
    steps = [(step, metrics) for step, metrics in rows if "train/rewards/format_reward/advantage_share" in metrics]
    assert [step for step, _ in steps] == [1, 2], [step for step, _ in rows]
    for _, metrics in steps:
        assert {f"train/{metric}" for metric in GDPO_METRICS} <= set(metrics), sorted(metrics)
        shares = sum(metrics[f"train/rewards/{name}/advantage_share"] for name in REWARDS)
        assert shares == pytest.approx(1.0, abs=1e-5)
