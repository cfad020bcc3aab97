"""A reward that applies to no row of a batch (None for every completion): the run trains on, says so once, prints its
step lines, logs ``rewards/<name>/applied`` as 0, and the other rewards train exactly as without it.

Before: the console's step line crashed on the None TRL logs for such a reward's mean, after one step, unsaved.
"""

import math
import statistics
import warnings

import pytest

from gdpo_trl import GDPOTrainer
from gdpo_trl.cli.console import compact_line, use_compact_progress
from gdpo_trl.core.diagnostics import applied_fraction
from gdpo_trl.rewards.conditioned import conditioned
from gdpo_trl.trainer.reward_checks import CheckedAsyncReward, CheckedReward, check_reward_funcs
from tests.helpers.bad_rewards import never_applies_async_reward, never_applies_reward
from tests.helpers.recorders import Recorder
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset

EPS = 1e-4  # GDPO's epsilon in both normalizations


def hand_gdpo(rows: list[list[float]], weights: list[float], group: int) -> list[float]:
    """GDPO written out with Python floats: per reward within each group ``(r - mean) / (std + eps)`` over the values
    that are there (Bessel std; a reward with fewer than 2 values in a group adds nothing there), weighted sum, then
    ``(x - mean) / (std + eps)`` over the batch."""
    summed = [0.0] * len(rows)
    for start in range(0, len(rows), group):
        for k, weight in enumerate(weights):
            present = [(i, rows[i][k]) for i in range(start, start + group) if not math.isnan(rows[i][k])]
            if len(present) < 2:
                continue
            values = [v for _, v in present]
            mean, std = statistics.mean(values), statistics.stdev(values)
            for i, value in present:
                summed[i] += weight * (value - mean) / (std + EPS)
    mean, std = statistics.mean(summed), statistics.stdev(summed)
    return [(x - mean) / (std + EPS) for x in summed]


def test_a_reward_absent_from_every_row_trains_on(tiny_model_path, tmp_path, monkeypatch, capsys):
    recorder = Recorder(monkeypatch)
    funcs = [parity_reward, never_applies_reward, length_mod_reward]
    weights = [1.0, 1.0, 0.5]
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=funcs,
        args=toy_config(tmp_path, reward_weights=weights),
        train_dataset=toy_dataset(),
    )
    use_compact_progress(trainer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    absent = [w for w in caught if "'never_applies_reward' returned None/NaN for all 8 completions" in str(w.message)]
    assert len(absent) == 1  # two batches, one warning
    assert trainer.state.global_step == 2

    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logs) == 2
    recorder.assert_batches(2)
    out = capsys.readouterr().out
    for step, (entry, rewards, ours) in enumerate(zip(logs, recorder.rewards, recorder.ours, strict=True), start=1):
        assert entry["rewards/never_applies_reward/mean"] is None  # what TRL logs; the step line used to crash here
        assert entry["rewards/never_applies_reward/applied"] == 0.0
        assert entry["rewards/never_applies_reward/advantage_share"] == 0.0
        assert entry["rewards/never_applies_reward/frac_zero_std"] == 1.0  # no signal in any group
        assert entry["rewards/parity_reward/applied"] == 1.0
        assert entry["rewards/length_mod_reward/applied"] == pytest.approx(5 / 8)  # None for rows 0, 3, 6 of 8
        shares = entry["rewards/parity_reward/advantage_share"] + entry["rewards/length_mod_reward/advantage_share"]
        assert shares == pytest.approx(1.0)
        assert f"step {step}/2 | parity n/a" not in out and f"step {step}/2 | parity " in out
        assert compact_line(entry, step, 2) in out and "never_applies n/a" in compact_line(entry, step, 2)
        # The other rewards' advantages are GDPO's on them alone, computed by hand.
        others = [[row[0], row[2]] for row in rewards.tolist()]
        assert ours.abs().sum() > 0
        assert ours.tolist() == pytest.approx(hand_gdpo(others, [1.0, 0.5], 4), abs=1e-5)


def test_applied_fraction_counts_rows_with_a_value():
    import torch

    nan = float("nan")
    rewards = torch.tensor([[1.0, nan, 0.0], [0.0, nan, nan], [nan, nan, 2.0], [1.0, nan, nan]])
    assert applied_fraction(rewards).tolist() == [0.75, 0.0, 0.5]
    steps = torch.full((2, 2, 3), nan)
    steps[0, 0, 1] = 1.0  # a process reward's step in row 0 only
    assert applied_fraction(steps).tolist() == [0.5, 0.0]


CALL = {"prompts": ["p"] * 2, "completions": ["a", "b"]}


@pytest.mark.parametrize("kind", ["plain", "async", "conditioned"])
def test_every_reward_kind_warns_once_when_it_applies_to_no_row(kind):
    import asyncio

    if kind == "async":
        checked = CheckedAsyncReward(never_applies_async_reward, timeout=30)
        call, name = lambda: asyncio.run(checked(**CALL)), "never_applies_async_reward"
    else:
        func = conditioned(never_applies_reward, parity_reward) if kind == "conditioned" else never_applies_reward
        checked = check_reward_funcs([func], timeout=30)[0]
        call = lambda: checked(**CALL)  # noqa: E731
        name = "never_applies_reward_if_parity_reward" if kind == "conditioned" else "never_applies_reward"
    with pytest.warns(UserWarning, match=f"'{name}' returned None/NaN for all 2 completions"):
        assert call() == [None, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call()


def test_rewards_trl_adds_after_the_check_are_checked_too(tiny_model_path, tmp_path, monkeypatch):
    """TRL appends an environment's ``get_reward`` to ``reward_funcs`` inside its constructor (named after the
    environment class), after GDPOTrainer wrapped the recipe's rewards: it is wrapped too, under TRL's name."""
    from trl import GRPOTrainer

    init = GRPOTrainer.__init__

    def append_like_an_environment(self, *args, **kwargs):
        init(self, *args, **kwargs)

        def get_reward(environments=None, **kwargs):
            return [None] * len(kwargs["completions"])

        self.reward_funcs.append(get_reward)
        self.reward_func_names.append("ShopEnvironment")

    monkeypatch.setattr(GRPOTrainer, "__init__", append_like_an_environment)
    trainer = GDPOTrainer(
        tiny_model_path, reward_funcs=[parity_reward], args=toy_config(tmp_path), train_dataset=toy_dataset()
    )
    assert all(isinstance(func, CheckedReward) for func in trainer.reward_funcs)
    assert trainer.reward_funcs[1].__name__ == "ShopEnvironment"
    with pytest.warns(UserWarning, match="'ShopEnvironment' returned None/NaN"):
        trainer.reward_funcs[1](**CALL)
