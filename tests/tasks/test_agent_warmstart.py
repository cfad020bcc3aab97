"""The built agent warm start (``builtin:agent_warmstart``, 900 SFT steps, about 2 minutes on one CPU thread): every
reward starts mid-range on episodes it never saw, and the CPU recipe raises them. Built once per machine into the
model cache (see conftest), shared with ``gdpo train --config recipes/cpu/agent_gdpo/config.yaml``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GDPO = [sys.executable, "-m", "gdpo_trl.cli.main"]


@pytest.fixture(scope="module")
def agent_warmstart(model_cache):
    from gdpo_trl.core.plugins import resolve_model

    return resolve_model("builtin:agent_warmstart")


@pytest.mark.slow
def test_every_reward_starts_mid_range_on_held_out_episodes(agent_warmstart, tmp_path):
    """Measured with another sampling seed than docs/agents.md's (0), on 48 held-out episodes x 4 samples."""
    command = [*GDPO, "eval", "--model", agent_warmstart, "--dataset", "agent", "--limit", "48", "--n", "4"]
    command += ["--temperature", "1", "--max_new_tokens", "200", "--seed", "1234", "--output_dir", str(tmp_path)]
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    metrics = json.loads((tmp_path / "summary.json").read_text())["metrics"]
    print(metrics)
    # Room to move both ways: H6's first warm start (success 0.008) gave RL almost no success signal.
    assert 0.2 <= metrics["agent_success_mean"] <= 0.7, metrics
    assert 0.2 <= metrics["agent_format_mean"] <= 0.8, metrics
    assert 0.5 <= metrics["ShopEnv_mean"] <= 0.95, metrics  # some calls fail (wrong items), most work
    assert 1.5 <= metrics["mean_calls"] <= 2.5, metrics  # it calls the tools; sometimes once too few or too many
    assert metrics["truncated_fraction"] == 0.0  # it learned to stop


@pytest.mark.slow
def test_the_cpu_recipe_raises_every_reward(agent_warmstart, tmp_path):
    """docs/agents.md's command as written (30 steps of 4 episodes x 8 rollouts, about 15 s once the warm start
    is built): each reward's mean over the last 5 steps is above its mean over the first 5."""
    config = "recipes/cpu/agent_gdpo/config.yaml"
    subprocess.run([*GDPO, "train", "--config", config, "--output_dir", str(tmp_path)], check=True, cwd=ROOT)
    steps = [e for e in json.loads((tmp_path / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    assert len(steps) == 30
    for reward in ("agent_success", "agent_format", "agent_cost_if_agent_success", "ShopEnv"):
        values = [e[f"rewards/{reward}/mean"] for e in steps]
        assert sum(values[-5:]) / 5 > sum(values[:5]) / 5 + 0.05, (reward, values)
