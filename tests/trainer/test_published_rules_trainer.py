"""GDPOTrainer with GDPO's published follow-ups (mo_grpo, saw_gdpo, saw_grpo, odrpo): what trains equals the pure
function on the very batch (with the options the config gives), the diagnostics are the rule's own, the model card
names the rule and its paper, a resumed run goes on as the uninterrupted one, and two processes train on their slices
of the gathered advantages."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.diagnostics import advantage_shares
from gdpo_trl.core.published_rules import saw_gdpo_advantages, saw_weights
from gdpo_trl.core.rules import RULES, rule_advantages, rule_parts
from gdpo_trl.trainer.card import RULE_CARDS
from tests.helpers.recorders import Recorder, logged, record_lengths
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset

REWARDS = [parity_reward, length_mod_reward]
NEW_RULES = ("mo_grpo", "saw_gdpo", "saw_grpo", "odrpo")
OPTIONS = {"saw_offsets": {"length_mod_reward": 1.0}, "odrpo_thresholds": {"length_mod_reward": [1.0, 2.0]}}


@pytest.mark.parametrize("rule", NEW_RULES)
def test_each_rule_trains_on_its_pure_function_and_logs_its_own_shares(tiny_model_path, tmp_path, monkeypatch, rule):
    lengths = record_lengths(monkeypatch)
    recorder = Recorder(monkeypatch)
    config = toy_config(tmp_path, multi_objective_aggregation=rule, reward_weights=[1, 2], **OPTIONS)
    trainer = GDPOTrainer(tiny_model_path, reward_funcs=REWARDS, args=config, train_dataset=toy_dataset())
    trainer.train()
    recorder.assert_batches(2)
    assert trainer.advantage_rule == rule
    # TRL's own branch sees a name it knows: GDPO's for the per-reward rules, GRPO's for SAW's grpo-h.
    assert trainer.multi_objective_aggregation == (
        "sum_then_normalize" if rule == "saw_grpo" else "normalize_then_sum"
    )
    options = {
        "saw_gdpo": {"offsets": [0.0, 1.0]},  # the toy rewards declare no range: 0, and the config's 1.0
        "saw_grpo": {"offsets": [0.0, 1.0]},
        "odrpo": {"thresholds": [None, [1.0, 2.0]]},
    }.get(rule, {})
    assert trainer.advantage_options == options
    entries = logged(trainer)
    assert len(entries) == 2 and len(lengths) == 2
    weights = torch.tensor([1.0, 2.0])
    for rewards, ours, counts, entry in zip(recorder.rewards, recorder.ours, lengths, entries, strict=True):
        given = dict(options)
        if rule == "saw_gdpo":  # SAW's gdpo-h whitens over the batch's completion tokens, as its reference
            given["completion_mask"] = (torch.arange(int(counts.max())) < counts.unsqueeze(1)).long()
        torch.testing.assert_close(ours, rule_advantages(rule, rewards, weights, 4, **given))
        parts = rule_parts(rule, rewards, weights, 4, given)
        terms, share_weights = parts if parts is not None else (None, None)
        if parts is not None:
            shares = advantage_shares(terms, share_weights).tolist()
            for name, share in zip(("parity_reward", "length_mod_reward"), shares, strict=True):
                assert entry[f"rewards/{name}/advantage_share"] == pytest.approx(share)
        if rule.startswith("saw"):
            expected = (weights * saw_weights(rewards, weights, offsets=[0.0, 1.0])).tolist()
            assert entry["rewards/parity_reward/rule_weight"] == pytest.approx(expected[0])
            assert entry["rewards/length_mod_reward/rule_weight"] == pytest.approx(expected[1])
        else:
            assert not any(key.endswith("/rule_weight") for key in entry)


@pytest.mark.parametrize("rule", NEW_RULES)
def test_the_model_card_names_the_rule_and_its_paper(tiny_model_path, tmp_path, rule):
    config = toy_config(tmp_path, multi_objective_aggregation=rule, max_steps=1)
    trainer = GDPOTrainer(tiny_model_path, reward_funcs=REWARDS, args=config, train_dataset=toy_dataset())
    name, tags, paper = RULE_CARDS[rule]
    assert (trainer._name, trainer._tag_names, trainer._paper) == (name, tags, paper)
    assert paper["id"] in RULES[rule].source
    trainer.create_model_card()
    card = (tmp_path / "README.md").read_text()
    assert paper["title"] in card and f"arXiv:{paper['id']}" in card and name in card
    from gdpo_trl.cli.model_card import method_line  # the "Training procedure" line gdpo train's card writes

    assert method_line(trainer, config) == (
        f"{name}: {RULES[rule].summary} (`multi_objective_aggregation: {rule}`; {RULES[rule].source})."
    )


@pytest.mark.parametrize("rule", NEW_RULES)
def test_a_resumed_run_goes_on_as_the_uninterrupted_one(tiny_model_path, tmp_path, rule):
    """Two steps in one go, against one step, a checkpoint, and a second trainer resuming from it: the second step's
    logged loss, rewards and SAW weights are the same (the rules keep no state between batches; the options come
    from the config)."""

    def run(folder, **overrides):
        config = toy_config(tmp_path / folder, multi_objective_aggregation=rule, **OPTIONS, **overrides)
        return GDPOTrainer(tiny_model_path, reward_funcs=REWARDS, args=config, train_dataset=toy_dataset())

    whole = run("whole")
    whole.train()
    first = run("parts", save_strategy="steps", save_steps=1, max_steps=1)
    first.train()
    resumed = run("parts")
    resumed.train(resume_from_checkpoint=str(tmp_path / "parts" / "checkpoint-1"))
    assert resumed.advantage_options == whole.advantage_options
    expected, got = logged(whole)[1], logged(resumed)[-1]
    assert got["step"] == expected["step"] == 2
    for key in ("loss", "reward", "rewards/parity_reward/mean", "rewards/length_mod_reward/advantage_share"):
        assert got[key] == pytest.approx(expected[key], rel=1e-5, abs=1e-7), key


@pytest.mark.slow  # two torchrun processes: tens of seconds on a busy machine
def test_two_processes_train_on_their_slices_of_saw_gdpo(tiny_model_path, tmp_path):
    """torchrun --nproc_per_node 2 on CPU (gloo): SAW's gdpo-h, whose weights and whitening are batch statistics, is
    computed on the gathered batch (both processes' rewards and token counts), and each rank trains on its slice."""
    env = {**os.environ, "GDPO_TEST_MODEL": tiny_model_path, "GDPO_TEST_OUT": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29523"]
    script = root / "tests" / "helpers" / "rules_two_process_check.py"
    result = subprocess.run([*command, str(script)], env=env, cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert len(ranks[0]["rewards"]) == 2
    for step in range(2):
        rewards = torch.tensor(ranks[0]["rewards"][step])
        assert len(rewards) == 16  # 8 completions on each of 2 processes, gathered
        counts = torch.tensor(ranks[0]["lengths"][step] + ranks[1]["lengths"][step])
        mask = (torch.arange(int(counts.max())) < counts.unsqueeze(1)).long()
        expected = saw_gdpo_advantages(rewards, [1.0, 1.0], 4, offsets=[0.0, 0.0], completion_mask=mask)
        for rank in range(2):
            ours = torch.tensor(ranks[rank]["ours"][step])
            torch.testing.assert_close(ours, expected[rank * 8 : (rank + 1) * 8])
