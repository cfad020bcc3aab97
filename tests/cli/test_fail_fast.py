"""Fail fast: an argument or recipe-file error is reported before torch and TRL are imported (they take
seconds). Each case runs in a fresh interpreter, which then lists the heavy modules it had loaded when the error came.
The time itself is measured by scripts/benchmark_first_error.py, not here."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "trl", "transformers", "accelerate", "datasets")
PROBE = """
import sys
from gdpo_trl.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    print("exit", stop.code, "loaded", [m for m in {heavy!r} if m in sys.modules])
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--config", "missing.yaml"],
        ["train", "--config", "twice.yaml"],
        ["train", "--config", "binary.yaml"],
        ["train", "--config"],
        ["train", "twice.yaml"],
        ["compare", "--config", "missing.yaml"],
        ["compare", "--steps", "0"],
        ["plot", "no-such-run"],
        ["eval", "--model", "builtin:tiny", "--n"],
    ],
    ids=[
        "missing",
        "key_twice",
        "binary",
        "config_without_value",
        "bare_path",
        "compare_missing",
        "compare_steps_0",
        "plot",
        "eval",
    ],
)
def test_input_errors_come_before_torch_and_trl(tmp_path, argv):
    (tmp_path / "twice.yaml").write_text("seed: 1\nseed: 2\n")
    (tmp_path / "binary.yaml").write_bytes(b"\x00\x01seed: 1\n")
    probe = PROBE.format(heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "exit 2 loaded []", result.stdout + result.stderr[-2000:]
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr, result.stderr
