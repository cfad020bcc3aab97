"""Every Python block of the README marked ``<!-- runnable -->`` runs, offline, as written: with the Python that runs
the tests, in its own temporary folder, with this checkout first on PYTHONPATH, and does what the README says it does:
each block is followed by a probe of its own (:data:`PROBES`) that prints, as one JSON line, what the block left
behind. (Shell blocks are run by tests/docs/test_documented_runs.py.)
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- runnable -->"
BLOCK = re.compile(re.escape(MARKER) + r"\n```(python)\n(.*?)\n```", re.S)
# What each block must leave behind, printed after it runs: (a line of the block that picks it, the probe's code).
PROBES = [
    (  # the Python API block: 2 steps trained, each logging both rewards (TRL prints each step's logs too)
        "trainer.train()",
        "import json\n"
        "steps = [e for e in trainer.state.log_history if 'rewards/brevity/mean' in e]\n"
        "print('PROBE', json.dumps({'global_step': trainer.state.global_step, 'steps': len(steps),\n"
        "    'rewards': sorted(k for k in steps[0] if k.startswith('rewards/') and k.endswith('/mean')),\n"
        "    'weights': list(trainer.reward_weights.tolist())}))\n",
    ),
    (  # the subclass block: compute_advantages is GDPO's, clamped to [-3, 3] (one outlier in 16 is past 3)
        "class ClippedGDPO(GDPOTrainer):",
        "import json, types, torch\n"
        "rewards = torch.zeros(16, 2)\n"
        "rewards[0, 0] = 1.0  # one success in 16 rows: its advantage is 3.35 batch standard deviations out\n"
        "trainer = types.SimpleNamespace(reward_weights=torch.tensor([1.0, 1.0]))\n"
        "clipped = ClippedGDPO.compute_advantages(trainer, rewards, 4)\n"
        "plain = gdpo_advantages(rewards, trainer.reward_weights, 4)\n"
        "print('PROBE', json.dumps({'clipped': clipped.tolist(), 'plain': plain.tolist()}))\n",
    ),
]


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


def probe_for(code: str) -> str:
    """The probe of the block ``code`` (a runnable block without one fails: say what it must do)."""
    found = [probe for picks, probe in PROBES if picks in code]
    assert len(found) == 1, f"give this README block one probe in PROBES (it has {len(found)}):\n{code[:300]}"
    return found[0]


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
        [sys.executable, "-c", f"{code}\n{probe_for(code)}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"README.md line {line}:\n{result.stderr[-3000:]}"
    probes = [line for line in result.stdout.splitlines() if line.startswith("PROBE ")]
    assert len(probes) == 1, result.stdout[-3000:]
    seen = json.loads(probes[0].removeprefix("PROBE "))
    if "trainer.train()" in code:
        logged = seen.pop("steps")
        assert seen == {
            "global_step": 2,  # max_steps=2
            "rewards": ["rewards/brevity/mean", "rewards/mentions_answer/mean"],
            "weights": [0.5, 1.0],
        }, seen
        printed = [line for line in result.stdout.splitlines() if "'rewards/brevity/mean'" in line]
        assert logged >= 1 and len(printed) == logged, result.stdout[-3000:]  # what the user sees: the logged steps
    else:
        clipped, plain = seen["clipped"], seen["plain"]
        assert max(plain) == pytest.approx(15 / 20**0.5, rel=1e-3)  # 1.5 / std(1.5, -0.5 x 3, 0 x 12): past the clamp
        assert clipped == [max(-3.0, min(3.0, value)) for value in plain], seen
