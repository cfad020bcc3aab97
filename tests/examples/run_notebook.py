"""Run a notebook of examples/notebooks/ in a real Jupyter kernel (nbclient + ipykernel, this Python), as the tests
do, or in place to refresh its committed outputs:

    python -m tests.examples.run_notebook examples/notebooks/gdpo_in_a_notebook.ipynb

In place, the notebook runs with its own sizes in its own folder (it writes only there, under ``outputs/``), offline;
its outputs are saved into the file and its first cell's ``**Time:**`` line is rewritten with the wall time measured
(kernel start to the last cell), the machine, its load, and the dated marker the figure rules read. The tests
(test_notebooks.py) run a copy in a temporary folder, with smaller sizes, and never write the committed file; an
audit hook in the kernel (:data:`WATCH`) reports every file the run writes into the repository.

The rules both keep (test_notebooks.py checks them):

- **Sizes.** Every size is in the code cell tagged ``parameters``; a run with other sizes inserts a cell after it
  that sets them (:func:`execute`'s ``overrides``), so the notebook's text never depends on them.
- **Figures in markdown cells.** Results are read in the outputs, which the run wrote; a markdown cell cites no
  result. Every figure in one (a number with a decimal point, a percentage, or a count with a unit, as the docs'
  figure rules find them: tests/helpers/doc_figures.py) is either a setting that appears in a code cell's source, or
  a measurement named by a ``<!-- measured YYYY-MM-DD, <machine>: figures ...: <command> -->`` marker in its
  paragraph (the run time, stamped by this script).
"""

from __future__ import annotations

import ast
import datetime
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from tests.helpers.doc_figures import figures_in, matches, numbers

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "examples" / "notebooks"
KERNEL = "gdpo-trl-python"  # a kernel spec of this Python, written for the run: no other installed kernel is used
# Offline, and no byte-code written into the repository by the kernel's imports.
ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def kernel_path(folder: Path) -> str:
    """Write a kernel spec that starts this Python's ipykernel under ``folder`` and return the ``JUPYTER_PATH`` that
    finds it (jupyter_client takes the first spec of a name along that path)."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))
    return os.pathsep.join([str(folder), *filter(None, [os.environ.get("JUPYTER_PATH")])])


def parameters_index(nb) -> int:
    """The index of the code cell tagged ``parameters``."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            return index
    raise ValueError("no code cell is tagged 'parameters': tag the cell that holds the notebook's sizes")


def with_overrides(nb, overrides: dict):
    """A copy of ``nb`` with a cell after its parameters cell that sets ``overrides`` (papermill's convention)."""
    nb = nbformat.from_dict(nb)
    source = "# Set by the test: smaller sizes\n" + "".join(
        f"{name} = {value!r}\n" for name, value in overrides.items()
    )
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(parameters_index(nb) + 1, cell)
    return nb


# Run first in the kernel by execute(watch=True): an audit hook (PEP 578) that records every file this kernel opens
# for writing, creates, renames or removes inside the repository and outside its own working folder. It sees the
# kernel's own writes only, so edits others make to the clone meanwhile never count (child processes are not seen).
WATCH = """\
import os as _os, sys as _sys
_WRITES, _HERE = [], _os.path.realpath(_os.getcwd()) + _os.sep
_CHANGES = ("os.mkdir", "os.rename", "os.replace", "os.remove", "os.rmdir", "os.symlink", "os.link", "os.truncate")
def _watch(event, args):
    if event == "open":
        path, mode, flags = args
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & (_os.O_WRONLY | _os.O_RDWR))
    elif event in _CHANGES or event == "shutil.rmtree":
        path, writing = args[0], True
    else:
        return
    if writing and isinstance(path, (str, bytes, _os.PathLike)):
        full = _os.path.realpath(_os.fsdecode(path))
        if full.startswith({root!r}) and not full.startswith(_HERE) and "__pycache__" not in full:
            _WRITES.append(full)
_sys.addaudithook(_watch)
"""
REPORT = "print('written into the repository:', sorted(set(_WRITES)))"


def written(nb) -> list[str]:
    """What the watched run wrote into the repository, as its last cell printed it."""
    text = nb.cells[-1].outputs[0].text
    return ast.literal_eval(text.split("written into the repository:", 1)[1].strip())


def execute(nb, cwd: Path, *, overrides: dict | None = None, timeout: int = 600, watch: bool = False):
    """Run every cell of ``nb`` (a copy, with ``overrides``) in a fresh kernel started in ``cwd``; return the executed
    copy. A cell that raises stops the run with nbclient's ``CellExecutionError`` naming it. With ``watch`` the copy
    begins with :data:`WATCH` and ends with :data:`REPORT`: :func:`written` reads what it wrote into the repository."""
    from nbclient import NotebookClient

    nb = with_overrides(nb, overrides) if overrides else nbformat.from_dict(nb)
    if watch:
        nb.cells.insert(0, nbformat.v4.new_code_cell(WATCH.format(root=str(ROOT.resolve()) + os.sep)))
        nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    saved = {name: os.environ.get(name) for name in [*ENV, "JUPYTER_PATH"]}
    with tempfile.TemporaryDirectory(prefix="gdpo-kernel-") as specs:
        os.environ.update(ENV, JUPYTER_PATH=kernel_path(Path(specs)))
        try:
            client = NotebookClient(
                nb, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": str(cwd)}}
            )
            client.execute()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return nb


def unbacked_figures(nb) -> list[str]:
    """The figures of ``nb``'s markdown cells that are neither a setting in a code cell's source nor named by a
    measured marker of their paragraph, as ``cell N: "<figure>" in "<line>"``."""
    code = [n for cell in nb.cells if cell.cell_type == "code" for n in numbers(cell.source)]
    bad = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        for figure in figures_in(cell.source, f"cell {index}"):
            if any((command, figure.text) in figure.named for command in figure.commands):
                continue  # a measurement, dated, with the command that repeats it
            if matches(figure, code):
                continue  # a setting: the code says it
            bad.append(f'cell {index}: "{figure.text}" in "{lines[figure.line - 1].strip()}"')
    return bad


def machine() -> tuple[str, int]:
    """The CPU's model name and core count, as the docs' measured markers name a machine."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = re.sub(r"\s+", " ", line.split(":", 1)[1]).strip()
                break
    except OSError:
        pass
    return name.replace(":", ""), os.cpu_count() or 1


def stamp_time(nb, seconds: float, load: float, command: str) -> None:
    """Rewrite the first cell's ``**Time:**`` line with this run's measurement and its marker."""
    day = datetime.date.today().isoformat()
    cpu, cores = machine()
    figures = f"{seconds:.0f} s", f"{load:.1f}"
    line = (
        f"**Time:** {figures[0]} from kernel start to the last cell ({day}: {cpu}, {cores} cores, load average "
        f"{figures[1]}). <!-- measured {day}, {cpu}, {cores} cores: figures {', '.join(figures)}: {command} -->"
    )
    first = nb.cells[0]
    if not re.search(r"^\*\*Time:\*\*.*$", first.source, re.M):
        raise ValueError("the first cell has no '**Time:**' line to stamp")
    first.source = re.sub(r"^\*\*Time:\*\*.*$", lambda _: line, first.source, count=1, flags=re.M)


def main(argv: list[str] | None = None) -> None:
    paths = [Path(p).resolve() for p in (sys.argv[1:] if argv is None else argv)]
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        executed = execute(nb, path.parent, timeout=1800)
        seconds = time.perf_counter() - start
        stamp_time(
            executed, seconds, os.getloadavg()[0], f"python -m tests.examples.run_notebook {path.relative_to(ROOT)}"
        )
        nbformat.write(executed, path)
        print(f"{path.relative_to(ROOT)}: {seconds:.0f} s, outputs saved")


if __name__ == "__main__":
    main()
