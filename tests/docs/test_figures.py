"""Every figure in README.md and docs/**.md is recomputed from committed data or a command, or is a dated measurement.

**What counts as a figure** (tests/helpers/doc_figures.py): in prose, tables and unlabelled fences (printed output),
outside inline code, HTML comments, links, and fences of commands or code (```bash, ```python, ```yaml: their
numbers are settings), any number that

* has a decimal point (``0.886``, ``4.7e-6``), or ends with ``%``, or
* is followed by a unit of time or count (``27 s``, ``13 minutes``, ``40 steps``, ``10 seeds``, ``1,019 tests``), or
* is a table cell of its own (a count in a table).

Not figures: version numbers (``TRL 1.16``, ``Python >= 3.10``), arXiv ids, model sizes (``1.5B``), dates, numbers
inside identifiers (``Qwen2.5``, ``H100``) and whole numbers in prose without a unit (line references, ``G=291``).

**A figure passes** when one of these holds:

1. *Recomputed.* Its file and section (the headings above it) are listed in :data:`SOURCES`, and one of the
   section's sources, rounded as the figure is written, gives it (signs are ignored, as prose writes "0.18 lower";
   ``81%`` may be 0.81 or 81; a figure written "a ± b" or "[a, b]" matches only a pair of the source written so).
   In a table row (but those of :data:`SUMMARY_TABLES`), the figure and another figure of its row must come from
   one line of the source. A source reads committed data (``docs/results/logs/*.json.gz``: each run's
   ``log_history`` and the command that made it; ``docs/results/logs/eval_demo/*.json``) through the same scripts
   the docs name, or runs a cheap command (``scripts/advantage_groups.py``, pytest's collection).
2. *Measured.* Its block (paragraph, list item, table or fence) is followed by, or holds, the team's dated-measurement
   marker ``<!-- measured YYYY-MM-DD, <machine>: <command> -->``; the command is required. Such a figure is not
   recomputed here (a timing, a GPU run): the marker says when, where and how to measure it again.
3. *Cited.* Its block carries ``<!-- cited: <source> -->``: a figure quoted from elsewhere (the paper), not ours.
4. *A setting.* Its section's own command, code or config fences hold it (``--max_steps 2`` makes "2 steps" a
   setting), or it is one of :data:`SETTINGS`' design values of that file (the pre-registration's sample sizes,
   the statistic's levels), each listed with the reason it is not a result.

Generated files (``docs/results/<task>.md``) are compared whole with their regeneration from the raw logs.

Limits: a figure that is changed to another figure of the same section's sources still passes (sources are scoped
per section to make that rare); a measured figure is only as good as its marker.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.doc_figures import Figure, code_numbers, figures, matches, matches_pair, numbers, pairs
from tests.helpers.studies import LOGGED, LOGS, OTHER_LOGS, PILOTS, RESULTS, ROOT, STUDIES, seed_study

GENERATED = [f"docs/results/{task}.md" for task in STUDIES] + [f"docs/results/{t}.md" for t in PILOTS if t in LOGGED]


@functools.cache
def regenerated(task: str, tmp: str) -> str:
    """docs/results/<task>.md rewritten from its raw logs by seed_study.py, as the docs say it was written; for a
    study whose logs are not committed (tests/helpers/studies.py says which), the committed tables, which
    tests/results/test_results_stats.py recomputes from the study's per-run rows."""
    if task not in LOGGED:
        return (RESULTS / f"{task}.md").read_text(encoding="utf-8")
    logs = LOGS / f"{task}.json.gz"
    assert logs.is_file(), f"{logs.relative_to(ROOT)} is missing: the raw data of docs/results/{task}.md"
    out = Path(tmp) / task
    seed_study().main(["--task", task, "--from-logs", str(logs), "--docs-dir", str(out), *{**STUDIES, **PILOTS}[task]])
    return (out / f"{task}.md").read_text(encoding="utf-8")


# --- sources: each returns the numbers it recomputes -----------------------------------------------------------


def study(task: str):
    """A study's tables and, for a study (not a pilot), its per-run finals (docs/results/<task>.json)."""

    def source(tmp):
        rows = json.loads((RESULTS / f"{task}.json").read_text()) if task in STUDIES else []
        return regenerated(task, tmp) + "".join(f"\n{row['final']!r}" for row in rows)

    return source


def every_study(tmp):
    return "\n".join(study(task)(tmp) for task in [*STUDIES, *(p for p in PILOTS if p in LOGGED)])


def compare_demo(tmp):
    """`gdpo compare`'s table from its committed runs (the same code path as --skip-training), and the GDPO runs'
    signal diagnostics (zero-std fractions, distinct advantages per group)."""
    study_script = seed_study()
    logs = LOGS / "compare.json.gz"
    assert logs.is_file(), "docs/results/logs/compare.json.gz is missing: the raw data of the gdpo compare table"
    data = study_script.read_logs(logs)
    out = study_script.materialize_logs(data, Path(tmp) / "compare")
    from gdpo_trl.cli import compare

    compare.main(["--skip-training", "--out-dir", str(out)])
    table = (out / "comparison.md").read_text(encoding="utf-8")
    return table + "\n" + study_script.diagnostics_table(study_script.logged_study(data))


def eval_demo(tmp):
    """make eval-demo's summaries, before and after training (committed as written by gdpo eval)."""
    found = []
    for which in ("before", "after"):
        path = LOGS / "eval_demo" / f"{which}.json"
        assert path.is_file(), f"{path.relative_to(ROOT)} is missing: the README's before/after table"
        found += [v for v in _flat(json.loads(path.read_text())) if isinstance(v, (int, float))]
    return found


def _flat(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif isinstance(value, list):
        for v in value:
            yield from _flat(v)
    else:
        yield value


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
    return found + [v for v in _flat([data["eval_before"], data["eval_after"]]) if isinstance(v, (int, float))]


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
    return found + [v for v in _flat([data["eval_before"], data["eval_after"]]) if isinstance(v, (int, float))]


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


# (file, section pattern) -> a source of whole table rows: a figure in a table row there passes only if its whole row
# is one of them (small counts collide too easily one by one).
ROW_SOURCES = [("README.md", r"Advantage collapse", advantage_rows)]

# Tables that summarise several tables of their sources: a row's figures come from different source rows, so the
# rule that a table row's figures come from one source row does not apply there.
SUMMARY_TABLES = [("README.md", r"Does GDPO beat GRPO"), ("docs/results/README.md", r"### Summary")]


def _summary_table(figure: Figure) -> bool:
    return any(path == figure.path and re.search(section, figure.section) for path, section in SUMMARY_TABLES)


# (file, a regular expression searched in the figure's section) -> its sources. Every matching entry counts.
SOURCES = [
    ("README.md", r"Quick start", [eval_demo]),
    ("README.md", r"Advantage collapse", [advantage_groups]),
    ("README.md", r"Process rewards", [worked_example]),
    ("README.md", r"When things go wrong", [bad_input_cases]),
    ("README.md", r"Does GDPO beat GRPO", [every_study]),
    ("README.md", r"Tool calling: the paper", [toolcall_demo, toolrl_sample_rows]),
    ("README.md", r"Does GDPO learn better here", [compare_demo]),
    ("README.md", r"Multi-turn agents", [agent_demo]),
    ("docs/process_rewards.md", r"The rule", [worked_example]),
    ("docs/toolcall.md", r"Tool calling \(README section\)|Data: ToolRL", [toolrl_sample_rows]),
    ("docs/toolcall.md", r"The reward rules", [pairing_example]),
    ("docs/results/README.md", r"Part 1", [study(t) for t in PILOTS if t in LOGGED]),
    ("docs/results/README.md", r"H4", [study("toolcall")]),  # the addendum quotes H1's diagnostics
    ("docs/results/README.md", r"Part 2", [every_study]),
    ("docs/results/README.md", r"### H1", [study("toolcall")]),
    ("docs/results/README.md", r"### H2", [study("gsm8k_style")]),
    ("docs/results/README.md", r"### H3", [study("length")]),
    ("docs/results/README.md", r"### H4", [study("scale6"), study("gsm8k_style")]),
    ("docs/results/README.md", r"### H5", [study("process")]),
    ("docs/results/README.md", r"### H6,", [study("agent")]),
    ("docs/results/README.md", r"### H6b", [study("agent_midrange")]),
    ("docs/results/README.md", r"Addendum.*H6c", [study("agent_midrange")]),  # quotes H6b's diagnostics
    ("docs/results/README.md", r"### H6c", [study("agent_scale6")]),
    ("docs/agents.md", r"Does GDPO beat GRPO here", [study("agent_midrange"), study("agent"), study("agent_scale6")]),
    ("docs/agents.md", r"The shop task|Two tasks in one run", [agent_demo]),
]

# Design values stated as such (not results), per file: text as written -> why it is not a result.
_PREREGISTERED = "the pre-registration's design (docs/results/README.md, part 1)"
SETTINGS: dict[str, dict[str, str]] = {
    "docs/results/README.md": {
        "1.0": "sampling temperature, " + _PREREGISTERED,
        "8 completions": _PREREGISTERED,
        "4 prompts": _PREREGISTERED,
        "32 completions": _PREREGISTERED,
        "30 runs": _PREREGISTERED,
        "20 runs": _PREREGISTERED,
        "10 seeds": _PREREGISTERED,
        "40 steps": _PREREGISTERED,
        "60 steps": _PREREGISTERED,
        "80 steps": "the pilot's length, " + _PREREGISTERED,
        "10 steps": "the final value's window and the blocks, " + _PREREGISTERED,
        "95%": "the confidence level, " + _PREREGISTERED,
        "10,000 resamples": _PREREGISTERED,
        "0.05": "the significance level, " + _PREREGISTERED,
        "6 comparisons": "H4's Bonferroni count, " + _PREREGISTERED,
        "0.2": "the warm start's error rate, " + _PREREGISTERED,
        "64 tokens": "H5's completion length, " + _PREREGISTERED,
        "25 min": "the study's time budget per task, " + _PREREGISTERED,
        "25-minute": "the study's time budget per task, " + _PREREGISTERED,
        "5 steps": "the curves' smoothing window",
    },
    "README.md": {
        "10 s": "when a slow reward is first named (gdpo_trl/trainer/reward_checks.py)",
        "30 s": "how often a slow reward is named again (gdpo_trl/trainer/reward_checks.py)",
        "10 steps": "the final value's window, docs/results/README.md part 1",
        "95%": "the confidence level, docs/results/README.md part 1",
        "10 seeds": "the study's design, docs/results/README.md part 1",
    },
    "docs/training.md": {
        "10 s": "when a slow reward is first named (gdpo_trl/trainer/reward_checks.py)",
        "30 s": "how often a slow reward is named again (gdpo_trl/trainer/reward_checks.py)",
        "40 s": "the example notice's elapsed time (10 s, then every 30 s)",
    },
}


def doc_files() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(found) > 5, "README.md and docs/**.md not found"
    return found


def _backed(figure: Figure, tmp: str, mates: tuple = ()) -> bool:
    """Whether a figure is recomputed, measured, cited or a setting; ``mates``: the other figures of its table row."""
    if figure.marked:
        return True
    for path, section, rows in ROW_SOURCES:
        if figure.row and path == figure.path and re.search(section, figure.section):
            return figure.row in _rows(rows, tmp)
    if figure.text in SETTINGS.get(figure.path, {}):
        return True
    if figure.decimals == 0 and not figure.percent and matches(figure, _code(figure.path).get(figure.section, [])):
        return True
    for path, section, sources in SOURCES:
        if path == figure.path and re.search(section, figure.section):
            for source in sources:
                values, value_pairs, lines = _values(source, tmp)
                if not (matches_pair(figure, value_pairs) if figure.pair else matches(figure, values)):
                    continue
                if not (figure.row and mates and lines) or _summary_table(figure):
                    return True
                # In a table row, the figure and another figure of its row must come from one line of the source
                # (a row of its table), not from anywhere in it.
                if any(matches(figure, line) and any(matches(m, line) for m in mates) for line in lines):
                    return True
    return False


@functools.cache
def _rows(source, tmp: str) -> frozenset:
    return frozenset(source(tmp))


@functools.cache
def _code(rel: str) -> dict[str, list[float]]:
    return code_numbers(ROOT / rel)


@functools.cache
def _values(source, tmp: str) -> tuple[list[float], list[tuple], list[list[float]]]:
    """A source's numbers and, when it returns text, its "a ± b" and "[a, b]" pairs and each line's numbers."""
    found = source(tmp)
    if not isinstance(found, str):
        return found, [], []
    return numbers(found), pairs(found), [numbers(line) for line in found.splitlines() if line.startswith("|")]


@pytest.mark.slow  # about 15 s alone (pytest's collection of one file, two small subprocesses); longer under load
def test_every_figure_is_recomputed_measured_or_cited(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("figures"))
    checked, failures = 0, []
    for path in doc_files():
        rel = str(path.relative_to(ROOT))
        if rel in GENERATED:
            continue  # compared whole below
        found = figures(path, ROOT)
        for figure in found:
            checked += 1
            mates = tuple(f for f in found if f.line == figure.line and f.row and f.value != figure.value)
            if not _backed(figure, tmp, mates):
                failures.append(f"{figure.path}:{figure.line}: {figure.text!r} ({figure.section or 'top'})")
    assert checked > 300, f"only {checked} figures found: the extraction is broken"
    assert not failures, (
        f"{len(failures)} figure(s) neither recomputed from committed data nor marked "
        "`<!-- measured YYYY-MM-DD, <machine>: <command> -->` (tests/docs/test_figures.py says how):\n"
        + "\n".join(failures)
    )


@pytest.mark.parametrize("rel", [rel for rel in GENERATED if Path(rel).stem in LOGGED])
def test_generated_tables_are_regenerated_from_their_raw_logs(rel, tmp_path):
    task = Path(rel).stem
    assert (ROOT / rel).read_text(encoding="utf-8") == regenerated(task, str(tmp_path)), rel


def test_markers_name_a_command():
    """A measured marker without a command, or a misspelt one, does not count (and is reported here)."""
    bad = []
    for path in doc_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for comment in re.findall(r"<!--\s*(measured|cited)\b.*?-->", line):
                if not re.search(r"<!-- (measured \d{4}-\d{2}-\d{2}, [^:]+: \S|cited: \S)", line):
                    bad.append(f"{path.relative_to(ROOT)}:{number}: {comment}")
    assert not bad, "malformed markers (want `<!-- measured YYYY-MM-DD, <machine>: <command> -->`):\n" + "\n".join(bad)


def test_logs_hold_their_commands():
    found = sorted(p.name for p in LOGS.glob("*.json.gz"))
    assert found == sorted(f"{t}.json.gz" for t in [*LOGGED, *OTHER_LOGS])
    for name in found:
        data = json.loads(gzip.decompress((LOGS / name).read_bytes()))
        assert data["command"].strip() and data["runs"], name
