"""A reward with zero spread in every group is named (GSM8K rewards on the shop agent's rollouts scored 0
for every completion of a run, and nothing said so); GD2PO with one reward says what GDPO says."""

import logging
import warnings

import pytest
import torch

from gdpo_trl import GDPOTrainer
from gdpo_trl.trainer import reward_pipeline
from gdpo_trl.trainer.reward_pipeline import RewardWatch, silent_columns
from tests.helpers.toy import parity_reward, toy_config, toy_dataset

NAN = float("nan")


def test_silent_columns_ignore_nan_and_need_a_value():
    rewards = torch.tensor(
        [  # two groups of 2; columns: all 0 / spread in group 2 / all NaN / one value per group and NaN
            [0.0, 1.0, NAN, 1.0],
            [0.0, 1.0, NAN, NAN],
            [0.0, 0.0, NAN, 2.0],
            [0.0, 1.0, NAN, NAN],
        ]
    )
    assert silent_columns(rewards, 2) == [True, False, False, True]


def test_warned_once_per_silent_stretch():
    watch = RewardWatch([], ["correctness", "format"])
    flat = torch.tensor([[0.0, 0.0], [0.0, 1.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):  # format has spread in its one group; correctness never
            watch.check_spread(flat, 2, warn=True)
        watch.check_spread(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), 2, warn=True)  # correctness gives signal once
        for _ in range(3):
            watch.check_spread(flat, 2, warn=True)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all(m.startswith("Reward 'correctness' scored every completion") for m in messages)
    assert "for 3 batches in a row (every value 0): it gives no signal" in messages[0]


def constant_reward(completions, **kwargs):
    return [0.0] * len(completions)


def test_a_reward_that_never_spreads_is_warned_in_training(tiny_model_path, tmp_path):
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, constant_reward],
        args=toy_config(tmp_path, max_steps=reward_pipeline.SILENT_BATCHES),
        train_dataset=toy_dataset(),
    )
    with pytest.warns(UserWarning, match="Reward 'constant_reward' scored every completion of each group alike"):
        trainer.train()


def test_gd2po_with_one_reward_says_it_is_grpo(tiny_model_path, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        GDPOTrainer(
            tiny_model_path,
            reward_funcs=[parity_reward],
            args=toy_config(tmp_path, multi_objective_aggregation="gd2po"),
            train_dataset=toy_dataset(),
        )
    assert "single reward function (parity_reward): GD2PO reduces to GRPO then" in caplog.text
