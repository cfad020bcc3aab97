"""Check a built wheel as a publisher would before an upload: what PyPI shows must be there and right.

    python scripts/check_wheel_metadata.py dist/gdpo_trl-0.1.0-py3-none-any.whl

Reads the wheel's METADATA and file list (no install) and exits 1 naming every problem: license expression and
license file, README as the long description (Markdown), classifiers, keywords, project URLs, the ``gdpo`` console
script, the data the commands reach by name (every recipe, every accelerate config), and that it holds nothing of the
repository's ``studies/`` (the studies' runners and analyses stay out of the library).
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def problems(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(name for name in names if name.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
        meta = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    found = []
    expect = {
        "Name": "gdpo-trl",
        "License-Expression": "Apache-2.0",
        "Description-Content-Type": "text/markdown",
    }
    found += [
        f"{key}: {meta.get(key)!r}, expected {value!r}" for key, value in expect.items() if meta.get(key) != value
    ]
    if f"{info}/licenses/LICENSE" not in names or meta.get_all("License-File") != ["LICENSE"]:
        found.append("the LICENSE file is not in the wheel (License-File)")
    if "GDPO" not in (meta.get_payload() or "") or "Quick start" not in meta.get_payload():
        found.append("the long description is not README.md")
    classifiers = meta.get_all("Classifier") or []
    for needed in (
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ):
        if needed not in classifiers:
            found.append(f"classifier missing: {needed}")
    if not {"gdpo", "trl"} <= set((meta.get("Keywords") or "").split(",")):
        found.append(f"keywords lack gdpo and trl: {meta.get('Keywords')!r}")
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or [])
    if "https://arxiv.org/abs/2601.05242" not in urls.values():
        found.append(f"no Project-URL for the paper: {urls}")
    if "gdpo = gdpo_trl.cli.main:main" not in entry_points:
        found.append("no `gdpo` console script")
    for folder in ("recipes", "accelerate_configs"):
        shipped = {n.removeprefix(f"gdpo_trl/{folder}/") for n in names if n.startswith(f"gdpo_trl/{folder}/")}
        repo = {p.relative_to(ROOT / folder).as_posix() for p in (ROOT / folder).rglob("*.yaml")}
        if not repo or not repo <= shipped:
            found.append(f"{folder}: not in the wheel: {sorted(repo - shipped) or 'the folder is empty'}")
    found += [f"a study module is in the wheel: {name}" for name in sorted(names & study_files())]
    return found


def study_files() -> set[str]:
    """Where the repository's ``studies/`` modules would lie in a wheel: at the top (``studies/x.py``) or moved back
    into the package (``gdpo_trl/results/x.py``, where they lived before)."""
    modules = [p.name for p in (ROOT / "studies").glob("*.py") if p.name != "__init__.py"]
    return {"studies/__init__.py"} | {
        f"{where}/{name}" for name in modules for where in ("studies", "gdpo_trl/results")
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="the .whl file to check")
    wheel = parser.parse_args().wheel
    found = problems(wheel)
    for problem in found:
        print(f"{wheel.name}: {problem}", file=sys.stderr)
    print(f"{wheel.name}: metadata {'has ' + str(len(found)) + ' problems' if found else 'ok'}")
    sys.exit(1 if found else 0)
