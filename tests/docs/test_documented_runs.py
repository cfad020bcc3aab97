"""Every runnable documented shell command runs (marker ``docs``; ``make test-docs``): the blocks the structure tests
of test_documented_commands.py find, run the way a reader would: in reading order, and where the docs show what a
command prints (:data:`PRINTS`), they check those figures against its output; with bash, in a fresh clone of this
checkout's HEAD, after the quick start's ``make demo``, each within ``$GDPO_DOCS_BLOCK_LIMIT`` seconds (300). The
clone's ``.venv/bin`` holds ``gdpo``, ``python`` and ``accelerate`` wrappers that run the clone's code with the Python
running the tests (and an ``activate`` script), so nothing is installed. ``make docs-slow`` (``GDPO_DOCS_SLOW=1``)
runs the slow blocks too, with the real ``.venv`` the quick start builds, in no time limit but a generous one.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.doc_blocks import (
    ROOT,
    blocks,
    pages,
)

SLOW = os.environ.get("GDPO_DOCS_SLOW") == "1"
LIMIT = float(os.environ.get("GDPO_DOCS_BLOCK_LIMIT", 3600 if SLOW else 300))
RUN = [b for b in blocks() if b.marker is None or (SLOW and b.marker == "slow")]


_WRAPPER = '#!/bin/sh\nexport PYTHONPATH={root}${{PYTHONPATH:+:$PYTHONPATH}}\nexec {python} {args} "$@"\n'


def _fake_venv(root: Path) -> None:
    """``.venv/bin`` as ``make install`` would leave it, but running the clone's code with this Python."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, args in (
        ("python", ""),
        ("gdpo", "-m gdpo_trl.cli.main"),
        ("accelerate", "-m accelerate.commands.accelerate_cli"),
    ):
        script = bin_dir / name
        script.write_text(_WRAPPER.format(root=shlex.quote(str(root)), python=shlex.quote(sys.executable), args=args))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "activate").write_text(f'export VIRTUAL_ENV="{root}/.venv"\nexport PATH="{bin_dir}:$PATH"\n')
    (root / ".venv" / ".installed").touch()  # newer than pyproject.toml: make does not reinstall


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs") / "gdpo-trl"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(root)], check=True)
    if not SLOW:  # the slow run builds the real .venv in its first block (the quick start)
        _fake_venv(root)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "PATH": os.pathsep.join([str(root / ".venv" / "bin"), os.environ["PATH"]]),
        "HF_HUB_OFFLINE": "1",
    }
    if not SLOW:
        _run(root, env, "make demo", "make demo (the quick start)")  # the slow run has it in the quick-start block
    return root, env


def _readme_rows(section: str, prefix: str = "| ") -> list[str]:
    """The table rows of a section of the README or a docs page, the first holding it (up to the next heading of the
    same or a higher level)."""
    text = next(t for t in (page.text for page in pages()) if section in t)
    start = text.index(section)
    level = section.split(" ")[0]
    end = min(
        (
            i
            for i in (text.find("\n" + h + " ", start + 1) for h in ("#" * n for n in range(1, len(level) + 1)))
            if i > 0
        ),
        default=len(text),
    )
    return [line for line in text[start:end].splitlines() if line.startswith(prefix) and "---" not in line]


def _advantage_tables(root: Path, output: str) -> list[str]:
    """The README's two tables (one row per method) are the script's two tables (one column per method)."""
    printed: list[dict[str, list[str]]] = []
    for table in output.split("\n\n"):
        lines = [line for line in table.splitlines() if line.startswith("|") and "---" not in line]
        if lines and lines[0].startswith(("| G |", "| K |")):
            head = [c.strip() for c in lines[0].strip("|").split("|")]
            cols = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
            printed.append({name: [row[i] for row in cols] for i, name in enumerate(head) if i})
    rows = [r for r in _readme_rows("## Advantage collapse") if r.split("|")[1].strip().startswith(("GRPO", "GDPO"))]
    assert len(printed) == 2 and len(rows) == 6, (printed, rows)
    problems = []
    for index, row in enumerate(rows):
        name, *cells = [c.strip() for c in row.strip("|").split("|")]
        if printed[index // 3].get(name.replace("without", "w/o")) != cells:
            problems.append(f"README's row {row!r} differs from the script's {printed[index // 3]}")
    return problems


def _demo_summary(root: Path, output: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # The fence after the quick start's "What it printed", however the prose around it wraps.
    shown = text[re.search(r"What it\s+printed", text).start() :].split("```")[1].splitlines()
    rows = [line for line in shown if line.startswith(("rewards/", "reward "))]
    assert len(rows) == 4, shown
    return [f"README's `make demo` line {row!r} was not printed" for row in rows if row not in output]


def _eval_demo(root: Path, output: str) -> list[str]:
    import json

    problems = []
    for which in ("before", "after"):
        committed = json.loads((ROOT / "docs/results/logs/eval_demo" / f"{which}.json").read_text())["metrics"]
        measured = json.loads((root / f"outputs/cpu-gdpo-{which}/summary.json").read_text())["metrics"]
        if measured != committed:
            problems.append(f"make eval-demo {which}: {measured} != the README's (committed) {committed}")
    return problems


# What a documented command prints, checked against the figures the docs show for it.
PRINTS = {
    "python scripts/advantage_groups.py": _advantage_tables,
    "make demo": _demo_summary,
    "make eval-demo": _eval_demo,
}


def _check_prints(root: Path, code: str, output: str, name: str) -> None:
    problems = [p for command, check in PRINTS.items() if command in code.splitlines() for p in check(root, output)]
    assert not problems, f"{name}: the docs' figures differ from what it printed:\n" + "\n".join(problems)


def _run(root: Path, env: dict, code: str, name: str) -> float:
    start = time.monotonic()
    try:
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=LIMIT
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name} ran longer than {LIMIT:.0f} s:\n{code}")
    seconds = time.monotonic() - start
    print(f"\n[docs] {name}: {seconds:.0f} s", flush=True)
    assert result.returncode == 0, (
        f"{name} exited {result.returncode}:\n{code}\n--- output ---\n{result.stdout[-3000:]}{result.stderr[-5000:]}"
    )
    _check_prints(root, code, result.stdout + result.stderr, name)
    return seconds


@pytest.mark.docs
@pytest.mark.parametrize("block", RUN, ids=lambda b: b.name)
def test_documented_block_runs(block, clone):
    root, env = clone
    _run(root, env, block.code, block.name)


@pytest.mark.docs
def test_nothing_lands_outside_outputs(clone):
    """After every block: no file the clone does not track, outside outputs/ (and the .venv the quick start makes; in
    the slow run, what make install and the test targets build: the egg-info, bytecode, .pytest_cache, .venv-vllm)."""
    root, _ = clone
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    built = (".pytest_cache/", ".venv-vllm/", "gdpo_trl.egg-info/")  # make install's and the test targets' own
    stray = [
        line
        for line in status
        if not line[3:].startswith(("outputs/", ".venv/", *(built if SLOW else ())))
        and not (SLOW and "__pycache__/" in line)
    ]
    assert not stray, "\n".join(stray)
