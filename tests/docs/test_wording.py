"""README.md and docs/*.md describe the package as it is, not how it came to be: no sentence speaks of who ran what
and when, issues, earlier versions of the code or the docs, commits, scripts that are gone, or the history of the
machine the figures were measured on. History belongs in git; a measured figure names its machine and load in its
own words, and its date and command in its HTML marker (tests/docs/test_figures.py), which this test does not read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]

# (pattern, what it speaks of); matched case-insensitively against the text outside HTML comments.
PATTERNS = [
    (r"\bearlier (version|session|commit|code|comparison|table)s?\b", "an earlier version"),
    (r"\ban earlier run(,| at| had| gave| measured| whose| of the)", "an earlier run of the project's own"),
    (r"\b(first|previous|old|older) versions?\b", "an earlier version"),
    (r"\bcode of then\b|\bof the then\b", "the code as it was"),
    (r"\bcommit [0-9a-f]{7,40}\b|\bcommit of\b|\ban earlier commit\b", "a commit"),
    (r"\b(in|at|since|before|after) (?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", "a commit"),
    (r"\bno longer exists?\b|\bno longer (reported|shipped|used)\b", "something that is gone"),
    (r"\bissue #?\d+\b|\bthe issue'?s?\b|\bfiled\b", "an issue"),
    (r"\b(this|an earlier|earlier|previous|the first|another) session\b|\bproject's sessions\b", "a work session"),
    (r"\bsessions so far\b", "a work session"),
    (r"\bdevelopment machine\b|\bdev machine\b|\bthis project's (busy )?\d-core\b", "the development machine"),
    (r"\bno gpu was (lent|available)\b|\blent to\b", "the development machine's history"),
    (r"\b(logs|figures) (were|was) not kept\b|\bwas removed\b|\bwere removed\b", "what was dropped"),
    (r"\bused to (fail|be|print|take|refuse)\b", "how it behaved before"),
    (r"\bbefore the (change|fix)\b|\bpre-change\b|\bnow fixed\b", "a change"),
    (r"\bmeasured earlier\b|\bnot re-?run since\b|\bnot measured yet\b|\bhas not run on a gpu yet\b", "history"),
    (r"\b(yesterday|today|this morning|last night)\b", "when it happened"),
    (r"\bwe (wrote|changed|fixed|removed|rewrote|added)\b", "who changed what"),
    (r"\bworked example of the issue\b|\bthe issue's worked example\b", "an issue"),
]
COMMENT = re.compile(r"<!--.*?-->", re.S)


def findings(text: str) -> list[tuple[int, str, str]]:
    """``(line, match, what it speaks of)`` for each development-history phrase of ``text``."""
    text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # keep the line numbers
    found = []
    for pattern, what in PATTERNS:
        for match in re.finditer(pattern, text, re.I):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(0), what))
    return sorted(found)


@pytest.mark.parametrize("rel", FILES)
def test_no_sentence_speaks_of_how_the_project_was_developed(rel):
    found = findings((ROOT / rel).read_text(encoding="utf-8"))
    assert not found, f"{rel} speaks of its own history:\n" + "\n".join(
        f"{rel}:{line}: {match!r} ({what})" for line, match, what in found
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "with the code of then (commit 900cfe2), format 0.511",
        "measured with a script that no longer exists",
        "The issue's worked example (G = 2)",
        "An earlier session's run measured 0.519",
        "no GPU was lent to this project's sessions so far",
        "This command used to fail now and then",
        "on the 2-core development machine",
        "an earlier run, whose logs were not kept",
    ],
)
def test_the_patterns_catch_the_known_phrases(sentence):
    assert findings(sentence), sentence


def test_the_patterns_leave_plain_descriptions_alone():
    plain = (
        "GDPO normalizes each reward within its group. Measured on a 2-core CPU machine under a load average of 4 "
        "<!-- measured 2026-11-23, 2-core CPU dev machine: make demo -->. The tests skip the Slurm test without "
        "Slurm."
    )
    assert findings(plain) == []
