"""GDPOTrainer with multi_objective_aggregation='gd2po', and the conflict metrics every multi-reward run logs: what
trains and what is logged equal the pure functions on the very batch."""

import pytest
import torch

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.diagnostics import conflict_diagnostics
from gdpo_trl.core.gd2po import gd2po_advantages
from tests.helpers.recorders import Recorder, logged, record_lengths
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset

REWARDS = [parity_reward, length_mod_reward]
KEPT = ("conflict/kept_share", "conflict/group_keep_ratio", "conflict/group_keep_ratio_min")


def train(model_path, tmp_path, **overrides):
    trainer = GDPOTrainer(
        model_path, reward_funcs=REWARDS, args=toy_config(tmp_path, **overrides), train_dataset=toy_dataset()
    )
    trainer.train()
    return trainer


@pytest.mark.parametrize("threshold", [0.2, 1.0])
def test_gd2po_trains_on_the_pure_function_and_logs_it(tiny_model_path, tmp_path, monkeypatch, threshold):
    lengths = record_lengths(monkeypatch)
    recorder = Recorder(monkeypatch)
    trainer = train(
        tiny_model_path,
        tmp_path,
        multi_objective_aggregation="gd2po",
        gd2po_threshold=threshold,
        reward_weights=[1, 2],
    )
    recorder.assert_batches(2)
    assert trainer.uses_gd2po and len(lengths) == 2
    entries = logged(trainer)
    assert len(entries) == 2
    for rewards, ours, counts, entry in zip(recorder.rewards, recorder.ours, lengths, entries, strict=True):
        mask = (torch.arange(int(counts.max())) < counts.unsqueeze(1)).long()
        expected, keep = gd2po_advantages(rewards, [1.0, 2.0], 4, threshold=threshold, completion_mask=mask)
        torch.testing.assert_close(ours, expected)
        assert (ours[~keep] == 0).all()
        metrics = conflict_diagnostics(
            rewards, torch.tensor([1.0, 2.0]), 4, threshold=threshold, completion_mask=mask, keep=keep
        )
        assert set(KEPT) <= set(metrics)
        for key, value in metrics.items():
            assert entry[key] == pytest.approx(value), key
        assert entry["conflict/kept_share"] == pytest.approx(1 - entry["conflict/masked_share"])
        if threshold == 1.0:
            assert entry["conflict/masked_share"] == pytest.approx(entry["conflict/share"])


@pytest.mark.parametrize("aggregation", ["normalize_then_sum", "sum_then_normalize"])
def test_every_multi_reward_run_logs_its_conflicts(tiny_model_path, tmp_path, monkeypatch, aggregation):
    recorder = Recorder(monkeypatch)
    trainer = train(tiny_model_path, tmp_path, multi_objective_aggregation=aggregation, gd2po_threshold=0.5)
    recorder.assert_batches(2)
    entries = logged(trainer)
    assert len(entries) == 2
    for rewards, entry in zip(recorder.rewards, entries, strict=True):
        expected = conflict_diagnostics(rewards, torch.ones(2), 4, threshold=0.5)
        assert set(expected) == {"conflict/share", "conflict/masked_share"}
        for key, value in expected.items():
            assert entry[key] == pytest.approx(value), key
        assert not set(KEPT) & set(entry)  # nothing is kept or masked outside GD2PO


def test_single_reward_logs_no_conflict(tiny_model_path, tmp_path):
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=parity_reward,
        args=toy_config(tmp_path, max_steps=1),
        train_dataset=toy_dataset(),
    )
    trainer.train()
    assert not any(key.startswith("conflict/") for key in trainer.state.log_history[0])
