"""Rewards on a wider scale, for piloting the studies that put one reward on 0..6 (H4, H6c).

Those studies gave their GRPO arms ``reward_weights`` of 6 on the widened reward, which is what summing a 0..6 reward
computes, and their GDPO arm weight 1 (GDPO's group normalization cancels a reward's raw scale). A pilot compares every
rule on one set of weights, so it takes the reward itself on 0..6 with weight 1: GRPO then sums 6 x the 0/1 value,
as the study's GRPO arms did, and GDPO normalizes it away, as the study's GDPO arm did.
"""

from gdpo_trl.rewards.agent import agent_success as _agent_success
from gdpo_trl.rewards.gsm8k import correctness_reward as _correctness_reward

SCALE = 6.0


def correctness_reward(completions, **kwargs):
    """The GSM8K correctness reward times 6 (H4's 0..6 correctness)."""
    return [None if r is None else SCALE * r for r in _correctness_reward(completions, **kwargs)]


def agent_success(completions, **kwargs):
    """The agent's success reward times 6 (H6c's 0..6 success)."""
    return [None if r is None else SCALE * r for r in _agent_success(completions, **kwargs)]


correctness_reward.reward_range = (0.0, SCALE)
agent_success.reward_range = (0.0, SCALE)
