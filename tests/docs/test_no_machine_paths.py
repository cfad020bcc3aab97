"""No folder of anyone's machine in the docs or the committed JSON under docs/: paths are written relative to the
repository (``outputs/...``), or as the variables the docs define (``DATA``: the GSM8K folder; ``$STUDIES``: a
study's folder outside the tree, docs/results/qwen_gdpo_grpo_log.md; ``~/.cache/gdpo_trl``: the model cache's
default, ``$GDPO_TRL_CACHE``)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:root|work|home/[\w.-]+)/")


def test_no_machine_path_in_the_docs_or_their_json():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "docs").rglob("*.json"))]
    assert len(files) > 50
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert not found, "machine paths (write them relative, or as DATA / $STUDIES):\n" + "\n".join(found)


def test_the_pattern_sees_the_paths_it_is_for():
    assert MACHINE_PATH.search('"output_dir": "/root/gdpo-studies/x"') and MACHINE_PATH.search("--data /work/shared")
    assert not MACHINE_PATH.search("docs/results/work/x and https://example.org/root/ and outputs/root/")
