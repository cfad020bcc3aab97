"""Every Python block of the README marked ``<!-- runnable -->`` runs, offline, as written: with the Python that runs
the tests, in its own temporary folder, with this checkout first on PYTHONPATH. (Shell blocks are run by
tests/docs/test_documented_commands.py.)
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- runnable -->"
BLOCK = re.compile(re.escape(MARKER) + r"\n```(python)\n(.*?)\n```", re.S)


def runnable_blocks() -> list[tuple[str, str, int]]:
    """``(language, code, line)`` for each marked block of README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in BLOCK.finditer(text)]


def test_marked_blocks_are_found():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = runnable_blocks()
    assert len(blocks) >= 2, f"README.md has {len(blocks)} {MARKER} blocks: the Python examples are gone or unmarked"
    assert len(blocks) == text.count(MARKER)  # every marker sits right above a python fence
    assert {language for language, _, _ in blocks} == {"python"}


@pytest.mark.slow
@pytest.mark.parametrize(("language", "code", "line"), runnable_blocks(), ids=lambda x: str(x)[:20])
def test_readme_block_runs(language, code, line, tmp_path):
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"README.md line {line}:\n{result.stderr[-3000:]}"
