"""The notebooks of examples/notebooks/ run top to bottom in a real Jupyter kernel, offline, as a copy in a temporary
folder and with the smaller sizes of :data:`OVERRIDES`; a run fails when a cell raises, when the notebook writes into
the repository (its folder is the temporary one), or when a markdown cell cites a figure that is neither a setting
nor a dated measurement. The committed files keep the outputs of the real run their first cell names, and are
checked as committed: executed in order, no errors, no progress bars, small figures.

The rules are in tests/examples/run_notebook.py's docstring; that script also refreshes a notebook's outputs.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.requirements import require_module, require_smollm2

DEV = 'the dev extra: pip install -e ".[dev]"'
nbformat = require_module("nbformat", DEV)
for module in ("nbclient", "ipykernel"):  # what runs a notebook, and the kernel it runs in
    require_module(module, DEV)

from tests.examples.run_notebook import NOTEBOOKS, ROOT, execute, unbacked_figures, written  # noqa: E402

# Each notebook's sizes under test (its parameters cell holds the full ones): small enough for `make test`.
OVERRIDES = {
    "gdpo_in_a_notebook.ipynb": {"STEPS": 3, "PROMPTS": 2, "GENERATIONS": 4, "HELD_OUT": 4},
    "real_model_in_a_notebook.ipynb": {
        "PROBLEMS": 2,
        "STEPS": 1,
        "PROMPTS": 1,
        "GENERATIONS": 2,
        "MAX_TOKENS": 16,
        "SHOW": 2,
    },
}
SLOW = {"real_model_in_a_notebook.ipynb"}  # a 135M-parameter model: load, a LoRA step, generation
NEEDS_SMOLLM2 = {"real_model_in_a_notebook.ipynb"}  # the smollm2 extra and the GGUF file (make install has both)
# What GitHub shows must stay readable and the repository small.
MAX_NOTEBOOK_BYTES = 400_000
MAX_PNG_BYTES = 120_000


def committed() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def outputs_text(nb) -> str:
    """Everything the code cells printed or returned as text."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") + out.get("data", {}).get("text/plain", "") + out.get("evalue", ""))
    return "\n".join(parts)


def test_every_notebook_has_its_test_sizes():
    assert [p.name for p in committed()] == sorted(OVERRIDES), "add the new notebook's sizes to OVERRIDES"


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] * (n in SLOW)) for n in sorted(OVERRIDES)])
def test_the_notebook_runs_in_a_kernel_and_writes_only_in_its_folder(name, tmp_path):
    if name in NEEDS_SMOLLM2:
        require_smollm2()
    copy = tmp_path / name
    shutil.copy(NOTEBOOKS / name, copy)
    nb = execute(nbformat.read(copy, as_version=4), tmp_path, overrides=OVERRIDES[name], timeout=300, watch=True)
    assert written(nb) == []  # the kernel's own writes, seen by an audit hook (run_notebook.WATCH)
    assert (tmp_path / "outputs").is_dir()  # what it writes, beside it
    assert unbacked_figures(nb) == []
    text = outputs_text(nb)
    assert "it/s]" not in text  # a compact progress display, no bars
    assert "notebook ran in" in text  # the last cell ran


def test_a_cell_that_raises_fails_the_run(tmp_path):
    from nbclient.exceptions import CellExecutionError

    cells = ["x = 1", "raise ValueError('made to fail')", "print('never printed')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    with pytest.raises(CellExecutionError, match="made to fail"):
        execute(nb, tmp_path, timeout=60)


def test_a_write_into_the_repository_is_seen(tmp_path):
    """What the run test reads: a notebook that writes into the clone (its gitignored outputs/) and beside itself
    reports the first, not the second, nor a file it only reads."""
    target = ROOT / "outputs" / f"notebook-write-check-{os.getpid()}.txt"
    code = f"import pathlib\ntarget = pathlib.Path({str(target)!r})\ntarget.parent.mkdir(exist_ok=True)\n"
    code += "target.write_text('x')\nopen('beside.txt', 'w').write('y')\nopen(target).read()"
    try:
        nb = execute(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), tmp_path, watch=True)
    finally:
        target.unlink(missing_ok=True)
    seen = written(nb)  # the target (and outputs/ itself, where the run had to create it)
    assert str(target) in seen and set(seen) <= {str(target), str(target.parent)}
    assert (tmp_path / "beside.txt").exists()  # written beside the notebook: not reported


def test_overrides_replace_the_parameters_after_their_cell(tmp_path):
    cells = [nbformat.v4.new_code_cell("STEPS = 20", metadata={"tags": ["parameters"]})]
    cells.append(nbformat.v4.new_code_cell("print(STEPS * 2)"))
    nb = execute(nbformat.v4.new_notebook(cells=cells), tmp_path, overrides={"STEPS": 3}, timeout=60)
    assert nb.cells[2].outputs[0].text == "6\n"  # the injected cell sits between the two


def test_a_figure_in_markdown_is_a_setting_or_a_dated_measurement():
    marker = "<!-- measured 2026-11-27, a 2-core CPU: figures 64 s: python -m tests.examples.run_notebook x -->"
    cells = [
        nbformat.v4.new_code_cell("STEPS = 20\nlearning_rate = 3e-4"),
        nbformat.v4.new_markdown_cell("Each run trains 20 steps at a learning rate of 3e-4."),  # settings
        nbformat.v4.new_markdown_cell(f"It ran in 64 s. {marker}"),  # a measurement, named by its marker
        nbformat.v4.new_markdown_cell("Training took 70 s and format rose to 0.92."),  # results, cited in prose
    ]
    assert unbacked_figures(nbformat.v4.new_notebook(cells=cells)) == [
        'cell 3: "70 s" in "Training took 70 s and format rose to 0.92."',
        'cell 3: "0.92" in "Training took 70 s and format rose to 0.92."',
    ]


@pytest.mark.parametrize("path", committed(), ids=lambda p: p.name)
def test_the_committed_notebook_keeps_the_outputs_of_its_run(path):
    """Opened on GitHub, it shows the real run: every code cell executed once, in order, without an error or a
    progress bar; its figures are small PNGs; its first cell says what it needs and how long it took, measured."""
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert all(out.output_type != "error" for cell in code for out in cell.outputs)
    assert "it/s]" not in outputs_text(nb) and "notebook ran in" in outputs_text(nb)
    pngs = [out.data["image/png"] for cell in code for out in cell.outputs if "image/png" in out.get("data", {})]
    assert all(len(base64.b64decode(png)) < MAX_PNG_BYTES for png in pngs)
    first = nb.cells[0].source
    assert nb.cells[0].cell_type == "markdown" and "**Needs:**" in first
    assert "**Time:** " in first and "<!-- measured " in first and "TIME_PLACEHOLDER" not in first
    assert unbacked_figures(nb) == []
