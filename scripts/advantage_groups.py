"""Count distinct advantage groups under GRPO, GRPO without std, and GDPO (like Figure 3 of arXiv 2601.05242).

Two sweeps with binary rewards: the number of completions G = 2..max with K = 2 rewards, and the number of rewards
K = 1..max with G = 4 completions. Writes a Markdown table (also printed) and a two-panel PNG, by default under
outputs/ (the README's figure is docs/images/advantage_groups.png).

    python scripts/advantage_groups.py --max-generations 8 --max-rewards 4 --out outputs/advantage_groups.png
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: only ever writes a file
import matplotlib.pyplot as plt
from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter

from gdpo_trl.results.analysis import METHODS, advantage_group_count

LABELS = {"grpo": "GRPO", "grpo_no_std": "GRPO w/o std", "gdpo": "GDPO"}
FIXED_REWARDS = 2  # K in the sweep over completions
FIXED_GENERATIONS = 4  # G in the sweep over rewards


def sweep(cells: list[tuple[int, int]]) -> dict[str, list]:
    """Count patterns for every (K, G) cell and method, printing progress as it goes."""
    results = {method: [] for method in METHODS}
    for num_rewards, num_generations in cells:
        for method in METHODS:
            start = time.perf_counter()
            result = advantage_group_count(num_rewards, num_generations, method)
            results[method].append(result)
            kind = "exact" if result.exact else "LOWER BOUND"
            print(
                f"  K={num_rewards} G={num_generations} {method:<12} {result.count:>8} ({kind}, "
                f"{time.perf_counter() - start:.2f}s)",
                file=sys.stderr,
            )
    return results


def markdown_table(title: str, axis_name: str, axis_values: list[int], results: dict[str, list]) -> str:
    """One row per axis value, one column per method; non-exact counts are marked with '≥'."""
    lines = [f"### {title}", "", f"| {axis_name} | " + " | ".join(LABELS[m] for m in METHODS) + " |"]
    lines.append("|---:|" + "---:|" * len(METHODS))
    for i, value in enumerate(axis_values):
        cells = [("" if results[m][i].exact else "≥ ") + str(results[m][i].count) for m in METHODS]
        lines.append(f"| {value} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_panel(ax, xs: list[int], results: dict[str, list], xlabel: str, title: str) -> None:
    markers = {"grpo": "o", "grpo_no_std": "s", "gdpo": "^"}
    counts = [r.count for method in METHODS for r in results[method]]
    for method in METHODS:
        ys = [r.count for r in results[method]]
        ax.plot(xs, ys, marker=markers[method], label=LABELS[method])
        # Hollow markers flag sampled lower bounds, so an approximate point never passes for an exact one.
        inexact = [(x, r.count) for x, r in zip(xs, results[method], strict=True) if not r.exact]
        if inexact:
            ax.scatter(*zip(*inexact, strict=True), s=80, facecolors="none", edgecolors="black", zorder=3)
    if max(counts) >= 10 * max(1, min(counts)):
        ax.set_yscale("log")
        # Plain numbers at 1, 2, 5 x 10^n read better than matplotlib's default "6 x 10^1" minor labels.
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(xs)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Distinct advantage groups")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-generations", type=int, default=8, help="largest number of completions G (K = 2)")
    parser.add_argument("--max-rewards", type=int, default=4, help="largest number of rewards K (G = 4)")
    parser.add_argument("--out", default="outputs/advantage_groups.png", help="PNG to write")
    parser.add_argument("--table", default="outputs/advantage_groups.md", help="Markdown table to write")
    args = parser.parse_args()
    if args.max_generations < 2 or args.max_rewards < 1:
        parser.error("--max-generations must be >= 2 and --max-rewards >= 1")

    generations = list(range(2, args.max_generations + 1))
    rewards = list(range(1, args.max_rewards + 1))
    print(f"Sweep over completions (K = {FIXED_REWARDS}):", file=sys.stderr)
    by_generations = sweep([(FIXED_REWARDS, g) for g in generations])
    print(f"Sweep over rewards (G = {FIXED_GENERATIONS}):", file=sys.stderr)
    by_rewards = sweep([(k, FIXED_GENERATIONS) for k in rewards])

    any_inexact = any(not r.exact for res in (by_generations, by_rewards) for rs in res.values() for r in rs)
    table = "\n\n".join(
        [
            "Distinct advantage groups for binary (0/1) rewards: sorted advantage vectors, rounded to 6 decimals, "
            "no epsilon, GDPO before batch normalization.",
            markdown_table(f"Number of completions G (K = {FIXED_REWARDS} rewards)", "G", generations, by_generations),
            markdown_table(f"Number of rewards K (G = {FIXED_GENERATIONS} completions)", "K", rewards, by_rewards),
        ]
    )
    table += (
        "\n\n'≥' marks a lower bound from random sampling (exhaustive enumeration was too large).\n"
        if any_inexact
        else "\n\nAll counts are exact (exhaustive enumeration).\n"
    )
    print(table)
    for path in (args.table, args.out):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(args.table).write_text(table, encoding="utf-8")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    plot_panel(left, generations, by_generations, "Number of completions G", f"K = {FIXED_REWARDS} binary rewards")
    plot_panel(right, rewards, by_rewards, "Number of rewards K", f"G = {FIXED_GENERATIONS} completions")
    suptitle = "Distinct advantage groups: GDPO keeps more reward information than GRPO"
    if any_inexact:
        suptitle += "\n(hollow circles: sampled lower bounds)"
    fig.suptitle(suptitle)
    fig.tight_layout()
    fig.savefig(args.out, dpi=150)
    print(f"Wrote {args.table} and {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
