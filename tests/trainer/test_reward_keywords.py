"""The reward wrapper is a drop-in: every call TRL makes, with any subset of its keywords, reaches the reward
(TRL calls an environment-owned reward with ``environments=`` alone, and the wrapper read
``kwargs["completions"]``: ``KeyError: 'completions'`` on GDPOTrainer, not on GRPOTrainer)."""

import pytest

from gdpo_trl import GDPOTrainer
from gdpo_trl.models.tiny import build_model
from gdpo_trl.tasks.agent_task import MIX_FACTORIES, ArithEnv, ShopEnv, build_tokenizer, load_agent_mix
from gdpo_trl.trainer.reward_checks import CheckedReward, RewardOutputError
from tests.helpers.toy import toy_config


def two_values(**kwargs):
    return [1.0, 0.0]


KEYWORDS = {
    "prompts": ["p", "q"],
    "completions": ["a", "b"],
    "completion_ids": [[1], [2]],
    "environments": [object(), object()],
}


@pytest.mark.parametrize("keys", [(), ("environments",), ("prompts",), ("completion_ids",), tuple(KEYWORDS)])
def test_any_subset_of_trls_keywords_is_accepted(keys):
    checked = CheckedReward(two_values)
    assert checked(**{key: KEYWORDS[key] for key in keys}) == [1.0, 0.0]


def test_the_count_is_still_checked_against_the_keyword_given():
    with pytest.raises(RewardOutputError, match="returned 2 values for 3 completions"):
        CheckedReward(two_values)(environments=[1, 2, 3])


def test_environment_owned_reward_of_mixed_environments_on_gdpo_trainer(tmp_path):
    """Two environments, one owning its reward, no reward_funcs: TRL adds the owner's ``get_reward`` as the only
    reward; called with ``environments=`` alone, it scores the owner's rollouts and gives None for the other's."""
    tokenizer = build_tokenizer()
    build_model(tokenizer, "tiny", seed=0).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    trainer = GDPOTrainer(
        str(tmp_path / "model"),
        args=toy_config(tmp_path / "out", max_tool_calling_iterations=1, per_device_train_batch_size=4),
        train_dataset=load_agent_mix(2, seed=0),
        environment_factory=MIX_FACTORIES,
    )
    assert trainer.reward_func_names == ["ShopEnv"]
    shop = ShopEnv()
    shop.calls, shop.failures = 4, 1
    assert trainer.reward_funcs[0](environments=[shop, ArithEnv()]) == [0.75, None]
