"""The sources tests/docs/test_figures.py recomputes figures from: each reads committed data, or runs a cheap
command, and returns the numbers it recomputes (a list) or the text they are printed in (a str: its table rows, "a ±
b" and "[a, b]" pairs count too). Which file and section each one backs: tests/helpers/figure_table.py."""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.doc_figures import numbers
from tests.helpers.studies import LOGGED, LOGS, PILOTS, RESULTS, ROOT, STUDIES, seed_study, study_files, study_tables

GENERATED = [f"docs/results/{task}.md" for task in STUDIES] + [f"docs/results/{t}.md" for t in PILOTS if t in LOGGED]
GENERATED.append("docs/results/smollm2_gdpo_grpo.md")  # study H8: tests/studies/test_smollm2_study.py regenerates it
GENERATED.append("docs/results/qwen_gdpo_grpo.md")  # study H9: tests/studies/test_qwen_study.py regenerates it
GENERATED.append("docs/results/qwen_pilot.md")  # study H9's pilot: tests/studies/test_qwen_study.py regenerates it
GENERATED.append("docs/results/gaming_watch.md")  # tests/studies/test_gaming_validation.py regenerates it
GENERATED += ["docs/results/rules_toolcall.md", "docs/results/rules_scale6.md"]  # H10: tests/studies/test_rules_study.py
GENERATED.append("docs/results/second_reading.md")  # H8's and H9's secondary reading: tests/studies/test_second_reading.py
GENERATED.append("docs/results/pilot_studies.md")  # the pilot against every study: tests/studies/test_pilot_studies.py


@functools.cache
def regenerated(task: str, tmp: str) -> str:
    """docs/results/<task>.md rewritten from its raw logs by seed_study.py, as the docs say it was written (its
    per-run rows, docs/results/<task>.json, are rewritten beside it: :func:`regenerated_rows`); for a study whose
    logs are not committed (tests/helpers/studies.py says which), the committed tables, which
    tests/studies/test_seed_study.py recomputes from the study's per-run rows."""
    if task not in LOGGED:
        return (RESULTS / f"{task}.md").read_text(encoding="utf-8")
    logs = LOGS / f"{task}.json.gz"
    assert logs.is_file(), f"{logs.relative_to(ROOT)} is missing: the raw data of docs/results/{task}.md"
    out = Path(tmp) / task
    with contextlib.redirect_stdout(io.StringIO()):  # it prints what it writes
        seed_study().main(
            ["--task", task, "--from-logs", str(logs), "--docs-dir", str(out), *{**STUDIES, **PILOTS}[task]]
        )
    return (out / f"{task}.md").read_text(encoding="utf-8")


def regenerated_rows(task: str, tmp: str) -> str:
    """docs/results/<task>.json's per-run rows (seed, method, reward, final) as seed_study.py writes them from the
    study's raw logs, as text."""
    regenerated(task, tmp)
    return (Path(tmp) / task / f"{task}.json").read_text(encoding="utf-8")


# --- sources: each returns the numbers it recomputes -----------------------------------------------------------


def study(task: str):
    """A study's tables and, for a study (not a pilot), its per-run finals (docs/results/<task>.json)."""

    def source(tmp):
        rows = []
        if task in STUDIES:  # from the raw logs where committed (the committed rows are checked against them)
            text = regenerated_rows(task, tmp) if task in LOGGED else (RESULTS / f"{task}.json").read_text()
            rows = json.loads(text)
        return regenerated(task, tmp) + "".join(f"\n{row['final']!r}" for row in rows)

    source.__qualname__ = f"study:{task}"
    return source


def every_study(tmp):
    return "\n".join(study(task)(tmp) for task in [*STUDIES, *(p for p in PILOTS if p in LOGGED)])


def compare_demo(tmp):
    """`gdpo compare`'s table from its committed runs (the same code path as --skip-training), and the GDPO runs'
    signal diagnostics (zero-std fractions, distinct advantages per group)."""
    files = study_files()
    logs = LOGS / "compare.json.gz"
    assert logs.is_file(), "docs/results/logs/compare.json.gz is missing: the raw data of the gdpo compare table"
    data = files.read_logs(logs)
    out = files.materialize_logs(data, Path(tmp) / "compare")
    from gdpo_trl.cli import compare

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        compare.main(["--skip_training", "--output_dir", str(out)])
    table = (out / "comparison.md").read_text(encoding="utf-8")
    return table + "\n" + study_tables().diagnostics_table(files.logged_study(data))


def eval_demo(tmp):
    """make eval-demo's summaries, before and after training (committed as written by gdpo eval)."""
    found = []
    for which in ("before", "after"):
        path = LOGS / "eval_demo" / f"{which}.json"
        assert path.is_file(), f"{path.relative_to(ROOT)} is missing: the README's before/after table"
        found += [v for v in flat_values(json.loads(path.read_text())) if isinstance(v, (int, float))]
    return found


def flat_values(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from flat_values(v)
    elif isinstance(value, list):
        for v in value:
            yield from flat_values(v)
    else:
        yield value


def shipped_records(tmp):
    """Every number of the shipped warm starts' build records (gdpo_trl/models/shipped/*/warmstart.json)."""
    found = []
    for path in sorted((ROOT / "gdpo_trl" / "models" / "shipped").glob("*/warmstart.json")):
        found += [v for v in flat_values(json.loads(path.read_text())) if isinstance(v, (int, float))]
    return found


def toolcall_demo(tmp):
    """The README's tool-calling recipe run and its before/after evals (docs/results/logs/toolcall_demo.json: the
    run's log_history and both eval summaries): first and last 5 steps' means, and the eval metrics."""
    path = LOGS / "toolcall_demo.json"
    assert path.is_file(), "docs/results/logs/toolcall_demo.json is missing: the README's tool-calling figures"
    data = json.loads(path.read_text())
    found = []
    for reward in ("tool_format", "tool_correctness"):
        values = [e[f"rewards/{reward}/mean"] for e in data["train_log_history"] if f"rewards/{reward}/mean" in e]
        found += [sum(values[:5]) / 5, sum(values[-5:]) / 5, len(values)]
    return found + [v for v in flat_values([data["eval_before"], data["eval_after"]]) if isinstance(v, (int, float))]


def agent_demo(tmp):
    """docs/agents.md's recipe runs and evals (docs/results/logs/agent_demo.json: the shop recipe's and the mixed
    recipe's log_history, both eval summaries): each reward's mean over the first and last 5 (mixed: 4) steps it
    applied in, as `gdpo train` prints them, and the eval metrics."""
    path = LOGS / "agent_demo.json"
    assert path.is_file(), "docs/results/logs/agent_demo.json is missing: docs/agents.md's run and eval figures"
    data = json.loads(path.read_text())
    found = []
    for history, steps in (("train_log_history", 5), ("mix_log_history", 4)):
        steps_logged = [e for e in data[history] if "loss" in e]
        for key in sorted({k for e in steps_logged for k in e if k.startswith("rewards/") and k.endswith("/mean")}):
            values = [e[key] for e in steps_logged if e.get(key) is not None]  # None: applied to no row that step
            found += [sum(values[:steps]) / steps, sum(values[-steps:]) / steps, len(values)]
    return found + [v for v in flat_values([data["eval_before"], data["eval_after"]]) if isinstance(v, (int, float))]


@functools.cache
def advantage_groups_text(tmp):
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "advantage_groups.py"), "--out", str(Path(tmp) / "groups.png")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return (out.stdout, out.stderr)


def advantage_groups(tmp):
    return numbers("\n".join(advantage_groups_text(tmp)))


def advantage_rows(tmp):
    """The README's advantage-collapse rows, one per method, from the script's tables (one column per method)."""
    rows = set()
    for table in "\n".join(advantage_groups_text(tmp)).split("\n\n"):
        lines = [line for line in table.splitlines() if line.startswith("|") and "---" not in line]
        if lines and lines[0].startswith(("| G |", "| K |")):
            head = [c.strip() for c in lines[0].strip("|").split("|")]
            body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
            axis = "| completions G (2 rewards) |" if head[0] == "G" else "| rewards K (4 completions) |"
            rows.add(axis + "".join(f" {row[0]} |" for row in body))
            for i, name in enumerate(head[1:], 1):
                label = name.replace("w/o", "without")
                rows.add(f"| {label} |" + "".join(f" {row[i]} |" for row in body))
    return rows


def worked_example(tmp):
    """The process-reward worked example (G = 2), from gdpo_trl.core.advantages without the batch step: each
    token's terms and advantage."""
    import torch

    from gdpo_trl.core.advantages import gdpo_token_advantages

    nan = float("nan")
    # [N=2, K=2, T=6]: the outcome at each completion's last token; steps 1, 0 (ending at tokens 2 and 5) in
    # completion 1, steps 1, 1 (ending at tokens 1 and 3) in completion 2.
    rewards = torch.full((2, 2, 6), nan)
    rewards[0, 0, 5], rewards[1, 0, 3] = 1.0, 0.0
    rewards[0, 1, 2], rewards[0, 1, 5], rewards[1, 1, 1], rewards[1, 1, 3] = 1.0, 0.0, 1.0, 1.0
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    both = gdpo_token_advantages(rewards, [1.0, 1.0], 2, mask, batch_norm=False)
    outcome = gdpo_token_advantages(rewards, [1.0, 0.0], 2, mask, batch_norm=False)
    step = gdpo_token_advantages(rewards, [0.0, 1.0], 2, mask, batch_norm=False)
    inputs = [2, 6, 4]  # the example's inputs: 2 completions, of 6 and 4 tokens
    return [float(x) for t in (both, outcome, step) for x in t.flatten()] + inputs


def toolrl_sample_rows(tmp):
    path = ROOT / "gdpo_trl" / "data" / "toolrl_sample.jsonl"
    return [sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())]


def pairing_example(tmp):
    """docs/toolcall.md's greedy-vs-optimal example, scored by the reward itself."""
    from gdpo_trl.rewards.toolcall import score_tool_calls

    gold = [{"name": "f", "parameters": {"a": 1}}, {"name": "f", "parameters": {"a": 1, "b": 2, "c": 3}}]
    pred = [{"name": "f", "parameters": {"a": 1, "b": 2, "c": 3}}, {"name": "f", "parameters": {"a": 9}}]
    return [score_tool_calls(gold, pred), score_tool_calls(gold, pred, "optimal"), score_tool_calls(gold[::-1], pred)]


def bad_input_cases(tmp):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/cli/test_bad_inputs.py",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return [sum("_rejects[" in line for line in out.stdout.splitlines())]  # the parametrized rejection cases


def _means(steps: list[dict], key: str) -> list[float]:
    """A log's first-5 and last-5 means of ``key`` (what gdpo train's summary prints) and each step's value."""
    values = [e[key] for e in steps if key in e]
    return [sum(values[:5]) / 5, sum(values[-5:]) / 5, *values]


def demo_shipped(tmp):
    """The README quick start's run: make demo from the shipped warm start (its log, committed)."""
    run = json.loads((LOGS / "reproducibility" / "demo_shipped_warmstart.json").read_text())
    steps = [e for e in run["log_history"] if "loss" in e]
    keys = {k for e in steps for k in e if isinstance(e[k], (int, float))}
    return [len(steps), run["wall_seconds"], *(v for k in sorted(keys) for v in _means(steps, k))]


def cross_cpu(tmp):
    """docs/results/reproducibility.md: the rebuild, the shipped weights measured here, the instruction-set runs and
    H2's seed-0 re-run (docs/results/logs/reproducibility/cross_cpu.json), the shipped records and H2's committed log."""
    record = json.loads((LOGS / "reproducibility" / "cross_cpu.json").read_text())
    found = [v for v in flat_values(record) if isinstance(v, (int, float))]
    found += [len(run["steps"]) for run in record["instruction_sets"]["runs"].values()]
    with gzip.open(LOGS / "gsm8k_style.json.gz", "rt", encoding="utf-8") as f:
        first = [e for e in json.load(f)["runs"]["gdpo-seed0"] if "loss" in e][0]
    return found + [v for v in first.values() if isinstance(v, (int, float))]


def real_model(tmp):
    """docs/real_model.md: everything under docs/results/real_model/ (eval and probe summaries, the SFT record, the
    step and generation timings, the reference comparison's counts) and the training log's per-step values, 5-step
    means, and median, least and greatest step time."""
    import statistics

    base = ROOT / "docs" / "results" / "real_model"
    found = []
    for path in sorted(base.rglob("*.json")):
        record = json.loads(path.read_text())
        found += [v for v in flat_values(record) if isinstance(v, (int, float))]
        if path.name == "rewards_reference.json":
            found += [len(d) for r in record.values() for d in r["differences"].values()]
            found.append(sum(r["completions"] for r in record.values()))
            found.append(sum(r["completions"] for name, r in record.items() if name.startswith("probe_")))
    with gzip.open(base / "train_gdpo.json.gz", "rt", encoding="utf-8") as f:
        run = json.load(f)
    steps = [e for e in run["log_history"] if "loss" in e]
    keys = {k for e in steps for k in e if isinstance(e[k], (int, float))}
    found += [run["peak_rss_gb"], len(steps), *(v for k in sorted(keys) for v in _means(steps, k))]
    times = [e["step_time"] for e in steps]
    return found + [statistics.median(times), min(times), max(times)]
