"""The documentation's shell commands: every fenced ``bash`` block of README.md and docs/*.md, in reading order.

A block is runnable unless the HTML comment on the line just above it marks it ``<!-- gpu -->`` (needs GPUs: its
recipes are parsed and sized by a test instead), ``<!-- slow -->`` (longer than five minutes here, or installs
software: ``make docs-slow`` runs it) or ``<!-- data -->`` (needs data a clone does not ship, GSM8K's files as
``DATA/``: docs/real_model.md's measured run; tests/studies/test_real_model.py checks what it wrote). ``<!-- runnable -->`` marks the Python blocks tests/docs/test_readme.py runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Reading order: the README, then the guides in the order the README points to them.
DOCS = (
    "README.md",
    "docs/quickstart.md",
    "docs/training.md",
    "docs/evaluation.md",
    "docs/process_rewards.md",
    "docs/toolcall.md",
    "docs/agents.md",
    "docs/gsm8k_fidelity.md",
    "docs/paper_toolkit.md",
    "docs/studies.md",
    "docs/measurements.md",
    "docs/layout.md",
    "docs/gd2po.md",
    "docs/real_model.md",
    "docs/qwen.md",
    "docs/gaming.md",
    "docs/your_task.md",
    "docs/pilot.md",
    "docs/rules.md",
)
MARKERS = ("gpu", "slow", "runnable", "data")
_MARKER = re.compile(r"<!--\s*(\w+)\s*-->")
_FENCE = re.compile(r"^\s*```\s*([\w-]*)\s*$")
# What a shell command starts with (an inline code span starting so is a command, not a name or a flag).
COMMAND = re.compile(
    r"^(?:[A-Z_]+=\S*\s+)*(?:gdpo \w+\s+\S|accelerate \w|python3? \S|pip \w|make \S|sbatch |trl |torchrun |bash |"
    r"source |git |\.venv\S*/bin/)"
)
# Folders the Makefile's targets write, for the output-folder checks (the Makefile is the source; a test compares).
MAKE_WRITES = {
    "demo": ["outputs/cpu-gdpo"],
    "eval-demo": ["outputs/cpu-gdpo-before", "outputs/cpu-gdpo-after"],
}


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    marker: str | None
    code: str

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"

    def commands(self) -> list[str]:
        """The block's commands: backslash continuations joined, comments and blank lines left out."""
        joined = re.sub(r"\\\n\s*", " ", self.code)
        out = []
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(" ".join(shlex.quote(w) if w != "&" else w for w in words))
        return out


@dataclass(frozen=True)
class Page:
    path: str
    text: str

    def lines_outside_fences(self) -> list[tuple[int, str]]:
        out, fenced = [], False
        for number, line in enumerate(self.text.splitlines(), 1):
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                out.append((number, line))
        return out


def pages(root: Path = ROOT) -> list[Page]:
    return [Page(name, (root / name).read_text(encoding="utf-8")) for name in DOCS]


def blocks(root: Path = ROOT, languages: tuple[str, ...] | None = ("bash",)) -> list[Block]:
    """The fenced blocks of :data:`DOCS` in reading order (only ``languages``; ``None``: every block)."""
    found = []
    for page in pages(root):
        lines = page.text.splitlines()
        start = None
        for number, line in enumerate(lines, 1):
            fence = _FENCE.match(line)
            if not fence:
                continue
            if start is None:
                start, language = number, fence.group(1)
                continue
            above = lines[start - 2].strip() if start > 1 else ""
            marker = m.group(1) if (m := _MARKER.fullmatch(above)) else None
            if languages is None or language in languages:
                found.append(Block(page.path, start, language, marker, "\n".join(lines[start : number - 1])))
            start = None
    return found


def words(command: str) -> list[str]:
    """``command``'s words, leading ``VAR=value`` assignments and a trailing ``&`` left out."""
    tokens = shlex.split(command)
    while tokens and re.fullmatch(r"[A-Za-z_]+=.*", tokens[0]):
        tokens.pop(0)
    return tokens[:-1] if tokens[-1:] == ["&"] else tokens


def flag(tokens: list[str], name: str) -> str | None:
    """The value of ``--name value`` or ``--name=value`` in ``tokens`` (the last one given), else None."""
    value = None
    for i, token in enumerate(tokens):
        if token == name and i + 1 < len(tokens):
            value = tokens[i + 1]
        elif token.startswith(name + "="):
            value = token.split("=", 1)[1]
    return value


def recipe_output_dir(config: str, root: Path = ROOT) -> str | None:
    path = root / config
    if not path.is_file():  # a shipped recipe by name: --config cpu/your_task
        path = root / "recipes" / config / "config.yaml"
    match = re.search(r"^output_dir:\s*(\S+)", path.read_text(encoding="utf-8"), re.M)
    return match.group(1) if match else None


def writes(command: str, root: Path = ROOT) -> list[str]:
    """The folders (or files) ``command`` writes its results to, as far as the docs' commands go."""
    tokens = words(command)
    if "--help" in tokens or "-h" in tokens or "--help-all" in tokens:
        return []
    if tokens[:2] == ["gdpo", "train"] or "gdpo_trl.cli.train" in tokens:
        config = flag(tokens, "--config")
        return [flag(tokens, "--output_dir") or (recipe_output_dir(config, root) if config else None) or "?"]
    if tokens[:2] == ["gdpo", "eval"]:
        return [flag(tokens, "--output_dir") or "?"]
    if tokens[:2] == ["gdpo", "compare"]:
        return [flag(tokens, "--output_dir") or flag(tokens, "--out-dir") or "outputs/compare"]
    if tokens[:2] == ["gdpo", "plot"]:
        return [flag(tokens, "--output_file") or flag(tokens, "--out") or "outputs/runs.png"]
    if tokens[:2] == ["python", "scripts/advantage_groups.py"]:
        return [flag(tokens, "--out") or "outputs/advantage_groups.png"]
    if tokens[:3] == ["python", "-m", "gdpo_trl.tasks.toolcall_task"]:
        return tokens[3:4]
    if tokens[:1] == ["make"]:
        return [path for target in tokens[1:] for path in MAKE_WRITES.get(target, [])]
    return []


def inline_spans(page: Page) -> list[tuple[int, str, bool]]:
    """``(line, text, in_table)`` for each inline code span outside fenced blocks (a span may wrap a line)."""
    kept = dict(page.lines_outside_fences())
    lines = [kept.get(n, "") for n in range(1, len(page.text.splitlines()) + 1)]
    text = "\n".join(lines)
    spans = []
    for match in re.finditer(r"(`+)(.+?)\1", text, re.S):
        line = text.count("\n", 0, match.start()) + 1
        spans.append((line, " ".join(match.group(2).split()), lines[line - 1].lstrip().startswith("|")))
    return spans


def is_command(text: str) -> bool:
    return bool(COMMAND.match(text))
