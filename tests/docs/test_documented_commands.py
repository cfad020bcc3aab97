"""Every documented shell command is a tested command.

The structure tests (fast, in ``make test``) check that every shell command of README.md and docs/*.md sits in a
fenced ``bash`` block, runnable or marked ``<!-- gpu -->``/``<!-- slow -->`` (:mod:`tests.helpers.doc_blocks`), that
no two runnable examples write to one folder, and that the GPU recipes the docs launch parse and keep their batch.

The run tests (marker ``docs``; ``make test-docs``) run the runnable blocks the way a reader would: in reading order,
and where the docs show what a command prints (:data:`PRINTS`), they check those figures against its output;
with bash, in a fresh clone of this checkout's HEAD, after the quick start's ``make demo``, each within
``$GDPO_DOCS_BLOCK_LIMIT`` seconds (300). The clone's ``.venv/bin`` holds ``gdpo``, ``python`` and ``accelerate``
wrappers that run the clone's code with the Python running the tests (and an ``activate`` script), so nothing is
installed. ``make docs-slow`` (``GDPO_DOCS_SLOW=1``) runs the slow blocks too, with the real ``.venv`` the quick start
builds, in no time limit but a generous one.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.doc_blocks import (
    DOCS,
    MARKERS,
    ROOT,
    blocks,
    flag,
    inline_spans,
    is_command,
    pages,
    words,
    writes,
)

SLOW = os.environ.get("GDPO_DOCS_SLOW") == "1"
LIMIT = float(os.environ.get("GDPO_DOCS_BLOCK_LIMIT", 3600 if SLOW else 300))
BASH = blocks()
RUN = [b for b in BASH if b.marker is None or (SLOW and b.marker == "slow")]
DEMO = "outputs/cpu-gdpo"  # what `make demo` writes: examples may read it, never write it
PAPER_RECIPES = "recipes/Qwen2.5-1.5B-Instruct/"
PAPER_BATCH = 512  # completions per optimizer step in the paper's runs: 32 prompts x 16, or 128 x 4 (tool calling)


def _documented() -> list[list[str]]:
    return [words(command) for block in BASH for command in block.commands()]


# --- structure: fast, part of `make test` -------------------------------------------------------------------------


def test_every_guide_is_read():
    assert sorted(DOCS[1:]) == sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
    assert len(RUN) >= 10 and any(b.marker == "gpu" for b in BASH) and any(b.marker == "slow" for b in BASH)


def test_markers_sit_on_the_line_above_a_block():
    """A marker is one of the known ones and directly above a fence (a typo or a blank line would unmark a block)."""
    every = blocks(languages=None)
    placed = {(b.path, b.line - 1) for b in every if b.marker}
    for page in pages():
        for number, line in enumerate(page.text.splitlines(), 1):
            if line.strip().startswith("<!--") and "-->" in line and len(line.strip()) < 30:
                assert (page.path, number) in placed, f"{page.path}:{number}: {line.strip()} is not above a block"
    for block in every:
        assert block.marker in (None, *MARKERS), block.name
        if block.language == "bash":
            assert block.marker != "runnable", f"{block.name}: bash blocks run unless marked gpu, slow or data"
        elif block.marker is not None:
            assert block.marker == "runnable" and block.language == "python", block.name


def test_shell_commands_are_in_bash_blocks():
    """No command in another kind of block, an indented block, a table, or inline in prose unless it names (a prefix
    of) a command a bash block shows."""
    documented = _documented()
    problems = []
    for block in blocks(languages=None):
        if block.language in ("sh", "shell", "console", "zsh"):
            problems.append(f"{block.name}: a ```{block.language} block; use ```bash")
        elif block.language in ("", "text"):
            problems += [f"{block.name}: command {line!r}" for line in block.code.splitlines() if is_command(line)]
    for page in pages():
        for number, line in page.lines_outside_fences():
            if line.startswith("    ") and is_command(line.strip()):
                problems.append(f"{page.path}:{number}: indented command {line.strip()!r}")
        for number, span, in_table in inline_spans(page):
            if not is_command(span):
                continue
            try:
                span_words = words(span)
            except ValueError:
                span_words = []
            named = any(span_words and cmd[: len(span_words)] == span_words for cmd in documented)
            if in_table and not (named and span_words[0] == "make" and len(span_words) == 2):
                problems.append(f"{page.path}:{number}: command in a table: `{span}`")
            elif not named:
                problems.append(f"{page.path}:{number}: command outside a bash block: `{span}`")
    assert not problems, "\n".join(problems)


def test_examples_write_to_folders_of_their_own():
    """Each runnable or slow example writes under outputs/, to a folder no other example uses, never the demo's."""
    seen: dict[str, str] = {}
    problems = []
    for block in (b for b in BASH if b.marker not in ("gpu", "data")):
        for command in block.commands():
            for path in writes(command):
                if path == "?" or not path.startswith("outputs/"):
                    problems.append(f"{block.name}: {command!r} writes {path!r}, not a folder of outputs/")
                elif path == DEMO and command != "make demo":
                    problems.append(f"{block.name}: {command!r} writes {DEMO}, which `make demo` writes")
                elif path in seen:
                    problems.append(f"{block.name}: {command!r} writes {path}, as {seen[path]} does")
                seen[path] = block.name
    assert not problems, "\n".join(problems)


def test_makefile_targets_write_what_the_checks_assume():
    from tests.helpers.doc_blocks import MAKE_WRITES

    makefile = (ROOT / "Makefile").read_text()
    for paths in MAKE_WRITES.values():
        for path in paths:
            assert path in makefile or path == DEMO, path
    assert "--output_dir outputs/cpu-gdpo-before" in makefile and "--output_dir outputs/cpu-gdpo-after" in makefile


def test_config_paths_exist():
    for block in BASH:
        for command in block.commands():
            tokens = words(command)
            for name in ("--config", "--recipe", "--config_file"):
                if (path := flag(tokens, name)) is not None:
                    shipped = ROOT / "recipes" / path / "config.yaml"  # a recipe by name: gdpo train --config cpu/gdpo
                    assert (ROOT / path).is_file() or shipped.is_file(), f"{block.name}: {name} {path} does not exist"
            if (name := flag(tokens, "--accelerate_config")) is not None:
                assert (ROOT / "accelerate_configs" / f"{name}.yaml").is_file() or (ROOT / name).is_file(), name
            for token in tokens:
                if token.startswith(("scripts/", "recipes/")):
                    assert (ROOT / token).exists(), f"{block.name}: {token} does not exist"


def _training_launches(command: str) -> tuple[list[str], int] | None:
    """``(recipe argv, processes)`` of a GPU training command: ``gdpo train``, ``accelerate launch -m
    gdpo_trl.cli.train`` or ``sbatch ... scripts/slurm_train.sh``; None for anything else."""
    from gdpo_trl.cli.first_checks import split_launch

    tokens = words(command)
    if tokens[:2] == ["gdpo", "train"]:
        recipe, launch = split_launch(tokens[2:], None)  # the live dataclasses' flags
    elif tokens[:2] == ["accelerate", "launch"] and "gdpo_trl.cli.train" in tokens:
        at = tokens.index("gdpo_trl.cli.train")
        recipe, launch = tokens[at + 1 :], tokens[2 : at - 1]
    elif tokens[:1] == ["sbatch"]:
        at = next(i for i, t in enumerate(tokens) if t.endswith("slurm_train.sh"))
        nodes, per_node = int(flag(tokens, "--nodes")), int(flag(tokens, "--gpus-per-node"))
        return ["--config", *tokens[at + 1 :]], nodes * per_node
    else:
        return None
    processes = flag(launch, "--num_processes")
    if processes is None:
        config = flag(launch, "--config_file")
        processes = yaml.safe_load((ROOT / config).read_text())["num_processes"] if config else 1
    return recipe, int(processes)


@pytest.mark.parametrize(
    "command",
    [c for b in BASH if b.marker == "gpu" for c in b.commands() if _training_launches(c)],
    ids=lambda c: " ".join(words(c)[:6])[:80],
)
def test_gpu_training_commands_parse_and_keep_their_batch(command):
    """Parsed as gdpo train parses them (with ``--use_cpu true``: bf16 needs a GPU), and sized: the completions per
    optimizer step fill whole groups, and the paper's recipes keep its 512 completions per step on every layout."""
    from gdpo_trl.recipe.arguments import parse_args

    recipe, processes = _training_launches(command)
    _, training, _ = parse_args([*recipe, "--use_cpu", "true"])
    per_step = training.per_device_train_batch_size * training.gradient_accumulation_steps * processes
    assert per_step % training.num_generations == 0, (per_step, training.num_generations)
    if flag(recipe, "--config").startswith(PAPER_RECIPES):
        assert per_step == PAPER_BATCH, f"{per_step} completions per step on {processes} processes"


# --- running them: `make test-docs` (and `make docs-slow`) ----------------------------------------------------------

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
    shown = text[text.index("What it printed (`make demo`") :].split("```")[1].splitlines()
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
