"""The locally built models: tokenizer round trip, caching, and building under torch.distributed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.models.tiny import build_tokenizer

ROOT = Path(__file__).resolve().parents[2]


def test_tags_are_single_tokens_and_text_round_trips():
    tokenizer = build_tokenizer()
    text = "<think>3 * 4 = 12\n</think>\n<answer>12</answer>"
    ids = tokenizer(text)["input_ids"]
    assert len(ids) == len(text) - sum(len(t) - 1 for t in ("<think>", "</think>", "<answer>", "</answer>"))
    assert tokenizer.decode(ids) == text


def test_unknown_builtin_lists_the_choices():

    with pytest.raises(ValueError, match="builtin:tiny"):
        resolve_model("builtin:huge")
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.slow
def test_two_ranks_building_at_once_both_get_a_complete_model(tmp_path):
    """Under torch.distributed only rank 0's save_pretrained writes weights; the build must not depend on which rank
    gets there first."""
    script = (
        "import os, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "from gdpo_trl.core.plugins import resolve_model\n"
        "path = resolve_model('builtin:tiny@7')\n"
        "assert {'config.json', 'model.safetensors', 'tokenizer.json'} <= set(os.listdir(path)), os.listdir(path)\n"
    )
    (tmp_path / "build.py").write_text(script)
    env = {**os.environ, "GDPO_TRL_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29613"]
    result = subprocess.run([*command, str(tmp_path / "build.py")], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
