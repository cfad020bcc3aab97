"""Plots of training runs read by :mod:`gdpo_trl.results.runs`: one panel per reward, one line per run (``gdpo plot``)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from gdpo_trl.results.runs import TOTAL_REWARD, Run, reward_key, reward_names, smooth


def plot_panels(runs: list[Run]) -> list[tuple[str, str]]:
    """(log key, panel title) for each panel to draw, leaving out metrics no run has (e.g. kl when beta = 0)."""
    candidates = [(reward_key(name), name) for name in reward_names(runs)] + [
        (TOTAL_REWARD, "total reward"),
        ("completions/mean_length", "mean completion length"),
        ("kl", "KL"),
    ]
    return [(key, title) for key, title in candidates if any(run.history.get(key) for run in runs)]


def grid_shape(n_panels: int, max_cols: int = 3) -> tuple[int, int]:
    """(rows, columns) for ``n_panels``: at most ``max_cols`` wide so panels stay legible.

    Among widths from 2 (1 for a single panel) to ``max_cols``, the one leaving the fewest empty cells wins, the
    widest on a tie: 4 panels make a 2x2 grid rather than 2x3 with two blanks, 5 make 2x3.
    """
    widths = range(min(n_panels, 2), min(n_panels, max_cols) + 1)
    cols = max(widths, key=lambda width: (-(-n_panels % width), width))  # -n % width = empty cells in the last row
    return math.ceil(n_panels / cols), cols


def plot_runs(runs: list[Run], out_png: str | os.PathLike, *, window: int = 1, title: str | None = None) -> Path:
    """Write one PNG with a panel per reward, plus total reward, completion length and KL (each only where a run logged
    it: no KL panel for runs with ``beta: 0``); one line per run.

    Values are smoothed with :func:`smooth` (``window`` logged points). Each run keeps the same colour in every
    panel and a single legend below the grid names them, so it never covers data.
    """
    panels = plot_panels(runs)
    if not panels:
        raise ValueError("none of the runs has reward, completion length or KL data to plot")
    # Build the figure without pyplot: no global figure state to leak and no GUI backend needed on a headless
    # server, and (unlike matplotlib.use("Agg")) it leaves the caller's backend, e.g. a notebook's, untouched.
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    rows, cols = grid_shape(len(panels))
    fig = Figure(figsize=(4.8 * cols, 3.4 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    # Colours by position, not name, so runs that share a name still get distinct colours.
    colors = [f"C{i % 10}" for i in range(len(runs))]
    for ax, (key, panel_title) in zip(axes, panels, strict=False):  # the grid may have spare cells
        for run, color in zip(runs, colors, strict=True):
            series = run.history.get(key)
            if series:
                steps, values = zip(*series, strict=True)
                ax.plot(steps, smooth(list(values), window), color=color, linewidth=1.5)
        ax.set_title(panel_title)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole: no 0.5-step ticks on short runs
        ax.grid(True, alpha=0.3)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    # Proxy handles so a run appears in the legend even if it is missing from some panels.
    handles = [Line2D([], [], color=color, linewidth=1.5) for color in colors]
    fig.legend(handles, [run.name for run in runs], loc="outside lower center", ncols=min(len(runs), 4))
    # Say when curves are smoothed, so nobody reads a moving average as raw per-step values.
    note = f"moving average over {window} logged points" if window > 1 else ""
    if title or note:
        fig.suptitle(" - ".join(part for part in (title, note) if part))
    out = png_path(out_png)
    from gdpo_trl.storage.safe_write import whole_file

    with whole_file(out, "gdpo plot") as partial:  # whole or not at all; a write error named in one line
        fig.savefig(partial, dpi=120, format=out.suffix.lstrip(".").lower() or "png")  # the suffix names the format
    return out


def png_path(out: str | os.PathLike) -> Path:
    """Where a figure asked for at ``out`` is written: a folder gets ``runs.png`` inside it, a name without a suffix
    gets ``.png`` (matplotlib would add it without saying so), any other name is kept."""
    out = Path(out)
    if out.is_dir():
        return out / "runs.png"
    return out if out.suffix else out.with_name(out.name + ".png")
