"""What a newcomer reads first says what happens: no paragraph stops mid-sentence, every command's section of
docs/evaluation.md shows the command, the quick start describes no warm-start build (the warm start ships), and
README's third use links the notebooks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*```")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """``(line, last line)`` of each prose paragraph: fences, tables and headings left out, HTML comments dropped."""
    found, block, in_fence = [], [], False
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if FENCE.match(line):
            in_fence, block = not in_fence, []
            continue
        if in_fence:
            continue
        prose = re.sub(r"<!--.*?-->", "", line).rstrip()
        if prose.strip():
            block.append((number, prose))
        elif block:
            last = block[-1]
            if not last[1].lstrip().startswith(("|", "#")):
                found.append(last)
            block = []
    return found


def test_a_paragraph_ending_on_a_semicolon_is_found():
    text = "A first sentence;\n\n```bash\ngdpo eval --a,\n```\n\n| a | b, |\n\nA whole one. <!-- a note; -->\n"
    assert [line for line, last in paragraphs(text) if last.endswith((";", ","))] == [1]


@pytest.mark.parametrize("rel", FILES)
def test_no_paragraph_stops_mid_sentence(rel):
    ends = [(line, last[-60:]) for line, last in paragraphs((ROOT / rel).read_text()) if last.endswith((";", ","))]
    assert ends == [], f"{rel}: a paragraph ends on ';' or ','"


def test_every_command_of_the_evaluation_page_is_shown():
    """Each `gdpo X` section of docs/evaluation.md holds a bash block that runs `gdpo X` (it had none for compare)."""
    text = (ROOT / "docs/evaluation.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)
    commands = [re.match(r"`gdpo (\w+)`", s) for s in sections]
    assert [m.group(1) for m in commands if m] == ["eval", "plot", "compare"]
    for section, match in zip(sections, commands, strict=True):
        if match:
            blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
            assert any(re.search(rf"^gdpo {match.group(1)}\b", b, re.M) for b in blocks), match.group(0)


def test_the_quick_start_describes_no_warm_start_build():
    """`builtin:warmstart` ships with the package: the quick start's first run trains at once."""
    from gdpo_trl.core.plugins import resolve_model

    assert Path(resolve_model("builtin:warmstart")).is_relative_to(ROOT / "gdpo_trl" / "models" / "shipped")
    commands = (ROOT / "docs/quickstart.md").read_text().split("## The commands")[1].split("\n## ")[0]
    assert not re.search(r"warm start'?s? build|build(ing)? (of )?the warm start", commands)


def test_readme_links_the_notebooks_from_its_third_use():
    third = (ROOT / "README.md").read_text().split("**3. ")[1].split("## ")[0]
    for notebook in sorted((ROOT / "examples/notebooks").glob("*.ipynb")):
        assert f"](examples/notebooks/{notebook.name})" in third
