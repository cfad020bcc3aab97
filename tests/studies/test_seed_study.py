"""The seed study's command (``python -m studies.seed_study``): its tables from run logs and from the JSON rows,
and every committed study recomputed from its raw logs and rows."""

import json
import re

import pytest

from gdpo_trl.results import stats as rs
from tests.helpers.studies import (
    LOGGED,
    LOGS,
    OTHER_LOGS,
    OTHER_STUDIES,
    PILOTS,
    RESULTS,
    RUNS,
    STUDIES,
    seed_study,
    study_files,
)


def test_seed_study_command(tmp_path, capsys):
    script = seed_study()  # python -m studies.seed_study
    out = tmp_path / "compare"
    for method, shift in (("gdpo", 0.5), ("grpo", 0.0)):
        for seed in range(3):
            run = out / f"{method}-seed{seed}"
            run.mkdir(parents=True)
            log = [
                {
                    "step": s,
                    "rewards/fmt/mean": shift + seed + s / 100,
                    "reward": 2 * shift + s,
                    "rewards/fmt/frac_zero_std": 0.25,
                    "frac_reward_zero_std": 0.5,
                    "advantages/distinct_per_group": 3.0,
                    "advantages/distinct_per_group_grpo": 2.0,
                }
                for s in range(1, 13)
            ]
            (run / "trainer_state.json").write_text(
                json.dumps({"log_history": [*log, {"step": 12, "train_loss": 1, "train_runtime": 6.0 + 2 * seed}]})
            )
    docs = tmp_path / "docs"
    script.main(["--task", "toy", "--out-dir", str(out), "--docs-dir", str(docs), "--resamples", "500"])
    rows = rs.read_rows(docs / "toy.json")
    assert len(rows) == 2 * 3 * 2  # methods x seeds x (fmt, total)
    # fmt's final for gdpo seed 1: 0.5 + 1 + mean(3..12)/100 = 1.575.
    assert rs.finals(rows, "gdpo", "fmt")[1] == pytest.approx(1.575)
    text = (docs / "toy.md").read_text()
    assert "| GDPO | fmt | 1.575 ± 1.000 | 3 |" in text
    # total has no seed spread: ahead, p = 0; the Bonferroni column counts fmt's one comparison only.
    assert "| total | GDPO − GRPO | 7.500 | +1.000 |" in text and "**ahead** | yes |" in text and "0.05/1" in text
    assert text.index("| GRPO | fmt |") < text.index("| GDPO | fmt |")  # baselines first
    assert "| GDPO | 0.250 ± 0.000 | 0.500 ± 0.000 | 3.000 ± 0.000 | 2.000 ± 0.000 |" in text
    # Block means over seeds (fmt for gdpo: 0.5 + mean seed 1 + the block's mean step / 100) and the run times.
    assert "| GDPO | fmt | 1.555 | 1.615 |" in text and "| GRPO | 3 | 6-10 | 8 | 0.4 |" in text
    assert "| all | 6 | 6-10 | 8 | 0.8 |" in text  # 6 + 8 + 10 s per method
    # The tables rebuilt from the JSON alone give the same statistics.
    capsys.readouterr()
    script.main(["--task", "toy", "--from-json", str(docs / "toy.json"), "--resamples", "500"])
    assert capsys.readouterr().out.split("## Signal")[0] == text.split("## Signal")[0]
    assert (docs / "toy.md").read_text() == text  # printed only


def test_every_study_has_rows_tables_and_logs():
    assert sorted(p.stem for p in RESULTS.glob("*.json")) == sorted([*STUDIES, *OTHER_STUDIES])
    # README.md is the study's page, reproducibility.md and qwen_gdpo_grpo_log.md (H9's run log) pages of their own;
    # every other .md is a study's tables
    pages = ("README", "reproducibility", "qwen_gdpo_grpo_log")
    assert sorted(p.stem for p in RESULTS.glob("*.md") if p.stem not in pages) == sorted(
        [*STUDIES, *(p for p in PILOTS if p in LOGGED), *OTHER_STUDIES]
    )
    assert sorted(p.name for p in LOGS.glob("*.json.gz")) == sorted(f"{t}.json.gz" for t in [*LOGGED, *OTHER_LOGS])
    for task in LOGGED:
        logs = study_files().read_logs(LOGS / f"{task}.json.gz")
        # the command that made the runs: `gdpo compare` (older studies ran it as `python -m gdpo_trl.cli.compare`)
        assert logs["task"] == task and re.search(r"gdpo compare|gdpo_trl\.cli\.compare", logs["command"]), task
        assert len(logs["runs"]) == (2 if task in PILOTS else RUNS.get(task, 30)), task


@pytest.mark.parametrize("task", LOGGED)
def test_committed_tables_are_recomputed_from_the_raw_logs(task, tmp_path, capsys):
    """<task>.json and every table of <task>.md (diagnostics, block means and times included) follow from the
    committed raw logs, run through seed_study.py exactly as the docs say."""
    logs = LOGS / f"{task}.json.gz"
    seed_study().main(
        ["--task", task, "--from-logs", str(logs), "--docs-dir", str(tmp_path), *{**STUDIES, **PILOTS}[task]]
    )
    capsys.readouterr()
    assert (tmp_path / f"{task}.md").read_text(encoding="utf-8") == (RESULTS / f"{task}.md").read_text("utf-8")
    if task in STUDIES:
        assert (tmp_path / f"{task}.json").read_text() == (RESULTS / f"{task}.json").read_text()


@pytest.mark.parametrize("task", list(STUDIES))
def test_committed_results_are_recomputable_from_their_rows(task, capsys):
    """Every table of docs/results/<task>.md but the exploratory ones (which need the runs) follows from <task>.json."""
    rows_path = RESULTS / f"{task}.json"
    capsys.readouterr()
    seed_study().main(["--task", task, "--from-json", str(rows_path), *STUDIES[task]])  # the study's flags
    printed = capsys.readouterr().out.split("## Signal")[0]
    assert printed.strip() == rows_path.with_suffix(".md").read_text(encoding="utf-8").split("## Signal")[0].strip()
