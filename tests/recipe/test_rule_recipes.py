"""The CPU recipes of GDPO's published follow-ups (docs/rules.md): each is the tool-calling GDPO recipe with its rule's
aggregation and its own output names, and parses into a GDPOConfig that names that rule. Each trains two steps in
tests/cli/test_cpu_runs.py (every CPU recipe does)."""

from pathlib import Path

import pytest
import yaml

from gdpo_trl.core.config import AGGREGATIONS
from gdpo_trl.core.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
RULE_RECIPES = ("mo_grpo", "saw_gdpo", "saw_grpo", "odrpo")


def _load(path):
    return yaml.safe_load((ROOT / path).read_text())


@pytest.mark.parametrize("rule", RULE_RECIPES)
def test_each_rule_recipe_is_the_gdpo_tool_recipe_with_its_aggregation(rule):
    gdpo, twin = _load("recipes/cpu/toolcall_gdpo/config.yaml"), _load(f"recipes/cpu/toolcall_{rule}/config.yaml")
    differing = {key for key in gdpo.keys() | twin.keys() if gdpo.get(key) != twin.get(key)}
    assert differing == {"multi_objective_aggregation", "output_dir", "run_name"}
    assert twin["multi_objective_aggregation"] == rule and rule in AGGREGATIONS and rule in RULES
    slug = rule.replace("_", "-")
    assert twin["output_dir"] == f"outputs/cpu-toolcall-{slug}" and twin["run_name"] == f"cpu-toolcall-{slug}"


@pytest.mark.parametrize("rule", RULE_RECIPES)
def test_each_rule_recipe_parses_as_gdpo_train_reads_it(rule):
    from gdpo_trl.recipe.arguments import parse_args

    _, training, _ = parse_args(["--config", str(ROOT / f"recipes/cpu/toolcall_{rule}/config.yaml")])
    assert training.multi_objective_aggregation == rule and training.reward_weights is None


def test_rule_options_parse_from_the_command_line_and_bad_ones_name_the_field():
    from gdpo_trl import GDPOConfig
    from gdpo_trl.core.errors import InputError

    config = GDPOConfig(
        "out",
        multi_objective_aggregation="odrpo",
        saw_offsets='{"tool_correctness": 3}',
        odrpo_thresholds='{"tool_correctness": [-2, 0, 2]}',
        report_to="none",
    )
    assert config.saw_offsets == {"tool_correctness": 3} and config.odrpo_thresholds == {
        "tool_correctness": [-2, 0, 2]
    }
    with pytest.raises(InputError, match=r"odrpo_thresholds\['tool_correctness'\]"):
        GDPOConfig("out", odrpo_thresholds={"tool_correctness": 2}, report_to="none")
    with pytest.raises(InputError, match=r"saw_offsets\['x'\]"):
        GDPOConfig("out", saw_offsets={"x": "three"}, report_to="none")
    with pytest.raises(InputError, match="gdpo_batch_norm=false has no effect"):
        GDPOConfig("out", multi_objective_aggregation="saw_gdpo", gdpo_batch_norm=False, report_to="none")
    with pytest.raises(InputError, match="mo_grpo"):
        GDPOConfig("out", multi_objective_aggregation="rdpo", report_to="none")
