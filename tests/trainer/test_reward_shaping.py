"""Conditioned rewards (Eq. 8), the length reward, reward-weight schedules and GDPO's ablation switch."""

import math
from functools import partial

import pytest
import torch

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.advantages import gdpo_advantages, grpo_advantages
from gdpo_trl.core.config_checks import check_weight_schedule
from gdpo_trl.rewards import get_reward_funcs, length_reward
from gdpo_trl.rewards.conditioned import apply_reward_conditions, conditioned, parse_condition
from gdpo_trl.trainer import scheduled_weights
from tests.helpers.recorders import Recorder
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset

COMPLETIONS = ["<answer>4</answer>", "<answer>5</answer>", "<answer>4</answer>", "x"]
IDS = [[1] * 3, [1] * 3, [1] * 9, [1] * 2]
ANSWERS = ["4"] * 4


def test_length_reward_counts_completion_ids():
    assert length_reward(COMPLETIONS, completion_ids=IDS, max_tokens=3) == [1.0, 1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="completion_ids"):
        length_reward(COMPLETIONS)


def test_conditioned_pays_only_where_the_condition_is_met():
    from gdpo_trl.rewards.gsm8k import correctness_reward

    reward = conditioned(partial(length_reward, max_tokens=3), on=correctness_reward)
    assert reward.__name__ == "length_reward_if_correctness_reward"
    # correct+short, wrong+short, correct+long, no answer+short
    assert reward(completions=COMPLETIONS, completion_ids=IDS, answer=ANSWERS) == [1.0, 0.0, 0.0, 0.0]
    loose = conditioned(partial(length_reward, max_tokens=3), on=correctness_reward, threshold=0.0)
    assert loose(completions=COMPLETIONS, completion_ids=IDS, answer=ANSWERS) == [1.0, 1.0, 0.0, 1.0]


def test_conditioned_keeps_none_and_treats_a_missing_condition_as_unmet():
    reward = conditioned(lambda completions, **kw: [1.0, None, 1.0], on=lambda completions, **kw: [None, 1.0, 1.0])
    assert reward(completions=["a", "b", "c"]) == [0.0, None, 1.0]


def test_yaml_form_and_python_form_build_the_same_reward():
    names = ["correctness", "length"]
    yaml_funcs = apply_reward_conditions(
        get_reward_funcs(names, {"length": {"max_tokens": 3}}), {"length": "correctness"}
    )
    funcs = get_reward_funcs(names, {"length": {"max_tokens": 3}})
    python_funcs = [funcs[0], conditioned(funcs[1], on=funcs[0], threshold=1.0)]
    batch = dict(completions=COMPLETIONS, completion_ids=IDS, answer=ANSWERS)
    assert [f.__name__ for f in yaml_funcs[1:]] == [python_funcs[1].__name__]
    assert [f(**batch) for f in yaml_funcs] == [f(**batch) for f in python_funcs]


@pytest.mark.parametrize(
    "conditions, message",
    [
        ({"lenght": "correctness"}, "names 'lenght', which is not one of the reward functions"),
        ({"length": "corectness"}, "unknown reward 'corectness'"),
        ({"length": {"on": "correctness", "treshold": 1}}, "Bad reward condition"),
    ],
)
def test_bad_conditions_are_named(conditions, message):
    with pytest.raises(ValueError, match=message):
        apply_reward_conditions(get_reward_funcs(["correctness", "length"]), conditions)


def test_parse_condition_forms():
    assert parse_condition("correctness") == ("correctness", 1.0)
    assert parse_condition({"on": "correctness", "threshold": 0.5}) == ("correctness", 0.5)


def test_conditions_in_config_and_in_python_train_identically(tiny_model_path, tmp_path):
    """The YAML field (applied by the trainer) and the Python wrapper give the same rewards and advantages."""
    results = []
    for use_field in (True, False):
        monkeypatch = pytest.MonkeyPatch()
        recorder = Recorder(monkeypatch)
        gate = parity_reward
        if use_field:
            funcs, extra = (
                [parity_reward, length_mod_reward],
                {"reward_conditions": {"length_mod_reward": "parity_reward"}},
            )
        else:
            funcs, extra = [parity_reward, conditioned(length_mod_reward, on=gate)], {}
        trainer = GDPOTrainer(
            tiny_model_path,
            reward_funcs=funcs,
            args=toy_config(tmp_path / str(use_field), **extra),
            train_dataset=toy_dataset(),
        )
        trainer.train()
        monkeypatch.undo()
        recorder.assert_batches(2)
        assert trainer.reward_func_names == ["parity_reward", "length_mod_reward_if_parity_reward"]
        results.append((recorder.rewards, recorder.ours))
    (rewards_a, adv_a), (rewards_b, adv_b) = results
    for a, b in zip(rewards_a, rewards_b, strict=True):
        assert torch.equal(torch.nan_to_num(a, -1.0), torch.nan_to_num(b, -1.0))
        # The conditioned reward is 0 wherever the parity reward is 0.
        assert (torch.nan_to_num(a[:, 1], 0.0)[a[:, 0] == 0] == 0).all()
    for a, b in zip(adv_a, adv_b, strict=True):
        torch.testing.assert_close(a, b)


def test_schedule_weights_at_first_middle_and_last_step():
    start, final = torch.tensor([1.0, 0.0]), torch.tensor([0.5, 2.0])
    assert scheduled_weights(start, final, 0, 11).tolist() == [1.0, 0.0]
    assert scheduled_weights(start, final, 5, 11).tolist() == [0.75, 1.0]
    assert scheduled_weights(start, final, 10, 11).tolist() == [0.5, 2.0]


@pytest.mark.parametrize(
    "start, final, k, message",
    [
        (None, [1.0, 1.0, 1.0], 2, "3 weights for 2 reward functions"),
        ([1.0], [1.0, 1.0], None, "reward_weights has 1 weights but reward_weights_final has 2"),
        ([1.0, -1.0], [1.0, 1.0], None, "Reward weight 1 would change sign from -1.0 to 1.0"),
        (None, [0.0, 0.0], None, "all zero"),
    ],
)
def test_schedule_validation(start, final, k, message):
    with pytest.raises(ValueError, match=message):
        check_weight_schedule(start, final, k)


def test_schedule_validated_when_config_is_built(tmp_path):
    with pytest.raises(ValueError, match="change sign"):
        toy_config(tmp_path, reward_weights=[1.0, 1.0], reward_weights_final=[1.0, -2.0])


def test_schedule_trains_with_moving_weights(tiny_model_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, length_mod_reward],
        args=toy_config(tmp_path, max_steps=3, reward_weights=[1.0, 0.0], reward_weights_final=[1.0, 2.0]),
        train_dataset=toy_dataset(),
    )
    trainer.train()
    logged = [e["reward_weights/length_mod_reward"] for e in trainer.state.log_history if "reward" in e]
    assert logged == [0.0, 1.0, 2.0]
    recorder.assert_batches(3)
    for rewards, ours, w in zip(recorder.rewards, recorder.ours, logged, strict=True):
        torch.testing.assert_close(ours, gdpo_advantages(rewards, [1.0, w], 4))


def test_gdpo_without_batch_norm_ablation(tiny_model_path, tmp_path, monkeypatch):
    recorder = Recorder(monkeypatch)
    GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, length_mod_reward],
        args=toy_config(tmp_path, gdpo_batch_norm=False),
        train_dataset=toy_dataset(),
    ).train()
    recorder.assert_batches(2)
    for rewards, ours in zip(recorder.rewards, recorder.ours, strict=True):
        torch.testing.assert_close(ours, gdpo_advantages(rewards, [1, 1], 4, batch_norm=False))


def test_ablation_hand_values():
    """GRPO, GRPO w/o std, GDPO and GDPO w/o batch norm on the paper's 2x4 example, by hand."""
    rewards = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    s = math.sqrt(2 / 3)
    t = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    assert grpo_advantages(rewards, [1, 1], 4, scale="none").tolist() == [0.0, 0.0, 1.0, -1.0]
    assert grpo_advantages(rewards, [1, 1], 4).tolist() == pytest.approx([0, 0, 1 / (s + 1e-4), -1 / (s + 1e-4)])
    assert gdpo_advantages(rewards, [1, 1], 4, batch_norm=False).tolist() == pytest.approx([0, 0, 2 * t, -2 * t])
    b = math.sqrt(8 * t * t / 3) + 1e-4
    assert gdpo_advantages(rewards, [1, 1], 4).tolist() == pytest.approx([0, 0, 2 * t / b, -2 * t / b])
