"""``gdpo pilot``'s figures against values derived by hand on a fixed batch, its plan, and the command end to end."""

import json
import math
import statistics

import pytest
import torch

from gdpo_trl.core.rules import RULES
from gdpo_trl.results.pilot import (
    LIKELY,
    NO_SIGNAL,
    SLIGHT,
    UNLIKELY,
    gaming_risk,
    pilot_figures,
    plan,
    verdict,
)
from gdpo_trl.results.stats import seeds_for_power

# Three groups of G=4, rewards A and B (both 0/1):
# - group 1, the paper's example: (1,0) (0,1) (1,1) (0,0);
# - group 2: A = (1,0,0,0), B = (0,1,1,0): sums (1,1,1,0), so GRPO ties rows 0-2 while GDPO tells row 0 apart;
# - group 3: constant (1,1): no spread, no signal.
BATCH = torch.tensor(
    [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1], [0, 1], [0, 0], [1, 1], [1, 1], [1, 1], [1, 1]],
    dtype=torch.float64,
)
S3 = math.sqrt(3)
# By hand, eps aside. GRPO: group 1 sums (1,1,2,0), mean 1, std sqrt(2/3) -> (0, 0, 1.2247, -1.2247); group 2 sums
# (1,1,1,0), mean 0.75, std 0.5 -> (0.5, 0.5, 0.5, -1.5).
GRPO = [0, 0, 1 / math.sqrt(2 / 3), -1 / math.sqrt(2 / 3), 0.5, 0.5, 0.5, -1.5]
# GDPO before its batch step (an affine map, which keeps the order and the correlation): group 1 each reward
# +-0.5 / sqrt(1/3) = +-sqrt(3)/2, sums (0, 0, sqrt 3, -sqrt 3); group 2: A (1.5, -0.5, -0.5, -0.5) (mean 0.25,
# std 0.5), B (-sqrt3/2, +sqrt3/2, +sqrt3/2, -sqrt3/2) (mean 0.5, std sqrt(1/3)).
GDPO = [0, 0, S3, -S3, 1.5 - S3 / 2, -0.5 + S3 / 2, -0.5 + S3 / 2, -0.5 - S3 / 2]


@pytest.fixture(scope="module")
def figures():
    return pilot_figures(BATCH, ["A", "B"], [1.0, 1.0], 4)


def test_zero_spread_and_live_groups(figures):
    assert figures["rewards"]["A"]["zero_spread_groups"] == pytest.approx(1 / 3)
    assert figures["rewards"]["B"]["zero_spread_groups"] == pytest.approx(1 / 3)
    assert figures["groups_with_spread"] == pytest.approx(2 / 3)
    assert figures["rewards"]["A"]["mean"] == pytest.approx(7 / 12)
    assert (figures["rewards"]["A"]["min"], figures["rewards"]["A"]["max"]) == (0.0, 1.0)


def test_gdpo_against_grpo_by_hand(figures):
    gdpo = figures["rules"]["gdpo"]
    assert gdpo["advantage_correlation"] == pytest.approx(statistics.correlation(GDPO, GRPO), abs=1e-4)
    assert gdpo["groups_ranked_differently"] == pytest.approx(1 / 2)  # group 2 only: rows 0-2 tied by GRPO
    assert gdpo["collapsed_pairs"] == pytest.approx(2 / 12)  # (0,1) and (0,2) of group 2, of 6 pairs x 2 live groups
    assert gdpo["discordant_pairs"] == 0
    # Against itself everything agrees.
    grpo = figures["rules"]["grpo"]
    assert grpo["advantage_correlation"] == pytest.approx(1.0)
    assert grpo["groups_ranked_differently"] == 0 and grpo["collapsed_pairs"] == 0


def test_every_rule_is_compared(figures):
    assert set(figures["rules"]) == set(RULES)
    for name, found in figures["rules"].items():
        if found["verdict"] == "not applied":  # without reward functions no reward declares its range
            assert "declares no range" in found["reason"], name
            continue
        assert sum(found["advantage_share"].values()) == pytest.approx(1.0), name


def test_a_rule_given_its_options_is_compared():
    options = {name: {"thresholds": [[1.0], [1.0]]} for name in RULES if "thresholds" in RULES[name].options}
    found = pilot_figures(BATCH, ["A", "B"], [1.0, 1.0], 4, options)
    assert all(f["verdict"] != "not applied" for f in found["rules"].values())


def test_the_verdict_rule():
    assert verdict(0.97, 0.05, 1.0) == UNLIKELY
    assert verdict(0.93, 0.05, 1.0) == SLIGHT
    assert verdict(0.97, 0.12, 1.0) == SLIGHT
    assert verdict(0.89, 0.0, 1.0) == LIKELY
    assert verdict(0.99, 0.15, 1.0) == LIKELY
    assert verdict(None, 0.0, 1.0) == LIKELY  # one rule constant where the other is not
    assert verdict(None, 0.0, 0.0) == NO_SIGNAL


def test_gaming_risk_by_hand():
    # "format" pays on 3 of 4 completions, "correct" on 1: the hardest is correct; format pays while correct fails on
    # rows 1 and 2: 2 of 4 completions, 2 of format's 3 payments.
    rewards = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    risk = gaming_risk(rewards, ["format", "correct"])
    assert risk["hardest"] == "correct"
    assert risk["easier"]["format"] == {"pays_while_hardest_fails": 0.5, "of_its_payments": pytest.approx(2 / 3)}


def test_the_plans_seed_count():
    summary = {
        "a": {"mean": 0.5, "std": 0.5, "min": 0.0, "max": 1.0},
        "b": {"mean": 0.2, "std": 0.4, "min": 0.0, "max": 1.0},
        "flat": {"mean": 1.0, "std": 0.0, "min": 1.0, "max": 1.0},  # never varies: left out of Holm's count
    }
    found = plan(summary, 0.03, seed_sd=0.06)
    assert found["holm_rewards"] == 2
    # Normal approximation by hand: 2 (z_{1 - 0.05/4} + z_0.8)^2 (0.06/0.03)^2 = 2 (2.2414 + 0.8416)^2 * 4 = 76.0; the
    # t test needs a little more.
    assert 76 <= found["seeds_per_arm"] <= 79
    assert found["seeds_per_arm"] == seeds_for_power(0.03, 0.06, rewards=2)
    # A reward on 0..6 is planned on its own scale: difference and SD both times 6, the same count.
    wide = plan({"c": {"mean": 3.0, "std": 2.0, "min": 0.0, "max": 6.0}}, 0.03, seed_sd=0.06)
    assert wide["rewards"]["c"]["difference"] == pytest.approx(0.18)
    assert wide["seeds_per_arm"] == seeds_for_power(0.03, 0.06, rewards=1)


def test_the_plan_assumes_the_spread_gdpo_compare_assumes():
    """One between-seed spread for both commands' plans: the committed seed studies' (recomputed by
    tests/results/test_seed_power.py)."""
    from gdpo_trl.results.seed_power import STUDY_SEED_SD

    summary = {"a": {"mean": 0.5, "std": 0.5, "min": 0.0, "max": 1.0}}
    assert plan(summary)["seed_sd"] == STUDY_SEED_SD
    assert plan(summary)["seeds_per_arm"] == seeds_for_power(0.03, STUDY_SEED_SD, rewards=1)


def test_the_command_on_the_demo_recipe(tmp_path, capsys):
    from gdpo_trl.cli.pilot import main

    main(["--config", "cpu/gdpo", "--prompts", "3", "--pilot_dir", str(tmp_path / "p"), "--num_generations", "4"])
    out = capsys.readouterr().out
    assert "Verdict: GDPO's advantages correlate" in out
    report = json.loads((tmp_path / "p" / "pilot.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "p" / "completions.jsonl").read_text().splitlines()]
    assert len(rows) == report["completions"] == 12
    # Every figure recomputes from the kept completions.
    names = report["settings"]["reward_names"]
    matrix = torch.tensor([[row["rewards"][n] for n in names] for row in rows], dtype=torch.float64)
    again = pilot_figures(matrix, names, report["settings"]["reward_weights"], 4)
    assert again["rules"]["gdpo"]["advantage_correlation"] == pytest.approx(
        report["rules"]["gdpo"]["advantage_correlation"]
    )
    assert (tmp_path / "p" / "pilot.png").stat().st_size > 10_000
    assert "## Gaming risk" in (tmp_path / "p" / "pilot.md").read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--prompts", "3"], "gdpo pilot needs --config RECIPE"),
        (["--config", "cpu/gdpo", "--prompts", "0"], "--prompts must be at least 1"),
        (["--config", "cpu/gdpo", "--difference", "3"], "--difference must be in (0, 1]"),
        (["--config", "cpu/gdpo", "--num_generationz", "4"], "num_generationz"),
    ],
)
def test_bad_input_is_one_line_before_torch(argv, message):
    import subprocess
    import sys

    code = (
        "import sys\nfrom gdpo_trl.cli.pilot import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert message in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr  # the assertion after main ran: torch never loaded
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def shipped_cpu_recipes():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "recipes" / "cpu"
    return sorted(p.name for p in root.iterdir() if (p / "config.yaml").exists())


@pytest.mark.parametrize("name", shipped_cpu_recipes())
def test_every_shipped_cpu_recipe_reads_into_a_pilot(name, tmp_path, monkeypatch):
    """The pilot's settings and rewards from each CPU recipe (the field table, no TRL); a process reward is left out
    with a line. Sampling itself is run on every recipe by scripts/pilot_every_recipe.py (minutes each)."""
    import shutil
    from pathlib import Path

    from gdpo_trl.cli.first_checks import read_request
    from gdpo_trl.cli.pilot import recipe_rewards, recipe_settings

    examples = Path(__file__).resolve().parents[2] / "examples" / "your_task"
    for file in examples.iterdir():  # cpu/your_task reads its rewards and prompts from the current folder
        shutil.copy(file, tmp_path)
    monkeypatch.chdir(tmp_path)
    request = read_request(["--config", f"cpu/{name}"])
    settings = recipe_settings(request.recipe_argv, request.recipe)
    funcs = recipe_rewards(settings)
    assert funcs and settings.num_generations >= 2
    assert len(settings.reward_weights or funcs) == len(funcs)
