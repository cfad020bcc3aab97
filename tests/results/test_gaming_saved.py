"""The gaming watch on saved runs: gdpo_trl/results/gaming.py and `gdpo gaming` (gdpo_trl/cli/gaming.py)."""

import gzip
import json

import pytest

from gdpo_trl.cli.main import main as gdpo
from gdpo_trl.core.gaming import GamingRule
from gdpo_trl.results.gaming import judge, saved_histories


def entry(step, length, fmt, correctness):
    return {"step": step, "loss": 0.1, "completions/mean_length": length, "rewards/format_reward/mean": fmt,
            "rewards/correctness_reward/mean": correctness}  # fmt: skip


# Fires at step 4 (format 0.1 -> 0.65, correctness flat, length 180 -> 80) and step 5 (0.4 -> 0.85, 125 -> 65).
GAMING = [entry(1, 200.0, 0.0, 0.0), entry(2, 160.0, 0.2, 0.0), entry(3, 90.0, 0.5, 0.0), entry(4, 70.0, 0.8, 0.0),
          entry(5, 60.0, 0.9, 0.0), {"step": 5, "train_runtime": 1.0}]  # fmt: skip
LEVEL = [entry(i + 1, 100.0, 0.5, 0.2) for i in range(5)]


@pytest.fixture
def runs(tmp_path):
    run = tmp_path / "out" / "gdpo-seed0"
    (run / "checkpoint-4").mkdir(parents=True)
    (run / "checkpoint-4" / "trainer_state.json").write_text(json.dumps({"log_history": GAMING[:4]}))
    log = tmp_path / "study.json.gz"
    with gzip.open(log, "wt") as handle:
        json.dump({"command": "x", "runs": {"gdpo-seed0": GAMING, "grpo-seed0": LEVEL}}, handle)
    return run, log


def test_reads_a_run_folder_a_checkpoint_and_a_log_of_runs(runs):
    run, log = runs
    assert [(name, len(h)) for name, _, h in saved_histories(run)] == [("gdpo-seed0", 4)]
    assert [(name, len(h)) for name, _, h in saved_histories(run / "checkpoint-4")] == [("gdpo-seed0", 4)]
    assert [(name, len(h)) for name, _, h in saved_histories(log)] == [("gdpo-seed0", 6), ("grpo-seed0", 5)]
    verdicts = judge([run, log])
    assert [(v.name, v.fired, v.judged) for v in verdicts] == [
        ("gdpo-seed0", [4], 1),
        ("gdpo-seed0", [4, 5], 2),
        ("grpo-seed0", [], 2),
    ]
    assert judge([log], GamingRule(window=6))[0].line().endswith("not judged (fewer logged steps than the window, "
                                                                 "one reward, or no mean length)")  # fmt: skip


def test_gdpo_gaming_prints_a_line_per_run(runs, capsys):
    _, log = runs
    assert gdpo(["gaming", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gdpo-seed0: fires at step 4, 5 (2 steps judged); first: at step 4, format_reward "
                               "0.10 -> 0.65 rose")  # fmt: skip
    assert lines[1] == "grpo-seed0: never fires (2 steps judged)"
    assert gdpo(["gaming", str(log), "--rise", "0.6", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rule"]["rise"] == 0.6 and [r["fired"] for r in report["runs"]] == [[], []]


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["missing-folder"], "does not exist"), (["--window", "3", "x"], "window must be an even number")],
)
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        gdpo(["gaming", *[str(tmp_path / a) if a.startswith("missing") else a for a in argv]])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_file_that_is_not_a_run_is_named(tmp_path, capsys):
    other = tmp_path / "notes.json"
    other.write_text(json.dumps({"a": 1}))
    with pytest.raises(SystemExit):
        gdpo(["gaming", str(other)])
    assert "holds neither a 'log_history'" in capsys.readouterr().err
