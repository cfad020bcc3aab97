"""The scale studies' GRPO-arm recipes (H4, H6c in docs/results/README.md) are the recipes they name with only the
stated changes: one reward weighed 6 (for a method that sums raw rewards, the same as that reward's values times 6),
and the method and output fields, which gdpo compare sets per arm anyway. Anything else would make the arms differ in
more than the scale."""

import pytest
import yaml

from tests.helpers.studies import RESULTS, ROOT

# study recipe -> (the recipe it scales, the weights it sets)
SCALED = {
    "scale6_correctness.yaml": ("recipes/cpu/gdpo/config.yaml", [1.0, 6.0, 1.0]),
    "agent_scale6.yaml": ("recipes/cpu/agent_gdpo/config.yaml", [6.0, 1.0, 1.0]),
}
PER_ARM = {"multi_objective_aggregation", "output_dir", "run_name"}  # set by gdpo compare or naming the outputs


@pytest.mark.parametrize("study", sorted(SCALED))
def test_a_scale_study_changes_only_one_rewards_weight(study):
    base_path, weights = SCALED[study]
    scaled = yaml.safe_load((RESULTS / study).read_text())
    base = yaml.safe_load((ROOT / base_path).read_text())
    assert scaled.pop("reward_weights") == weights and "reward_weights" not in base
    assert len(weights) == len(base["reward_funcs"])
    changed = {key for key in scaled.keys() | base.keys() if scaled.get(key) != base.get(key)}
    # ddp_find_unused_parameters only matters with several processes; the H4 recipe predates it in the demo recipe.
    assert changed - {"ddp_find_unused_parameters"} <= PER_ARM, changed
