"""Read the logs of GRPO/GDPO training runs, summarise them and plot them side by side.

A Hugging Face ``Trainer`` writes ``trainer_state.json`` into every ``checkpoint-<step>/`` folder and into
``output_dir/`` at the end of training. Its ``log_history`` holds one dict per logging event; this module turns
that into per-metric ``(step, value)`` series so several runs can be compared per reward.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

STATE_FILE = "trainer_state.json"
TOTAL_REWARD = "reward"
_CHECKPOINT_RE = re.compile(r"checkpoint-(\d+)")
_REWARD_MEAN_RE = re.compile(r"rewards/(.+)/mean")
# Keys of a log entry that locate it rather than measure something.
_POSITION_KEYS = ("step", "epoch")

Series = list[tuple[int, float]]


@dataclass
class Run:
    """One training run: a display name, the ``trainer_state.json`` it came from and its metric series."""

    name: str
    path: Path
    history: dict[str, Series] = field(default_factory=dict)
    recipe_rewards: list[str] = field(default_factory=list)  # the recipe's reward_funcs, as it recorded them


@dataclass(frozen=True)
class CurveStats:
    """First and last value of a series, its area under the curve over steps, and that area per step."""

    first: float
    last: float
    auc: float
    mean_level: float


# --- finding and loading ---------------------------------------------------------------------------------------


def _checkpoint_number(path: Path) -> int | None:
    """The step number of a ``checkpoint-<step>`` folder, or None for any other name."""
    match = _CHECKPOINT_RE.fullmatch(path.name)
    return int(match.group(1)) if match else None


def find_trainer_state(path: str | os.PathLike) -> Path:
    """Locate the ``trainer_state.json`` for an output_dir, a checkpoint folder or the file itself.

    An output_dir's own file wins because the Trainer writes it last, at the end of training. Without it (a run
    that is still going or was cut short), the highest-numbered checkpoint holds the longest history; checkpoints
    are compared by number, since ``checkpoint-10`` sorts before ``checkpoint-9`` as text.
    """
    path = Path(path)
    if path.is_file() and path.name == STATE_FILE:
        return path
    if path.is_dir():
        if (path / STATE_FILE).is_file():
            return path / STATE_FILE
        checkpoints = [
            (number, child)
            for child in path.iterdir()
            if (number := _checkpoint_number(child)) is not None and (child / STATE_FILE).is_file()
        ]
        if checkpoints:
            return max(checkpoints)[1] / STATE_FILE
    raise FileNotFoundError(_not_found_message(path))


def _not_found_message(path: Path) -> str:
    """Say what was wrong with ``path`` and what was looked for, so a typo or a wrong folder is easy to spot."""
    expected = f"expected an output_dir, a checkpoint folder or a {STATE_FILE} file"
    if not path.exists():
        return f"{path} does not exist ({expected})"
    if path.is_file():
        return f"{path} is not a {STATE_FILE} file ({expected})"
    return f"No {STATE_FILE} in {path}: looked for {path / STATE_FILE} and {path / 'checkpoint-*' / STATE_FILE}"


def _run_dir(state_file: Path) -> Path:
    """The output_dir a state file belongs to: a checkpoint's parent, else the folder holding the file."""
    folder = Path(os.path.abspath(state_file)).parent
    return folder.parent if _checkpoint_number(folder) is not None else folder


def _is_number(value: object) -> bool:
    # bool is an int subclass but never a metric; NaN/inf would turn an AUC into NaN, so they are dropped too.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def history_from_log(log_history: list[dict]) -> dict[str, Series]:
    """Turn a Trainer ``log_history`` into ``{metric: [(step, value), ...]}``, each series sorted by step.

    Entries only contribute the metrics they contain: the final ``train_runtime`` summary and ``eval_*`` entries
    have no reward keys, and reading a missing key as 0 would put false dips into the curves.
    """
    history: dict[str, Series] = {}
    for entry in log_history:
        step = entry.get("step")
        if not _is_number(step):
            continue
        for key, value in entry.items():
            if key not in _POSITION_KEYS and _is_number(value):
                history.setdefault(key, []).append((int(step), float(value)))
    for series in history.values():
        series.sort(key=lambda point: point[0])  # stable: points logged at the same step keep their order
    return history


def load_run(path: str | os.PathLike, name: str | None = None) -> Run:
    """Load one run; ``name`` defaults to the output_dir's folder name (a checkpoint's parent folder)."""
    state_file = find_trainer_state(path)
    try:
        state = json.loads(Path(state_file).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        where = f" at line {error.lineno}" if isinstance(error, json.JSONDecodeError) else ""
        raise ValueError(
            f"{state_file} is not valid JSON{where} (damaged, or cut short by a run stopped while saving): "
            "plot another checkpoint of the run, or rerun it."
        ) from None
    log_history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(log_history, list):
        # ValueError (like bad JSON), so callers handle every malformed file with one except clause.
        raise ValueError(f"{state_file} has no 'log_history' list; is it a Trainer state file?")
    history = history_from_log(log_history)
    return Run(name or _run_dir(state_file).name, state_file, history, recorded_rewards(state))


def recorded_rewards(state: dict) -> list[str]:
    """The ``reward_funcs`` of the recipe a ``gdpo train`` run recorded in its state (RecipeRecord), in the recipe's
    order; empty where none was recorded (a plain TRL run, an older gdpo-trl)."""
    try:
        entry = (state.get("stateful_callbacks") or {}).get("RecipeRecord")
        entry = entry[-1] if isinstance(entry, list) and entry else entry
        specs = entry["args"]["recipe"]["reward_funcs"]
    except (TypeError, KeyError, AttributeError):
        return []
    return [spec for spec in specs if isinstance(spec, str)] if isinstance(specs, list) else []


def unique_names(names: list[str]) -> list[str]:
    """Suffix repeated names with ``-2``, ``-3``, ... so every line in a legend can be told apart."""
    taken: set[str] = set()
    result = []
    for name in names:
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}-{n}"
        taken.add(candidate)
        result.append(candidate)
    return result


def load_runs(paths: list[str | os.PathLike], names: list[str] | None = None) -> list[Run]:
    """Load several runs, giving them distinct names (e.g. two ``.../output`` folders become output, output-2)."""
    if names is not None and len(names) != len(paths):
        raise ValueError(f"got {len(names)} names for {len(paths)} runs")
    runs = [load_run(path, name) for path, name in zip(paths, names or [None] * len(paths), strict=True)]
    for run, name in zip(runs, unique_names([run.name for run in runs]), strict=True):
        run.name = name
    return runs


# --- analysis --------------------------------------------------------------------------------------------------


def reward_key(name: str) -> str:
    """The log key of a reward function's batch mean."""
    return f"rewards/{name}/mean"


def reward_names(runs: list[Run]) -> list[str]:
    """Names of all reward functions seen in any run (from ``rewards/<name>/mean`` keys), in the order of the first
    recorded recipe's ``reward_funcs`` (``trainer_state.json`` sorts its keys, so the log alone gives them
    alphabetically; a reward gated by a condition, ``<reward>_if_<on>``, takes its reward's place), then any other
    in first-seen order."""
    names: dict[str, None] = {}  # a dict keeps insertion order and drops repeats
    for run in runs:
        for key in run.history:
            if match := _REWARD_MEAN_RE.fullmatch(key):
                names.setdefault(match.group(1))
    ordered: list[str] = []
    for spec in next((run.recipe_rewards for run in runs if run.recipe_rewards), []):
        spelled = logged_names(spec)
        ordered += [n for n in names if n not in ordered and (n in spelled or n.split("_if_")[0] in spelled)]
    return ordered + [name for name in names if name not in ordered]


def logged_names(spec: str) -> set[str]:
    """The names a reward given as ``spec`` in a recipe may be logged under: a registry name's function name, the
    last part of an import path or file spelling (``rewards.py:brevity`` is logged as ``brevity``)."""
    from gdpo_trl.rewards import REWARD_FUNCS, reward_name

    names = {spec, spec.rpartition(":")[2] if ":" in spec else spec.rpartition(".")[2]}
    if spec in REWARD_FUNCS:
        names.add(reward_name(REWARD_FUNCS[spec]))
    return names


def smooth(values: list[float], window: int) -> list[float]:
    """Trailing moving average: point ``i`` becomes the mean of ``values[i - window + 1 : i + 1]``.

    Trailing (not centred) so a point never depends on later training steps. The first ``window - 1`` points
    average over the points available so far, so the output has the same length as the input. ``window=1``
    returns the values unchanged. The window counts logged points, not steps.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


def curve_stats(series: Series) -> CurveStats:
    """First and last value, trapezoid area under the curve over steps, and that area divided by the step span.

    The raw area grows with run length, so the area per step (the curve's mean level) is what compares across runs
    of different lengths. A single point has no span; its mean level is then its value.
    """
    if not series:
        raise ValueError("cannot summarise an empty series")
    auc = sum((s1 - s0) * (v0 + v1) / 2 for (s0, v0), (s1, v1) in pairwise(series))
    span = series[-1][0] - series[0][0]
    mean_level = auc / span if span > 0 else series[0][1]
    return CurveStats(first=series[0][1], last=series[-1][1], auc=auc, mean_level=mean_level)


def _summary_metrics(runs: list[Run]) -> list[tuple[str, str]]:
    """(log key, label) for every metric the summary covers: each reward, then the total."""
    return [(reward_key(name), name) for name in reward_names(runs)] + [(TOTAL_REWARD, "reward (total)")]


def _cell(text: str) -> str:
    # A '|' in a run name would split the Markdown cell.
    return text.replace("|", "\\|")


def summary_table(runs: list[Run]) -> str:
    """A Markdown table with, per run and per reward (plus the total), first/last value and AUC over steps."""
    header = [
        "run",
        "reward",
        "steps",
        "first",
        "last",
        "AUC (trapezoid over steps)",
        "mean level (AUC / step span)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|"]
    for run in runs:
        for key, label in _summary_metrics(runs):
            series = run.history.get(key)
            if not series:
                continue
            stats = curve_stats(series)
            numbers = [stats.first, stats.last, stats.auc, stats.mean_level]
            cells = [_cell(run.name), _cell(label), f"{series[0][0]}-{series[-1][0]}"] + [f"{x:.3f}" for x in numbers]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- the end-of-training summary (gdpo train) -------------------------------------------------------------------


def ends_window(num_logged: int) -> int:
    """How many logged steps to average at each end: one step's reward mean is noisy (a handful of prompts), so
    average up to 5, but never more than a quarter of the run so the two ends stay apart."""
    return max(1, min(5, num_logged // 4))


def reward_ends(log_history: list[dict], reward_names: list[str]) -> tuple[list[tuple[str, float, float]], int]:
    """``(metric, mean of the first w logged values, mean of the last w)`` for each reward's mean and the total
    ``reward``, and ``w`` (see :func:`ends_window`)."""
    history = history_from_log(log_history)
    series = {
        key: [value for _, value in history[key]]
        for key in [reward_key(name) for name in reward_names] + [TOTAL_REWARD]
        if history.get(key)
    }
    window = ends_window(min((len(v) for v in series.values()), default=0))
    return [(key, sum(v[:window]) / window, sum(v[-window:]) / window) for key, v in series.items()], window


CONFLICT_ENDS = ("conflict/share", "conflict/masked_share", "conflict/kept_share")


def conflict_ends(log_history: list[dict], window: int) -> list[tuple[str, float, float]]:
    """Rows as :func:`reward_ends`'s for the conflict metrics the run logged (every multi-reward run:
    ``conflict/share`` and ``conflict/masked_share``; GD2PO also ``conflict/kept_share``), averaged over the same
    ``window`` of logged steps at each end."""
    history = history_from_log(log_history)
    rows = []
    for key in CONFLICT_ENDS:
        values = [value for _, value in history.get(key, [])]
        if len(values) >= window:
            rows.append((key, sum(values[:window]) / window, sum(values[-window:]) / window))
    return rows


def format_ends(rows: list[tuple[str, float, float]], window: int) -> str:
    """A small plain-text table of :func:`reward_ends`: each metric at the start and the end of training."""
    width = max([len("metric"), *(len(metric) for metric, _, _ in rows)])
    first, last = ("first", "last") if window == 1 else (f"first {window}", f"last {window}")
    lines = [f"{'metric':<{width}}  {first:>8}  {last:>8}" + ("   (mean over logged steps)" if window > 1 else "")]
    lines += [f"{metric:<{width}}  {a:>8.3f}  {b:>8.3f}" for metric, a, b in rows]
    if not rows:
        lines.append("(no reward was logged: set logging_steps to log them)")
    return "\n".join(lines)
