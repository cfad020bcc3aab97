"""The strict recipe's one run beside H9's GDPO seed 0 (studies/qwen_strict_report.py): the committed report is what
the committed files give, and its H9 column is H9's own evaluation and training log."""

import json

import pytest

from studies import qwen_strict_report
from tests.helpers.studies import RESULTS


def test_the_report_is_rewritten_from_the_committed_files():
    if not (RESULTS / "qwen_strict.md").is_file():
        pytest.skip("the strict run's report is not committed (docs/results/qwen_strict.md)")
    found = qwen_strict_report.report()
    assert json.loads((RESULTS / "qwen_strict.json").read_text()) == json.loads(json.dumps(found))
    assert (RESULTS / "qwen_strict.md").read_text() == qwen_strict_report.markdown(found)


def test_h9s_gdpo_seed_0_as_its_files_give_it():
    h9 = qwen_strict_report.report()["H9 GDPO seed 0"]
    summary = json.loads((RESULTS / "qwen_gdpo_grpo" / "eval-gdpo-seed0" / "summary.json").read_text())["metrics"]
    assert h9["evaluation"]["correctness"] == summary["pass@1"] and h9["evaluation"]["completions"] == 200
    assert h9["evaluation"]["one_line_think"] == pytest.approx(0.995)  # 199 of its 200 completions
    assert h9["watch_fires_at"] == [4, 5, 6, 7] and len(h9["steps"]) == 10
