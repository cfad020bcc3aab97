"""The strict GSM8K recipes (recipes/cpu/qwen_gdpo_strict, recipes/Qwen2.5-1.5B-Instruct/gdpo_strict): their
parity recipes but for the rewards, which pay the layout only for written work and, with the integer reward, only
where the answer is correct (Eq. 8); the parity recipes keep the paper's three rewards."""

from pathlib import Path

import pytest
import yaml

from gdpo_trl.recipe.arguments import build_reward_funcs, parse_args
from gdpo_trl.rewards.conditioned import apply_reward_conditions

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [
    (ROOT / "recipes/cpu/qwen_gdpo/config.yaml", ROOT / "recipes/cpu/qwen_gdpo_strict/config.yaml"),
    (ROOT / "recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml", ROOT / "recipes/Qwen2.5-1.5B-Instruct/gdpo_strict/config.yaml"),
]  # fmt: skip
WORKED = "<think>\nShe has 30 - 2 = 28 left.\n28 / 2 = 14 bags.\n</think>\n<answer>14</answer>"
ONE_LINE = "<think>\nJean has lollipops.\n</think>\n<answer>14</answer>"
WRONG = WORKED.replace("<answer>14", "<answer>15")


def _load(path):
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize(("parity", "strict"), PAIRS, ids=["cpu-qwen", "qwen-1.5b"])
def test_a_strict_recipe_is_its_parity_recipe_but_for_the_rewards(parity, strict):
    parity, strict = _load(parity), _load(strict)
    differing = {key for key in parity.keys() | strict.keys() if parity.get(key) != strict.get(key)}
    assert differing <= {"reward_funcs", "reward_conditions", "reward_kwargs", "output_dir", "run_name"}
    assert sorted(parity["reward_funcs"]) == ["correctness", "format", "integer"]  # the paper's, untouched
    assert "reward_conditions" not in parity
    assert [name.replace("reasoning_format", "format") for name in strict["reward_funcs"]] == parity["reward_funcs"]
    assert strict["reward_conditions"] == {"reasoning_format": "correctness", "integer": "correctness"}
    assert "reward_kwargs" not in strict  # the package's rules: reasoning_format builds on them


@pytest.mark.parametrize("strict", [s for _, s in PAIRS], ids=["cpu-qwen", "qwen-1.5b"])
def test_what_its_rewards_pay(strict):
    script_args, training_args, _ = parse_args(["--config", str(strict), "--use_cpu", "true"])
    funcs = apply_reward_conditions(build_reward_funcs(script_args), training_args.reward_conditions)
    names = {func.__name__: func for func in funcs}
    assert set(names) == {
        "correctness_reward",
        "integer_reward_if_correctness_reward",
        "reasoning_format_reward_if_correctness_reward",
    }
    completions, answer = [WORKED, ONE_LINE, WRONG], ["14", "14", "14"]
    paid = {name: func(completions=completions, answer=answer) for name, func in names.items()}
    assert paid["correctness_reward"] == [1.0, 1.0, 0.0]
    assert paid["reasoning_format_reward_if_correctness_reward"] == [1.0, 0.0, 0.0]  # no work, or wrong: 0
    assert paid["integer_reward_if_correctness_reward"] == [1.0, 1.0, 0.0]  # an integer pays only when right
