"""The pilot-against-studies table (docs/results/pilot_studies.{md,json}) rewritten byte for byte from the kept
pilots and the studies' committed tables; each kept pilot recomputed from its own completions."""

import gzip
import json

import pytest
import torch

from gdpo_trl.core.diagnostics import conflict_diagnostics
from gdpo_trl.core.rules import rule_advantages
from gdpo_trl.results.pilot import live_groups, rule_against_baseline
from studies.pilot_studies import KEPT, RESULTS, STUDIES, outcome, right, write_table


def test_the_table_is_rewritten_from_the_kept_pilots(tmp_path):
    write_table(tmp_path)
    for name in ("pilot_studies.md", "pilot_studies.json"):
        assert (tmp_path / name).read_text() == (RESULTS / name).read_text(), name


@pytest.mark.parametrize("study", [s for s in STUDIES if (KEPT / s.id / "pilot.json").exists()], ids=lambda s: s.id)
def test_each_kept_pilot_recomputes_from_its_completions(study):
    """The study's rule against GRPO, recomputed from the kept completions' rewards (GD2PO at the recipes' threshold)."""
    report = json.loads((KEPT / study.id / "pilot.json").read_text())
    lines = gzip.decompress((KEPT / study.id / "completions.jsonl.gz").read_bytes()).splitlines()
    rows = [json.loads(line) for line in lines]
    names, weights = report["settings"]["reward_names"], report["settings"]["reward_weights"]
    group = report["settings"]["num_generations"]
    nan = float("nan")
    matrix = torch.tensor(
        [[nan if r["rewards"][n] is None else r["rewards"][n] for n in names] for r in rows], dtype=torch.float64
    )
    options = {"threshold": 0.2} if study.rule == "gd2po" else {}
    advantages = rule_advantages(study.rule, matrix, weights, group, **options)
    baseline = rule_advantages("grpo", matrix, weights, group)
    again = rule_against_baseline(advantages, baseline, live_groups(matrix, group), group)
    kept = report["rules"][study.rule]
    assert again["advantage_correlation"] == pytest.approx(kept["advantage_correlation"])
    assert again["groups_ranked_differently"] == pytest.approx(kept["groups_ranked_differently"])
    weights = torch.tensor(weights, dtype=torch.float64)
    assert conflict_diagnostics(matrix, weights, group)["conflict/share"] == pytest.approx(report["conflict_share"])


def test_outcomes_and_scoring():
    assert outcome(STUDIES[0]) == {"tool_correctness": "behind", "tool_format": "ahead"}  # H1
    assert right("likely", True) and right("unlikely", False) and right("slight", False)
    assert not right("likely", False) and not right("slight", True)
