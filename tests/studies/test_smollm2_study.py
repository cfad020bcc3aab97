"""Study H8 on a made-up study folder: its analysis (studies/smollm2_study.py, which studies/smollm2_runner.py
analyze runs): the stopping rule's seeds, the pre-registered differences with Holm over the nine primary comparisons,
the verdicts and the files it writes; and the runner's status."""

import gzip
import json
from pathlib import Path

import pytest

from gdpo_trl.eval.scoring import summarize
from gdpo_trl.results.stats import holm_adjusted, welch_t_test
from studies import smollm2_runner
from studies import smollm2_study as h8

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def study():
    return smollm2_runner


FORMAT = {"gdpo": [0.80, 0.82, 0.84], "grpo": [0.70, 0.71, 0.69], "sft": [0.50, 0.55, 0.45]}


def evaluation(folder: Path, format_rate: float, seed: int) -> None:
    """200 greedy completions: format 1 on the first format_rate x 200, which are the ones not cut at the limit;
    integer on the first 100 + 2 x seed, correctness on the first 2 x seed; summary.json as gdpo eval writes it."""
    folder.mkdir(parents=True)
    good = round(format_rate * 200)
    rows = [{"completions": ["..."], "truncated": [i >= good], "num_tokens": [256 if i >= good else 100],
             "rewards": [{"format": float(i < good), "correctness": float(i < 2 * seed),
                          "integer": float(i < 100 + 2 * seed)}]} for i in range(200)]  # fmt: skip
    (folder / "summary.json").write_text(json.dumps({"metrics": summarize(rows)}))
    (folder / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def training(seed: int) -> list[dict]:
    """Two logged steps (format 0.2 + 0.1 seed, then 0.4 + 0.1 seed) and the end-of-training entry TRL appends."""
    steps = [{"step": s, "step_time": 9.0, "rewards/format_reward/mean": 0.2 * s + 0.1 * seed, "reward": 0.5,
              "rewards/correctness_reward/mean": 0.0, "rewards/integer_reward/mean": 0.3} for s in (1, 2)]  # fmt: skip
    return [*steps, {"step": 2, "train_runtime": 18.0}]


def test_analysis_follows_the_preregistration(study, tmp_path):
    root, docs = tmp_path / "study", tmp_path / "docs"
    (docs / "logs").mkdir(parents=True)
    for arm, rates in FORMAT.items():
        for seed, rate in enumerate(rates):
            evaluation(root / f"eval-{arm}-seed{seed}", rate, seed)
            (root / f"{arm}-seed{seed}").mkdir()
            (root / f"{arm}-seed{seed}" / "trainer_state.json").write_text(json.dumps({"log_history": training(seed)}))
    (root / "sft-seed1" / "build.json").write_text('{"seed": 1, "rows": 160}')  # the control's record of its build
    evaluation(root / "eval-gdpo-seed3", 0.9, 3)  # seed 3 has one arm only: left out by the stopping rule
    evaluation(root / "eval-start", 0.49, 0)

    result = h8.analysis(root)
    assert result["seeds"] == [0, 1, 2]
    assert result["start"]["format"] == 0.49 and result["start"]["format_uncut"] == 1.0
    first = result["comparisons"][0]
    assert (first["difference"], first["outcome"]) == ("gdpo - grpo", "format")
    assert first["diff"] == pytest.approx(0.82 - 0.70)
    assert first["p"] == pytest.approx(welch_t_test(FORMAT["gdpo"], FORMAT["grpo"]).p)
    assert len(result["comparisons"]) == 9
    assert [c["holm_p"] for c in result["comparisons"]] == holm_adjusted([c["p"] for c in result["comparisons"]])
    assert result["arms"]["sft"]["format"][0] == pytest.approx(0.5)
    # Secondary: the evaluation's clipped share and format among the uncut; the RL arms' training curves.
    assert result["secondary"]["gdpo"]["clipped"][0] == pytest.approx(1 - 0.82)
    assert result["secondary"]["sft"]["format_uncut"] == (1.0, 0.0)
    curve = result["training"]["grpo"]["format"]
    assert curve["per_step"] == pytest.approx([0.2 + 0.1, 0.4 + 0.1])  # seeds 0, 1, 2: +0.1 on average
    assert curve["run_mean"][0] == pytest.approx(0.3 + 0.1)
    assert result["training"]["gdpo"]["conflict"]["per_step"] == [0.0, 0.0]  # not logged: 0

    study.analyze(type("Args", (), {"out": str(root), "docs": str(docs)}))
    table = (docs / "smollm2_gdpo_grpo.md").read_text()
    assert "| gdpo - grpo | format | +0.120 |" in table
    assert json.loads((docs / "smollm2_gdpo_grpo.json").read_text())["seeds"] == [0, 1, 2]
    with gzip.open(docs / "logs" / "smollm2_gdpo_grpo.json.gz", "rt") as handle:
        assert set(json.load(handle)["runs"]) == {f"{arm}-seed{s}" for arm in ("gdpo", "grpo") for s in range(3)}
    assert (docs / "smollm2_gdpo_grpo" / "eval-start" / "completions.jsonl.gz").is_file()
    assert json.loads((docs / "smollm2_gdpo_grpo" / "sft-seed1" / "build.json").read_text()) == {"seed": 1, "rows": 160}
    written = {path: path.read_bytes() for path in docs.rglob("*.gz")}
    study.analyze(type("Args", (), {"out": str(root), "docs": str(docs)}))  # again: the same bytes, nothing to commit
    assert {path: path.read_bytes() for path in docs.rglob("*.gz")} == written
    # The committed copy gives the same analysis and tables: what the figures test recomputes.
    again = json.loads(json.dumps(h8.analysis(docs / "smollm2_gdpo_grpo")))
    assert again == json.loads((docs / "smollm2_gdpo_grpo.json").read_text())
    assert h8.tables(again) == table
    assert (docs / "smollm2_gdpo_grpo.png").read_bytes().startswith(b"\x89PNG")


def test_fewer_than_two_complete_seeds_is_refused(study, tmp_path):
    evaluation(tmp_path / "eval-gdpo-seed0", 0.8, 0)
    with pytest.raises(SystemExit, match="0 seed"):
        h8.analysis(tmp_path)


def test_a_summary_its_completions_contradict_is_refused(tmp_path):
    """The outcomes are recomputed from the completions; a summary.json that says otherwise stops the analysis."""
    evaluation(tmp_path / "eval-gdpo-seed0", 0.8, 0)
    summary = tmp_path / "eval-gdpo-seed0" / "summary.json"
    assert h8.run_outcomes(summary.parent)["integer"] == 0.5
    summary.write_text(json.dumps({"metrics": json.loads(summary.read_text())["metrics"] | {"integer_rate": 0.51}}))
    refused = r"eval-gdpo-seed0/summary.json: integer_rate is 0.51 but its completions give 0.5;"
    with pytest.raises(SystemExit, match=refused):
        h8.run_outcomes(summary.parent)


def test_the_committed_study_recomputes(study):
    """H8's committed tables and analysis are what its committed evaluations (every completion) and logs give."""
    docs = ROOT / "docs" / "results"
    result = h8.analysis(docs / "smollm2_gdpo_grpo")
    assert h8.json_text(result) == (docs / "smollm2_gdpo_grpo.json").read_text()  # byte for byte: every digit
    assert h8.tables(result) == (docs / "smollm2_gdpo_grpo.md").read_text()
    assert result["seeds"] == [0, 1, 2, 3, 4]  # every seed of the design: the stopping rule left none out
    evaluations = sorted(path.name for path in (docs / "smollm2_gdpo_grpo").glob("eval-*"))
    assert len(evaluations) == 16 and "eval-start" in evaluations


def test_status_counts_the_runs_and_the_complete_seeds(study, tmp_path, capsys):
    for arm in ("gdpo", "grpo", "sft"):
        evaluation(tmp_path / f"eval-{arm}-seed0", 0.5, 0)
    evaluation(tmp_path / "eval-gdpo-seed1", 0.5, 1)
    evaluation(tmp_path / "eval-start", 0.5, 0)
    study.status(type("Args", (), {"out": str(tmp_path)}))
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "4 of 15 runs evaluated; seeds with all three arms: [0]"
    assert lines[1].split()[:7] == ["gdpo", "seed", "0", "trained", "False", "evaluated", "True"]
