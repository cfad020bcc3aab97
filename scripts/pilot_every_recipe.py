"""``gdpo pilot`` on every shipped CPU recipe, one after another: each recipe's verdict line and wall time.

    python scripts/pilot_every_recipe.py [--prompts 2] [--skip qwen_gdpo qwen_grpo]

cpu/your_task runs in a scratch folder holding examples/your_task's files (its rewards and prompts are read from the
current folder). Each pilot writes into a scratch folder; the summary goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=[])
    args = parser.parse_args(argv)
    gdpo = str(Path(sys.executable).with_name("gdpo"))
    failed = 0
    recipes = sorted(p.parent.name for p in (ROOT / "recipes" / "cpu").glob("*/config.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        for file in (ROOT / "examples" / "your_task").iterdir():
            shutil.copy(file, tmp)
        for name in recipes:
            if name in args.skip:
                print(f"cpu/{name}: skipped", flush=True)
                continue
            command = [gdpo, "pilot", "--config", f"cpu/{name}", "--prompts", str(args.prompts),
                       "--pilot_dir", str(Path(tmp) / f"pilot-{name}")]  # fmt: skip
            start = time.perf_counter()
            done = subprocess.run(
                command, cwd=tmp, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
            )
            seconds = time.perf_counter() - start
            lines = (done.stdout + done.stderr).splitlines()
            verdict = next((line for line in lines if line.startswith("Verdict:")), lines[-1] if lines else "")
            print(f"cpu/{name}: exit {done.returncode}, {seconds:.0f} s: {verdict}", flush=True)
            failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
