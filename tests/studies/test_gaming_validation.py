"""The gaming watch's validation table (docs/results/gaming_watch.{md,json}, studies/gaming_validation.py): written
from the committed logs by the committed rule, whose defaults were committed before the table."""

import json
import re
import subprocess

import pytest

from gdpo_trl.core.gaming import GamingRule
from studies import gaming_validation
from tests.helpers.studies import RESULTS, ROOT


def test_the_committed_table_is_what_the_rule_gives_on_the_committed_logs(tmp_path):
    assert gaming_validation.main(["--out", str(tmp_path)]) == 0
    for name in ("gaming_watch.md", "gaming_watch.json"):
        assert (tmp_path / name).read_text() == (RESULTS / name).read_text(), name


def test_it_fires_on_some_runs_and_not_on_every_run():
    rows = json.loads((RESULTS / "gaming_watch.json").read_text())
    fired = {(row["study"], row["run"]) for row in rows if row["fired"]}
    h9 = [row for row in rows if row["study"] == "H9"]
    assert len(h9) == 6 and all(row["fired"] for row in h9)  # every H9 run traded the reasoning for the layout
    assert 0 < len(fired) < len(rows)
    assert {row["study"] for row in rows} >= {"H2", "H4", "H7", "H8", "H9"}


def _git(*args):
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"needs the repository's git history (git {' '.join(args)} failed: {done.stderr.strip()})")
    return done.stdout


def test_the_rule_was_committed_before_the_table_with_the_defaults_in_use():
    rule = gaming_validation.RULE_COMMIT
    first_table = _git("log", "--diff-filter=A", "--format=%H", "--", "docs/results/gaming_watch.md").split()
    assert first_table, "docs/results/gaming_watch.md is not in the history"
    assert subprocess.run(["git", "merge-base", "--is-ancestor", rule, first_table[-1]], cwd=ROOT).returncode == 0
    assert _git("rev-parse", f"{rule}") != _git("rev-parse", first_table[-1])
    fixed = _git("show", f"{rule}:docs/gaming.md")
    defaults = re.search(r"GamingRule\((.*)\)", fixed).group(1)
    assert defaults == ", ".join(f"{k}={v}" for k, v in vars(GamingRule()).items())
