"""Committed JSON whose figures the docs quote, recomputed from its raw rows, so that a one-digit edit of a derived
figure or of a raw row fails a test (tests/docs/figures.lock pins the docs' text, not the files they quote):

* study H8: docs/results/smollm2_gdpo_grpo.json and .md, byte for byte, from every evaluated completion
  (docs/results/smollm2_gdpo_grpo/eval-*/completions.jsonl.gz) and the RL runs' logs, by the study's own analysis;
* the CPU path: docs/results/real_model/cpu_path.json's (and cpu_path_busy.json's) medians, ratio, peaks and shares
  of the machine's bounds from each run's step times, peaks, rewards and loss.

Each function returns what differs, one line each: a test asserts none on the committed files, and another that a
one-digit edit of a copy is found (tests/docs/test_recomputed_json.py)."""

from __future__ import annotations

import difflib
import json
import statistics
from pathlib import Path

from tests.helpers.scripts import load_script

H8 = "smollm2_gdpo_grpo"


def text_differences(name: str, committed: str, recomputed: str, limit: int = 6) -> list[str]:
    """The lines of ``committed`` that its recomputation writes otherwise, as ``name:line: committed -> recomputed``."""
    found = []
    matcher = difflib.SequenceMatcher(None, committed.splitlines(), recomputed.splitlines(), autojunk=False)
    old, new = committed.splitlines(), recomputed.splitlines()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            found.append(f"{name}:{i1 + 1}: {' / '.join(old[i1:i2])!r} but recomputed {' / '.join(new[j1:j2])!r}")
    return found[:limit]


def value_differences(committed, recomputed, path: str = "") -> list[str]:
    """Where two parsed JSON values differ: ``path: committed but recomputed`` (``runs[9].format``)."""
    if isinstance(committed, dict) and isinstance(recomputed, dict) and list(committed) == list(recomputed):
        return [d for key in committed for d in value_differences(committed[key], recomputed[key], f"{path}.{key}")]
    if isinstance(committed, list) and isinstance(recomputed, list) and len(committed) == len(recomputed):
        return [
            d
            for i, pair in enumerate(zip(committed, recomputed, strict=True))
            for d in value_differences(*pair, f"{path}[{i}]")
        ]
    return [] if committed == recomputed else [f"{path.lstrip('.')}: {committed!r} but recomputed {recomputed!r}"]


def json_differences(name: str, committed: str, recomputed: str, limit: int = 6) -> list[str]:
    """A committed JSON file against its recomputation: each value that differs, by its path; where none does, the
    lines written otherwise (a digit past a float's precision, "0.70" for 0.7)."""
    found = [f"{name}: {line}" for line in value_differences(json.loads(committed), json.loads(recomputed))]
    return found[:limit] or text_differences(name, committed, recomputed, limit)


def h8_differences(results: Path) -> list[str]:
    """Study H8's committed analysis and tables against their recomputation from ``results`` (docs/results or a copy
    of its H8 files): every run's outcomes from its completions, every mean, CI, p and verdict from those. A
    summary.json that disagrees with its completions stops the analysis (SystemExit naming it)."""
    from studies import smollm2_study

    result = smollm2_study.analysis(results / H8)
    found = json_differences(f"{H8}.json", (results / f"{H8}.json").read_text(), smollm2_study.json_text(result))
    found += text_differences(f"{H8}.md", (results / f"{H8}.md").read_text(), smollm2_study.tables(result))
    return found


def benchmark_script():
    """scripts/benchmark_cpu_path.py as a module (what wrote cpu_path.json: its shares of the machine's bounds)."""
    return load_script("benchmark_cpu_path")


def cpu_path_derived(record: dict) -> dict:
    """cpu_path.json's derived figures from its raw rows, as scripts/benchmark_cpu_path.py derives them: the median
    step time per path with each run's first step left out, their ratio, each path's peak, the micro-batches' run
    (peak, and whether it trained as the recipe's micro-batches did), and generation's shares of the bounds."""
    runs = record["runs"]
    steps = {path: [t for run in found for t in run["step_seconds"][1:]] for path, found in runs.items()}
    derived = {
        "step_seconds_before": statistics.median(steps["before"]),
        "step_seconds_after": statistics.median(steps["after"]),
        "step_ratio_after_over_before": round(
            statistics.median(steps["after"]) / statistics.median(steps["before"]), 2
        ),
        "peak_gb_before": max(run["peak_gb"] for run in runs["before"]),
        "peak_gb_after": max(run["peak_gb"] for run in runs["after"]),
    }
    micro = runs.get("after, micro-batches of 8")
    if micro:
        derived["peak_gb_micro_batches_of_8"] = micro[0]["peak_gb"]
        # None where every reward was 0 (runs that score nothing say nothing about training alike)
        derived["same_training_as_micro_batches_of_8"] = benchmark_script().same_training(micro[0], runs["after"][0])
    if "generation_vs_bounds" in record:
        # The tokens/s of generation as gdpo runs it (two threads, passive), from the threads table where committed.
        rows = [
            r
            for r in record.get("threads", [])
            if (r["busy_processes"], r["threads"], r["wait_policy"]) == (0, 2, "PASSIVE")
        ]
        rate = rows[0]["tokens_per_second"] if rows else record["generation_vs_bounds"]["tokens_per_second"]
        row = {"busy_processes": 0, "threads": 2, "wait_policy": "PASSIVE", "tokens_per_second": rate}
        derived["generation_vs_bounds"] = benchmark_script().against_bounds([row], record["bounds"])
    return derived


def cpu_path_differences(path: Path) -> list[str]:
    """A cpu_path.json against its record written out again with the derived figures its raw rows give, as the
    script writes it (``json.dumps``, indent 2): each derived figure that differs, by its key; where none does, a
    digit past a float's precision ("73.55000000000002") or a figure written otherwise ("86.850")."""
    text = path.read_text()
    record = json.loads(text)
    return json_differences(path.name, text, json.dumps(record | cpu_path_derived(record), indent=2) + "\n")
