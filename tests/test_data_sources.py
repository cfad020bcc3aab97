"""The data-source registry: every name gives prompt/answer rows; options are parameters."""

import pytest

from gdpo_trl.data.gsm8k import SAMPLE_PATH, load_gsm8k
from gdpo_trl.data.sources import EVAL_SEED, GENERATED, SOURCES, load_source
from gdpo_trl.demo.synthetic import load_synthetic
from gdpo_trl.demo.warmstart import load_warmstart_dataset


def test_names():
    assert set(SOURCES) == {"gsm8k", "sample", "synthetic", "warmstart"}
    assert GENERATED == {"synthetic", "warmstart"}


def test_sample_and_local_path_are_the_shipped_file():
    sample = load_source("sample", size=4)
    assert sample.to_list() == load_gsm8k(str(SAMPLE_PATH), limit=4).to_list()
    assert load_source(str(SAMPLE_PATH), size=4).to_list() == sample.to_list()


def test_generated_sources_take_size_and_seed():
    assert load_source("synthetic", size=5, seed=3).to_list() == load_synthetic(5, 3).to_list()
    # No seed: 0 for training, EVAL_SEED for any other split.
    assert load_source("synthetic", size=5).to_list() == load_synthetic(5, 0).to_list()
    assert load_source("synthetic", size=5, split="test").to_list() == load_synthetic(5, EVAL_SEED).to_list()
    warm = load_source("warmstart", size=6, split="test")
    assert warm.to_list() == load_warmstart_dataset(6, EVAL_SEED, split="eval").to_list()
    assert set(warm.column_names) == {"prompt", "answer"}


@pytest.mark.parametrize(
    ("name", "kw", "message"),
    [
        ("sample", {"seed": 1}, "seed only applies to generated sources"),
        ("synthetic", {"size": 0}, "size must be >= 1"),
        ("missing/file.jsonl", {}, "not found"),
    ],
)
def test_bad_options(name, kw, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_source(name, **kw)


def test_the_core_does_not_import_the_demo():
    import subprocess
    import sys

    code = (
        "import sys, gdpo_trl.advantages, gdpo_trl.diagnostics, gdpo_trl.rewards, gdpo_trl.data, gdpo_trl.data.sources,"
        " gdpo_trl.eval\nprint(sorted(m for m in sys.modules if m.startswith('gdpo_trl.demo')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
