"""docs/training.md and docs/your_task.md state one data contract: a local file (CSV included), folder or Hub id
whose rows have a ``prompt`` column, or GSM8K's ``question`` and ``answer`` (gdpo_trl.data.formats.choose_format)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", ["docs/training.md", "docs/your_task.md"])
def test_the_dataset_name_section_states_the_whole_contract(page):
    text = (ROOT / page).read_text()
    start = text.index("`dataset_name` takes")
    section = text[text.rfind("\n#", 0, start) : text.find("\n#", start)]  # the section that says it
    for words in (r"\.csv", r"`prompt`", r"`question`\s+and\s+`answer`", r"folder", r"Hub"):
        assert re.search(words, section), f"{page}: the section on dataset_name does not say {words}"
