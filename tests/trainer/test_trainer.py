"""GDPOTrainer against TRL's own GRPOTrainer code path, its fallback, hook, metrics and error messages."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from trl import GRPOConfig

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.advantages import gdpo_advantages, grpo_advantages
from gdpo_trl.core.diagnostics import frac_zero_std_per_reward
from gdpo_trl.trainer.reward_checks import RewardFunctionError
from tests.helpers.recorders import Recorder
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset


def train(model_path, tmp_path, reward_funcs, trainer_cls=GDPOTrainer, **overrides):
    trainer = trainer_cls(
        model_path, reward_funcs=reward_funcs, args=toy_config(tmp_path, **overrides), train_dataset=toy_dataset()
    )
    trainer.train()
    return trainer


def test_gdpo_equals_trl_native_normalize_then_sum(tiny_model_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)
    trainer = train(tiny_model_path, tmp_path, [parity_reward, length_mod_reward], reward_weights=[1.0, 0.5])
    recorder.assert_batches(2)
    for rewards, trl_adv, ours in zip(recorder.rewards, recorder.trl, recorder.ours, strict=True):
        assert torch.isnan(rewards[:, 1]).any()  # the None rewards really reached the matrix
        assert ours.abs().sum() > 0
        torch.testing.assert_close(ours, trl_adv, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ours, gdpo_advantages(rewards, [1.0, 0.5], 4))
    # The completions table shows the advantages that trained.
    assert list(trainer._logs["advantages"]) == pytest.approx(recorder.ours[-1].tolist())


def test_metrics_per_reward_and_group_level_zero_std(tiny_model_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)
    trainer = train(tiny_model_path, tmp_path, [parity_reward, length_mod_reward])
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logs) == 2
    recorder.assert_batches(2)
    for entry, rewards in zip(logs, recorder.rewards, strict=True):
        expected = frac_zero_std_per_reward(rewards, 4).tolist()
        assert entry["rewards/parity_reward/frac_zero_std"] == pytest.approx(expected[0])
        assert entry["rewards/length_mod_reward/frac_zero_std"] == pytest.approx(expected[1])
        shares = entry["rewards/parity_reward/advantage_share"] + entry["rewards/length_mod_reward/advantage_share"]
        assert shares == pytest.approx(1.0)
        # A group gives no signal when every reward is constant in it.
        grouped = rewards.view(-1, 4, 2)
        constant = [all(len({v for v in col.tolist() if v == v}) <= 1 for col in group.T) for group in grouped]
        assert entry["frac_reward_zero_std"] == pytest.approx(sum(constant) / len(constant))
        assert 1 <= entry["advantages/distinct_per_group"] <= 4
        assert 1 <= entry["advantages/distinct_per_group_grpo"] <= 4


def test_single_reward_falls_back_to_grpo(tiny_model_path, tmp_path, monkeypatch, caplog):
    recorder = Recorder(monkeypatch)
    with caplog.at_level(logging.WARNING):
        train(tiny_model_path, tmp_path, parity_reward, scale_rewards="batch")
    assert sum("single reward function" in r.message for r in caplog.records) == 1
    recorder.assert_batches(2)
    for rewards, ours in zip(recorder.rewards, recorder.ours, strict=True):
        torch.testing.assert_close(ours, grpo_advantages(rewards, [1.0], 4, scale="batch"))


def test_sum_then_normalize_equals_trl_native_grpo(tiny_model_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)
    train(
        tiny_model_path, tmp_path, [parity_reward, length_mod_reward], multi_objective_aggregation="sum_then_normalize"
    )
    recorder.assert_batches(2)
    for trl_adv, ours in zip(recorder.trl, recorder.ours, strict=True):
        torch.testing.assert_close(ours, trl_adv, atol=1e-5, rtol=1e-5)


def test_compute_advantages_hook_is_what_trains(tiny_model_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)

    class FirstRewardOnly(GDPOTrainer):
        def compute_advantages(self, rewards, num_generations):
            return rewards[:, 0] - 0.5

    train(tiny_model_path, tmp_path, [parity_reward, length_mod_reward], trainer_cls=FirstRewardOnly)
    recorder.assert_batches(2)
    for rewards, ours in zip(recorder.rewards, recorder.ours, strict=True):
        assert ours.tolist() == (rewards[:, 0] - 0.5).tolist()


def test_hook_returning_wrong_shape_fails(tiny_model_path, tmp_path):
    class Broken(GDPOTrainer):
        def compute_advantages(self, rewards, num_generations):
            return rewards

    with pytest.raises(ValueError, match=r"Broken.compute_advantages must return finite advantages of shape \(8,\)"):
        train(tiny_model_path, tmp_path, [parity_reward, length_mod_reward], trainer_cls=Broken)


def exploding_reward(completions, **kwargs):
    raise KeyError("solution")


def short_reward(completions, **kwargs):
    return [1.0] * (len(completions) - 1)


def infinite_reward(completions, **kwargs):
    return [float("inf")] * len(completions)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (exploding_reward, RewardFunctionError, "Reward function 'exploding_reward' raised KeyError: 'solution'"),
        (short_reward, ValueError, "Reward function 'short_reward' returned 7 values for 8 completions"),
        (infinite_reward, ValueError, "Reward function 'infinite_reward' returned inf for completion 0"),
    ],
)
def test_bad_reward_function_is_named(tiny_model_path, tmp_path, bad, error, message):
    with pytest.raises(error, match=message):
        train(tiny_model_path, tmp_path, [parity_reward, bad])


def test_async_reward_function_is_checked_too(tiny_model_path, tmp_path):
    async def async_parity(completions, **kwargs):
        return parity_reward(completions)

    trainer = train(tiny_model_path, tmp_path, [async_parity, length_mod_reward], max_steps=1)
    assert "rewards/async_parity/mean" in trainer.state.log_history[0]


def test_grpo_config_is_rejected_with_a_fix(tiny_model_path, tmp_path):
    with pytest.raises(TypeError, match="GDPOTrainer needs a GDPOConfig, got GRPOConfig"):
        GDPOTrainer(
            tiny_model_path, reward_funcs=parity_reward, args=GRPOConfig(str(tmp_path), bf16=False, use_cpu=True)
        )


def test_lora_two_steps_changes_only_the_adapter(tiny_model_path, tmp_path):
    from peft import LoraConfig

    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, length_mod_reward],
        args=toy_config(tmp_path),
        train_dataset=toy_dataset(),
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all("lora_" in n for n in changed)


def test_two_processes_match_trl_and_slice_per_rank(tiny_model_path, tmp_path):
    """torchrun --nproc_per_node 2 on CPU (gloo): each rank trains on its slice of the global GDPO advantages."""
    env = {**os.environ, "GDPO_TEST_MODEL": tiny_model_path, "GDPO_TEST_OUT": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517"]
    result = subprocess.run(
        [*command, str(root / "tests" / "helpers" / "two_process_check.py")], env=env, cwd=root, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for step in range(2):
        rewards = torch.tensor(ranks[0]["rewards"][step])
        assert rewards.tolist() == ranks[1]["rewards"][step] or torch.equal(
            torch.nan_to_num(rewards, 7.0), torch.nan_to_num(torch.tensor(ranks[1]["rewards"][step]), 7.0)
        )
        expected = gdpo_advantages(rewards, [1.0, 1.0], 4)
        assert len(expected) == 16  # 8 completions on each of 2 processes, gathered
        for rank in range(2):
            ours = torch.tensor(ranks[rank]["ours"][step])
            torch.testing.assert_close(ours, expected[rank * 8 : (rank + 1) * 8])
            torch.testing.assert_close(ours, torch.tensor(ranks[rank]["trl"][step]), atol=1e-5, rtol=1e-5)
