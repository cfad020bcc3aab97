"""``RULES`` and ``rule_advantages``: every rule by name equals its function, options are checked, and a run's
settings name the rule TRL's spelling means."""

import pytest
import torch

from gdpo_trl.core import RULES, rule_advantages, rule_for_settings
from gdpo_trl.core.advantages import gdpo_advantages, grpo_advantages
from gdpo_trl.core.gd2po import gd2po_advantages

torch.manual_seed(0)
REWARDS = torch.randint(0, 3, (16, 3)).float()
REWARDS[3, 1] = float("nan")  # a reward that does not apply
WEIGHTS = [1.0, 0.5, 2.0]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("grpo", grpo_advantages(REWARDS, WEIGHTS, 4, scale="group")),
        ("grpo_no_std", grpo_advantages(REWARDS, WEIGHTS, 4, scale="none")),
        ("gdpo", gdpo_advantages(REWARDS, WEIGHTS, 4)),
        ("gdpo_no_batch_norm", gdpo_advantages(REWARDS, WEIGHTS, 4, batch_norm=False)),
        ("gd2po", gd2po_advantages(REWARDS, WEIGHTS, 4)[0]),
    ],
)
def test_each_rule_by_name_is_its_function(name, expected):
    got = rule_advantages(name, REWARDS, WEIGHTS, 4)
    assert got.shape == (16,)
    assert torch.equal(got, expected)
    assert torch.equal(rule_advantages(RULES[name], REWARDS, WEIGHTS, 4), expected)


def test_worked_example_by_name():
    # The paper's example: GRPO gives (1,0) and (0,1) one advantage, GDPO (without the batch step) too in the sum,
    # but 0 against the group's (1,1) = +2t and (0,0) = -2t; GRPO's batch scale divides by the batch std instead.
    example = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    assert rule_advantages("grpo_no_std", example, [1, 1], 4).tolist() == [0.0, 0.0, 1.0, -1.0]
    batch = rule_advantages("grpo", example, [1, 1], 4, scale="batch")
    std = (torch.tensor([1.0, 1.0, 2.0, 0.0]).std()).item()
    assert batch.tolist() == pytest.approx([0.0, 0.0, 1 / (std + 1e-4), -1 / (std + 1e-4)], abs=1e-6)


def test_every_rule_returns_finite_zero_on_unscorable_rows():
    rewards = REWARDS.clone()
    rewards[4] = float("nan")
    for name in RULES:
        got = rule_advantages(name, rewards, WEIGHTS, 4)
        assert torch.isfinite(got).all(), name
        assert got[4] == 0, name


def test_unknown_rule_and_option_are_named():
    with pytest.raises(ValueError, match=r"Unknown advantage rule 'gdp0'.*'gdpo'"):
        rule_advantages("gdp0", REWARDS, WEIGHTS, 4)
    with pytest.raises(ValueError, match=r"Rule 'gdpo' takes no option \['scale'\]"):
        rule_advantages("gdpo", REWARDS, WEIGHTS, 4, scale="none")


@pytest.mark.parametrize(
    ("aggregation", "k", "settings", "expected"),
    [
        ("normalize_then_sum", 3, {}, ("gdpo", {})),
        ("normalize_then_sum", 3, {"gdpo_batch_norm": False}, ("gdpo_no_batch_norm", {})),
        ("normalize_then_sum", 1, {"scale_rewards": "batch"}, ("grpo", {"scale": "batch"})),
        ("sum_then_normalize", 3, {}, ("grpo", {"scale": "group"})),
        ("sum_then_normalize", 3, {"scale_rewards": "none"}, ("grpo_no_std", {})),
        ("gd2po", 2, {}, ("gd2po", {})),
        ("gd2po", 1, {}, ("grpo", {"scale": "group"})),
    ],
)
def test_settings_name_a_rule(aggregation, k, settings, expected):
    assert rule_for_settings(aggregation, k, **settings) == expected


def test_core_imports_without_torch_until_a_rule_is_asked_for():
    import subprocess
    import sys

    code = "import sys, gdpo_trl.core.errors, gdpo_trl.core; assert 'torch' not in sys.modules; gdpo_trl.core.RULES"
    subprocess.run([sys.executable, "-c", code], check=True)
