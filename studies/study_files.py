"""A seed study's runs, read and written: the ``<method>-seed<N>/trainer_state.json`` folders under a gdpo compare
``--output_dir``, and the gzipped raw logs committed under docs/results/logs/ (``{"task", "command", "runs":
{"<method>-seed<N>": log_history}}``, the keys no table reads left out), from which every table is recomputed. The
command is :mod:`studies.seed_study`; the tables, :mod:`studies.study_tables`.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from gdpo_trl.results.runs import STATE_FILE, Run, history_from_log, load_run

# The methods the studies know, in the order their runs are listed (baselines first), with their tables' labels.
LABELS = {
    "grpo": "GRPO",
    "grpo_no_std": "GRPO w/o std",
    "gdpo_outcome_only": "GDPO outcome only",
    "gdpo": "GDPO",
    "gd2po": "GD2PO",
}
RUN_DIR = re.compile(r"(?P<method>.+)-seed(?P<seed>\d+)")
# The log keys kept in the exported raw data: every key a table or a figure of the docs reads (clip ratios, token
# counts, gradient norms and the like are left out to keep the files small).
KEPT_KEYS = re.compile(
    r"step|epoch|loss|entropy|learning_rate|reward|reward_std|frac_reward_zero_std|step_time|train_runtime"
    r"|completions/mean_length|rewards/.+|advantages/.+|reward_weights/.+|conflict/.+"
)


def load_study(out_dir: Path) -> list[tuple[str, int, object]]:
    """``(method, seed, Run)`` for every run folder under ``out_dir``, by method name then seed."""
    found = []
    for folder in sorted(Path(out_dir).iterdir()):
        match = RUN_DIR.fullmatch(folder.name)
        if match and (folder / "trainer_state.json").is_file():
            found.append((match["method"], int(match["seed"]), load_run(folder)))
    if not found:
        raise SystemExit(f"seed_study: no <method>-seed<N>/trainer_state.json under {out_dir}")
    return ordered_runs(found)


def export_logs(task: str, out_dir: Path, command: str, path: Path) -> Path:
    """Write every run's ``log_history`` under ``out_dir`` (kept keys only) and the command, gzipped JSON."""
    if not command.strip():
        raise SystemExit("seed_study: --export-logs needs --command, the exact commands that produced the runs")
    runs = {}
    for folder in sorted(Path(out_dir).iterdir()):
        if RUN_DIR.fullmatch(folder.name) and (folder / STATE_FILE).is_file():
            log = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))["log_history"]
            runs[folder.name] = [{k: v for k, v in entry.items() if KEPT_KEYS.fullmatch(k)} for entry in log]
    if not runs:
        raise SystemExit(f"seed_study: no <method>-seed<N>/{STATE_FILE} under {out_dir}")
    return write_logs(path, task, command, runs)


def write_logs(path: Path, task: str, command: str, runs: dict[str, list[dict]]) -> Path:
    """The raw data as docs/results/logs/ keeps it (what :func:`read_logs` reads), gzipped JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"task": task, "command": command, "runs": runs}, sort_keys=True).encode()
    path.write_bytes(gzip.compress(data, mtime=0))  # mtime 0: the same logs give the same bytes
    return path


def read_text(plain: Path) -> str | None:
    """A text file as a job wrote it, or gzipped as a study commits it (``<name>.gz`` beside); None where neither is."""
    packed = plain.with_name(f"{plain.name}.gz")
    if plain.is_file():
        return plain.read_text(encoding="utf-8")
    return gzip.decompress(packed.read_bytes()).decode("utf-8") if packed.is_file() else None


def read_logs(path: str | Path) -> dict:
    """The exported raw data: ``{"task", "command", "runs": {"<method>-seed<N>": log_history}}``."""
    return json.loads(gzip.decompress(Path(path).read_bytes()))


def materialize_logs(logs: dict, out_dir: Path) -> Path:
    """Write the exported runs back as ``<out_dir>/<method>-seed<N>/trainer_state.json`` (what gdpo compare reads)."""
    for name, log in logs["runs"].items():
        (Path(out_dir) / name).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / name / STATE_FILE).write_text(json.dumps({"log_history": log}), encoding="utf-8")
    return Path(out_dir)


def logged_study(logs: dict) -> list[tuple[str, int, Run]]:
    """``(method, seed, Run)`` for every exported run, ordered as :func:`load_study` orders folders."""
    found = []
    for name, log in logs["runs"].items():
        match = RUN_DIR.fullmatch(name)
        found.append((match["method"], int(match["seed"]), Run(name, Path(name), history_from_log(log))))
    return ordered_runs(found)


def ordered_runs(found):
    """``(method, seed, run)`` tuples by method (the known ones first, in :data:`LABELS`' order), then seed."""
    order = list(LABELS)  # known methods in a fixed order (baselines first), any other after them by name
    return sorted(found, key=lambda r: (order.index(r[0]) if r[0] in order else len(order), r[0], r[1]))
