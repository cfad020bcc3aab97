"""Study H9 on made-up study folders: its analysis (studies/qwen_study.py: the stopping rule's seeds, GDPO -
GRPO on three outcomes with Holm over three, the verdict, the files), its pilot's scoring
(studies/qwen_pilot.py) and its runner (studies/qwen_runner.py: the order of jobs, one thread everywhere, the
commands, resuming)."""

import json
from pathlib import Path

import pytest

from gdpo_trl.results.stats import holm_adjusted, welch_t_test
from studies import qwen_pilot, qwen_runner, qwen_study
from studies.study_files import read_logs
from tests.studies.test_smollm2_study import evaluation, training

FORMAT = {"gdpo": [0.80, 0.82, 0.84], "grpo": [0.70, 0.71, 0.69]}


@pytest.fixture(scope="module")
def runner():
    return qwen_runner


def make_study(root: Path, seeds) -> None:
    for seed in seeds:
        for arm in qwen_study.ARMS:
            evaluation(root / f"eval-{arm}-seed{seed}", FORMAT[arm][seed], seed)
            (root / f"{arm}-seed{seed}").mkdir(parents=True)
            (root / f"{arm}-seed{seed}" / "trainer_state.json").write_text(json.dumps({"log_history": training(seed)}))


def test_analysis_follows_the_preregistration(tmp_path):
    root, docs = tmp_path / "study", tmp_path / "docs"
    make_study(root, [0, 1, 2])
    evaluation(root / "gdpo-seed3" / ".." / "eval-gdpo-seed3", 0.9, 3)  # seed 3 has one arm only: left out
    evaluation(root / "eval-start", 0.5, 0)
    result, _ = qwen_study.analysis_and_logs(root)
    assert result["seeds"] == [0, 1, 2]
    fmt = next(c for c in result["comparisons"] if c["outcome"] == "format")
    assert fmt["diff"] == pytest.approx(0.82 - 0.70)
    assert fmt["p"] == pytest.approx(welch_t_test(FORMAT["gdpo"], FORMAT["grpo"]).p)
    assert [c["holm_p"] for c in result["comparisons"]] == pytest.approx(
        holm_adjusted([c["p"] for c in result["comparisons"]])
    )
    assert fmt["verdict"] == "ahead" and fmt["holds_under_holm"]
    # integer and correctness are equal per seed in both arms (they depend on the seed only): level
    assert [c["verdict"] for c in result["comparisons"] if c["outcome"] != "format"] == ["level", "level"]
    assert result["verdict"] == {"H9 gdpo - grpo": "supported"}
    assert result["starts"]["eval-start"]["format"] == 0.5 and "eval-start-own-default" not in result["starts"]
    docs.mkdir()
    qwen_study.write(root, docs)
    assert json.loads((docs / "qwen_gdpo_grpo.json").read_text()) == json.loads(json.dumps(result))
    assert "| format | +0.120 |" in (docs / "qwen_gdpo_grpo.md").read_text()
    assert (docs / "qwen_gdpo_grpo.png").stat().st_size > 0
    assert sorted(p.name for p in (docs / "qwen_gdpo_grpo").iterdir())[:2] == ["eval-gdpo-seed0", "eval-gdpo-seed1"]


def test_the_start_scored_by_the_last_number_is_reported_by_its_own_metrics(tmp_path):
    # The model's own chat default is scored by last_number_reward, not the three rewards: its metrics as they came,
    # recomputed from the completions (three of four right, one cut); a summary that disagrees is refused.
    folder = tmp_path / "eval-start-own-default"
    folder.mkdir()
    name = "gdpo_trl.rewards.gsm8k.last_number_reward"
    rows = [{"completions": ["..."], "truncated": [i == 3], "num_tokens": [400 if i == 3 else 100],
             "rewards": [{name: float(i < 3)}]} for i in range(4)]  # fmt: skip
    (folder / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = {f"{name}_mean": 0.75, "mean_completion_tokens": 175.0, "truncated_fraction": 0.25}
    (folder / "summary.json").write_text(json.dumps({"metrics": {**summary, "num_problems": 4, "num_samples": 4}}))
    assert qwen_study.start_outcomes(folder) == {**summary, "num_problems": 4, "num_samples": 4}
    (folder / "summary.json").write_text(json.dumps({"metrics": {**summary, "truncated_fraction": 0.5}}))
    with pytest.raises(SystemExit, match="truncated_fraction is 0.5 but its completions give 0.25"):
        qwen_study.start_outcomes(folder)


def test_fewer_than_three_seeds_with_both_arms_are_not_analysed(tmp_path):
    make_study(tmp_path, [0, 1])
    with pytest.raises(SystemExit, match="2 seed.* with both arms evaluated: the stopping rule needs at least 3"):
        qwen_study.analysis_and_logs(tmp_path)


def test_the_pilot_scores_length_only_where_correct(tmp_path):
    # One group of 4: correct and short, correct and long, wrong and short, wrong and cut.
    folder = tmp_path / "pilot"
    folder.mkdir()
    scores = [(1, 1, 1), (1, 1, 1), (1, 0, 1), (0, 0, 0)]
    row = {"completions": ["..."] * 4, "num_tokens": [120, 350, 90, 400], "truncated": [False, False, False, True],
           "rewards": [{"format": f, "correctness": c, "integer": i} for f, c, i in scores]}  # fmt: skip
    (folder / "completions.jsonl").write_text(json.dumps(row) + "\n")
    summary = {"generation": {"n": 4, "temperature": 1.0, "max_new_tokens": 400, "dtype": "bfloat16"},
               "data": {"system_prompt": "p"}, "generation_time_s": 48.0}  # fmt: skip
    (folder / "summary.json").write_text(json.dumps(summary))
    matrix = qwen_pilot.reward_matrix([row], ["correctness", "length"])
    assert matrix.tolist() == [[1, 1], [1, 0], [0, 0], [0, 0]]
    result = qwen_pilot.pilot(folder)
    assert result["sampling"] == {"completions": 4, "mean_tokens": 240.0, "cut_share": 0.25,
                                  "generation_time_s": 48.0, "tokens_per_s": 20.0}  # fmt: skip
    assert result["candidates"]["gsm8k"]["rewards"]["format"]["mean"] == 0.75
    assert result["candidates"]["length"]["rewards"]["length"]["mean"] == 0.25


def test_the_runner_orders_jobs_and_runs_everything_with_one_thread(runner, tmp_path, monkeypatch):
    jobs = [(arm, seed) for arm, seed, _ in runner.jobs(tmp_path)]
    assert jobs[:4] == [("start", None), ("start-own-default", None), ("gdpo", 0), ("grpo", 0)]
    assert len(jobs) == 2 + 2 * 5 and runner.THREADS == 1
    calls = []
    monkeypatch.setattr("studies.study_jobs.run_logged", lambda cmd, log, threads, cwd: calls.append((cmd, threads)))
    out = tmp_path / "gdpo-seed1"
    (out / "checkpoint-4").mkdir(parents=True)  # a run cut short resumes from its newest checkpoint
    runner.run_job("gdpo", 1, out, tmp_path)
    (train, threads), (evaluate, _) = calls
    assert threads == 1 and train[train.index("--seed") + 1] == "1" and "--resume_from_checkpoint" in train
    # float32 everywhere, whatever the CPU (amendment 2): the registered bf16 is 5-8x slower on CPUs without it
    assert train[train.index("--cpu_dtype") + 1] == "float32" and evaluate[evaluate.index("--dtype") + 1] == "float32"
    assert train[train.index("--config") + 1].endswith("recipes/cpu/qwen_gdpo/config.yaml")
    assert evaluate[evaluate.index("--model") + 1] == str(out) and "--system_prompt" in evaluate
    assert evaluate[evaluate.index("--output_dir") + 1] == str(tmp_path / "eval-gdpo-seed1")


def test_a_data_folder_without_the_split_files_is_refused_in_one_line(runner, tmp_path):
    with pytest.raises(SystemExit, match=r"--data .*: no train.jsonl or test.jsonl there"):
        runner.check_data(tmp_path)


def test_the_committed_pilot_recomputes_from_its_completions():
    docs = Path(__file__).resolve().parents[2] / "docs" / "results"
    committed = json.loads((docs / "qwen_pilot.json").read_text())
    assert json.loads(json.dumps(qwen_pilot.pilot(docs / "qwen_pilot"))) == committed
    assert (docs / "qwen_pilot.md").read_text() == qwen_pilot.tables(committed)
    assert committed["sampling"]["completions"] == 16 * 8


def test_the_committed_study_recomputes_from_its_kept_runs():
    # H9 as analysed (studies/qwen_runner.py analyze): its tables, verdict and raw logs come back from the folder
    # `keep` committed (every evaluation's completions, each run's trainer_state.json and log, the runner's stamps).
    docs = Path(__file__).resolve().parents[2] / "docs" / "results"
    committed = json.loads((docs / "qwen_gdpo_grpo.json").read_text())
    result, logs = qwen_study.analysis_and_logs(docs / qwen_study.STUDY)
    assert json.loads(json.dumps(result)) == committed
    assert (docs / "qwen_gdpo_grpo.md").read_text() == (
        qwen_study.tables(committed) + "\n![H9's training curves](qwen_gdpo_grpo.png)\n"
    )
    assert read_logs(docs / "logs" / "qwen_gdpo_grpo.json.gz")["runs"] == json.loads(json.dumps(logs))
    assert len(committed["seeds"]) >= qwen_study.MIN_SEEDS
    assert len(committed["runs"]) == 2 * len(committed["seeds"])


def test_finished_jobs_kept_and_restored_give_the_same_analysis(runner, tmp_path, capsys):
    # A machine renewed between sessions loses the study folder: what keep committed must bring the runner back to
    # where it stood (finished jobs skipped, unfinished ones left to run) and give the same analysis.
    root, docs, renewed = tmp_path / "study", tmp_path / "docs", tmp_path / "renewed"
    make_study(root, [0, 1, 2])
    evaluation(root / "eval-start", 0.5, 0)
    (root / "gdpo-seed0.log").write_text("$ gdpo train ... --seed 0\n$ gdpo eval ...\n")
    (tmp_path / "study.log").write_text("2026-11-29 03:16:42 machine: AMD EPYC, 2 cores, native bf16: none\n")
    (root / "gdpo-seed3" / "checkpoint-4").mkdir(parents=True)  # in training: not finished, not kept
    (root / "grpo-seed3").mkdir()
    (root / "grpo-seed3" / "trainer_state.json").write_text(json.dumps({"log_history": training(3)}))  # not evaluated
    args = type("Args", (), {"out": str(root), "docs": str(docs)})
    runner.keep(args)
    assert capsys.readouterr().out.split(": ")[1].split() == [
        "eval-start",
        *(f"{arm}-seed{seed}" for seed in (0, 1, 2) for arm in qwen_study.ARMS),
    ]
    kept = docs / qwen_study.STUDY
    assert not (kept / "gdpo-seed3").exists() and not (kept / "grpo-seed3").exists()
    assert (kept / "gdpo-seed0.log.gz").is_file() and (kept / "eval-grpo-seed2" / "completions.jsonl.gz").is_file()
    before = {path: path.read_bytes() for path in kept.rglob("*") if path.is_file()}
    runner.keep(args)  # keeping again writes the same bytes: git sees nothing new
    assert {path: path.read_bytes() for path in kept.rglob("*") if path.is_file()} == before
    args.out = str(renewed)
    runner.restore(args)
    states = {(arm, seed): runner.finished(arm, out) for arm, seed, out in runner.jobs(renewed)}
    assert [job for job, done in states.items() if done] == [("start", None)] + [
        (arm, seed) for seed in (0, 1, 2) for arm in qwen_study.ARMS
    ]
    assert (renewed / "gdpo-seed0.log").read_text() == (root / "gdpo-seed0.log").read_text()
    assert (tmp_path / "renewed.log").read_text() == (tmp_path / "study.log").read_text()  # the runner's stamps too
    assert qwen_study.analysis_and_logs(renewed) == qwen_study.analysis_and_logs(root)
    assert qwen_study.analysis_and_logs(kept) == qwen_study.analysis_and_logs(root)  # analysed where committed too
    (renewed / "eval-gdpo-seed0" / "summary.json").write_text("{}")  # restore never overwrites the study's own files
    runner.restore(args)
    assert (renewed / "eval-gdpo-seed0" / "summary.json").read_text() == "{}"


def test_each_runs_machines_and_resumes_are_read_from_the_logs(tmp_path):
    root = tmp_path / "study"
    make_study(root, [0, 1, 2])
    (tmp_path / "study.log").write_text(
        "2026-11-29 03:13:17 train gdpo seed 0\n"  # before the first machine stamp: a discarded attempt
        "2026-11-29 03:16:42 machine: EPYC A, 2 cores, native bf16: none\n"
        "2026-11-29 03:16:42 train gdpo seed 0\n2026-11-29 03:16:42 train grpo seed 0\n"
        "2026-11-30 09:00:00 machine: EPYC B, 2 cores, native bf16: avx512_bf16\n"
        "2026-11-30 09:00:00 train grpo seed 0\n2026-11-30 09:50:00 evaluate grpo seed 0\n"
    )
    (root / "grpo-seed0.log").write_text(
        "\n$ /v/gdpo train --config c --seed 0 --output_dir o\nstep 1\n"
        "\n$ /v/gdpo train --config c --seed 0 --output_dir o --resume_from_checkpoint true\n"
        "\n$ /v/gdpo eval --model o --output_dir e\n"
    )
    record = qwen_study.run_record(root, [0, 1, 2])
    assert record["gdpo-seed0"] == {"machines": ["EPYC A, 2 cores, native bf16: none"], "train_commands": 0,
                                    "resumed": 0, "started_over": 0}  # fmt: skip
    assert record["grpo-seed0"] == {
        "machines": ["EPYC A, 2 cores, native bf16: none", "EPYC B, 2 cores, native bf16: avx512_bf16"],
        "train_commands": 2, "resumed": 1, "started_over": 0,
    }  # fmt: skip
    assert record["gdpo-seed1"]["machines"] == []
    result, _ = qwen_study.analysis_and_logs(root)
    table = qwen_study.tables(result)
    assert (
        "| grpo-seed0 | EPYC A, 2 cores, native bf16: none; EPYC B, 2 cores, native bf16: avx512_bf16 | 2 | 1 | 0 |"
        in table
    )
    assert "| gdpo-seed1 | not stamped | 0 | 0 | 0 |" in table


def test_keep_before_any_job_finished_keeps_the_runners_log_only(runner, tmp_path, capsys):
    (tmp_path / "study" / "gdpo-seed0" / "checkpoint-2").mkdir(parents=True)
    (tmp_path / "study.log").write_text("2026-11-29 03:16:42 machine: AMD EPYC, 2 cores, native bf16: none\n")
    runner.keep(type("Args", (), {"out": str(tmp_path / "study"), "docs": str(tmp_path / "docs")}))
    assert capsys.readouterr().out.endswith(": nothing finished yet\n")
    assert [p.name for p in (tmp_path / "docs" / qwen_study.STUDY).iterdir()] == ["study.log"]


def test_status_shows_a_running_jobs_step_and_checkpoint_but_none_of_its_log(runner, tmp_path, capsys):
    # The study stays blind until its stopping rule: a training log holds reward lines between its progress bars,
    # and the status line must carry the step from the last bar and nothing else of the log.
    study = tmp_path / "study"
    (study / "gdpo-seed1" / "checkpoint-2").mkdir(parents=True)
    (study / "gdpo-seed1" / "checkpoint-10").mkdir()  # numbered, not sorted as text: 10 is the newest
    bars = "\r 20%|##| 2/10 [20:00<80:00, 600.00s/it]{'reward': 0.8125, 'rewards/format/mean': 0.75}\n"
    (study / "gdpo-seed1.log").write_text(f"$ gdpo train\n{bars}\r 30%|###| 3/10 [30:05<70:00, 601.50s/it]")
    runner.status(type("Args", (), {"out": str(study)}))
    lines = {line.split(" seed ")[0].strip() + line.split(" seed ")[1].split()[0]: line for line in
             capsys.readouterr().out.splitlines()}  # fmt: skip
    running = lines["gdpo1"]
    assert "checkpoint-10 (" in running and "checkpoint-2" not in running
    assert running.endswith("at 3/10 [30:05<70:00, 601.50s/it]")
    assert "0.8125" not in running and "reward" not in running
    assert lines["grpo1"].endswith("evaluated False")  # not started: no checkpoint, no bar
