"""Every documented shell command is a tested command.

The structure tests (fast, in ``make test``) check that every shell command of README.md and docs/*.md sits in a
fenced ``bash`` block, runnable or marked ``<!-- gpu -->``/``<!-- slow -->`` (:mod:`tests.helpers.doc_blocks`), that
no two runnable examples write to one folder, and that the GPU recipes the docs launch parse and keep their batch.

The run tests (marker ``docs``; ``make test-docs``) are in test_documented_runs.py.
"""

from __future__ import annotations

import os

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
