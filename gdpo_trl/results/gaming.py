"""The gaming watch after the fact (docs/gaming.md): :func:`gdpo_trl.core.gaming.scan` on saved runs.

A saved run is a Trainer state (an output folder, a checkpoint folder or its ``trainer_state.json``) or a log of runs
as the studies keep them (``docs/results/logs/<study>.json.gz``: ``{"runs": {name: log_history}}``, gzipped or
not). Each run is judged on its own ``log_history`` by the same rule the watch applies in a run.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path

from gdpo_trl.core.gaming import GamingCheck, GamingRule, scan, warning_text
from gdpo_trl.results.runs import find_trainer_state


@dataclass(frozen=True)
class RunVerdict:
    """Where the rule fires on one saved run."""

    name: str
    source: str
    checks: list[GamingCheck]

    @property
    def fired(self) -> list[int]:
        return [check.step for check in self.checks if check.fired]

    @property
    def judged(self) -> int:
        """How many logged steps the rule could judge (from the window-th on, with two rewards and a length)."""
        return len(self.checks)

    def line(self) -> str:
        """One line: the run, the steps where the rule fires (or never), and why at the first of them."""
        if not self.checks:
            return f"{self.name}: not judged (fewer logged steps than the window, one reward, or no mean length)"
        if not self.fired:
            return f"{self.name}: never fires ({self.judged} steps judged)"
        first = next(check for check in self.checks if check.fired)
        why = warning_text(first).removeprefix("gaming watch: ").split(": the policy")[0]
        steps = ", ".join(map(str, self.fired))
        return f"{self.name}: fires at step {steps} ({self.judged} steps judged); first: {why}"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "judged": self.judged,
            "fired": self.fired,
            "checks": [
                {"step": c.step, "hardest": c.hardest, "risen": list(c.risen), **c.metrics()} for c in self.checks
            ],
        }


def _read_json(path: Path):
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not readable JSON ({type(error).__name__}): give a run's output folder, "
                         "its trainer_state.json or a study's log of runs (.json or .json.gz)") from None  # fmt: skip


def saved_histories(path: str | os.PathLike) -> list[tuple[str, str, list[dict]]]:
    """``(name, source, log_history)`` for each run ``path`` holds: one for a Trainer state, one per run for a log
    of runs.

    Raises:
        FileNotFoundError: for a path that is neither (named with what was looked for).
        ValueError: for a file that is not JSON or holds no ``log_history`` and no ``runs``.
    """
    path = Path(path)
    if path.is_file() and path.name != "trainer_state.json":
        data = _read_json(path)
        runs = data.get("runs") if isinstance(data, dict) else None
        if isinstance(runs, dict) and all(isinstance(h, list) for h in runs.values()):
            return [(name, str(path), history) for name, history in runs.items()]
        if isinstance(data, dict) and isinstance(data.get("log_history"), list):
            return [(path.parent.name, str(path), data["log_history"])]
        raise ValueError(f"{path} holds neither a 'log_history' (a trainer state) nor 'runs' (a log of runs)")
    state_file = find_trainer_state(path)
    data = _read_json(state_file)
    history = data.get("log_history") if isinstance(data, dict) else None
    if not isinstance(history, list):
        raise ValueError(f"{state_file} has no 'log_history' list; is it a Trainer state file?")
    folder = state_file.parent
    name = folder.parent.name if folder.name.startswith("checkpoint-") else folder.name
    return [(name, str(state_file), history)]


def judge(paths: list[str | os.PathLike], rule: GamingRule | None = None) -> list[RunVerdict]:
    """The rule (default: the watch's defaults) on every run of every path, in order."""
    rule = rule or GamingRule()
    return [
        RunVerdict(name, source, scan(history, rule))
        for path in paths
        for name, source, history in saved_histories(path)
    ]
