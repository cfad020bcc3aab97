"""GDPOTrainer with two environments in one batch (TRL's environment_factory dict): each reward applies to its own
task's rows only (NaN elsewhere, from None), the environment's get_reward is the last reward, and the advantages are
GDPO's on that matrix."""

import pytest
import torch

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.advantages import gdpo_advantages
from gdpo_trl.core.diagnostics import reward_diagnostics
from gdpo_trl.models.tiny import build_model
from gdpo_trl.rewards.agent import agent_format, agent_success, arith_format
from gdpo_trl.tasks.agent_task import MIX_FACTORIES, build_tokenizer, load_agent_mix
from tests.helpers.recorders import Recorder
from tests.helpers.toy import toy_config


@pytest.fixture(scope="module")
def agent_tiny_path(tmp_path_factory):
    """A random ``tiny`` model with the agent task's tokenizer (its tool-rendering template and response template)."""
    path = tmp_path_factory.mktemp("agent-tiny")
    tokenizer = build_tokenizer()
    build_model(tokenizer, "tiny", seed=0).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.mark.slow  # 7 s of CPU, but 45 s of wall time on the busy shared machine
def test_mixed_environments_none_where_a_reward_does_not_apply(agent_tiny_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)
    rows = load_agent_mix(2, seed=0)  # one shop row, one arith row: every batch of 2 prompts holds both
    assert rows["environment"] == ["shop", "arith"]
    trainer = GDPOTrainer(
        agent_tiny_path,
        reward_funcs=[agent_success, agent_format, arith_format],
        args=toy_config(tmp_path, max_tool_calling_iterations=2, max_completion_length=24),
        train_dataset=rows,
        environment_factory=MIX_FACTORIES,
    )
    assert trainer.reward_func_names == ["agent_success", "agent_format", "arith_format", "ShopEnv"]
    assert trainer.reward_weights.tolist() == [1.0, 1.0, 1.0, 1.0]  # TRL's weight for the environment's reward
    trainer.train()
    recorder.assert_batches(2)
    for rewards, ours in zip(recorder.rewards, recorder.ours, strict=True):
        missing = torch.isnan(rewards)
        shop = ~missing[:, 0]  # agent_success applies exactly to the shop rows
        assert shop.sum() == 4 and (~shop).sum() == 4
        assert (missing[shop] == torch.tensor([False, False, True, False])).all()
        assert (missing[~shop] == torch.tensor([True, True, False, True])).all()
        torch.testing.assert_close(ours, gdpo_advantages(rewards, [1.0] * 4, 4))
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == 2 and all("rewards/ShopEnv/mean" in entry for entry in logged)
    names = trainer.reward_func_names
    for entry, rewards, ours in zip(logged, recorder.rewards, recorder.ours, strict=True):
        # What was logged is what the pure diagnostics give on the very batch: NaN rows counted as not applied.
        expected = reward_diagnostics(rewards, ours, torch.ones(4), names, 4, gdpo=True)
        for key, value in expected.items():
            assert entry[key] == pytest.approx(value), key
        assert [entry[f"rewards/{name}/applied"] for name in names] == [0.5] * 4  # each applied to its task's half
        # Each group is of one task, so every reward is missing from one of the two groups: no spread there.
        assert all(entry[f"rewards/{name}/frac_zero_std"] >= 0.5 for name in names)
