"""Every comparison the seed studies' verdicts rest on, with Holm's correction across all of them.

One row per study, baseline and reward of the pre-registered rule (``total`` left out): GDPO's mean minus the
baseline's, Welch's two-sided p, the Holm-adjusted p over every row of the table, the 95% bootstrap CI and the
verdict the pre-registered rule draws from it (the CI alone). Read from the committed per-run rows
(``docs/results/<task>.json``) with the statistics of :mod:`gdpo_trl.results.stats`; the table of
docs/results/README.md ("Summary") is this command's output, which tests/docs/test_figures.py checks row by row.

    python -m studies.study_summary [--results docs/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gdpo_trl.results import stats

RESULTS = Path("docs") / "results"  # the per-run rows, from the repository's root

# (hypothesis, task, baselines), in the order of docs/results/README.md.
STUDIES = [
    ("H1", "toolcall", ["grpo", "grpo_no_std"]),
    ("H2", "gsm8k_style", ["grpo", "grpo_no_std"]),
    ("H3", "length", ["grpo", "grpo_no_std"]),
    ("H4", "scale6", ["grpo", "grpo_no_std"]),
    ("H5", "process", ["gdpo_outcome_only"]),
    ("H6", "agent", ["grpo", "grpo_no_std"]),
    ("H6b", "agent_midrange", ["grpo", "grpo_no_std"]),
    ("H6c", "agent_scale6", ["grpo", "grpo_no_std"]),
]
LABELS = {"grpo": "GRPO", "grpo_no_std": "GRPO w/o std", "gdpo_outcome_only": "GDPO outcome only"}


def comparisons(results: Path = RESULTS) -> list[tuple[str, stats.Comparison]]:
    found = []
    for hypothesis, task, baselines in STUDIES:
        rows = json.loads((results / f"{task}.json").read_text(encoding="utf-8"))
        rewards = sorted({r["reward"] for r in rows if r["reward"] != "total"})
        for baseline in baselines:
            for reward in rewards:
                found.append((hypothesis, stats.compare(rows, reward, "gdpo", baseline)))
    return found


def table(results: Path = RESULTS) -> str:
    found = comparisons(results)
    adjusted = stats.holm_adjusted([c.welch.p for _, c in found])
    lines = [
        "| study | GDPO − | reward | difference | Welch p | Holm p | 95% bootstrap CI | verdict (CI) | under Holm |",
        "|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for (hypothesis, c), p_holm in zip(found, adjusted, strict=True):
        holds = "-" if c.verdict == stats.LEVEL else ("holds" if p_holm < 0.05 else "does not hold")
        lines.append(
            f"| {hypothesis} | {LABELS[c.other]} | {c.reward} | {c.diff:+.3f} | {stats.format_p(c.welch.p)} | "
            f"{stats.format_p(p_holm)} | [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}] | {c.verdict} | {holds} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="the folder of <task>.json (default: %(default)s)"
    )
    print(table(parser.parse_args(argv).results))


if __name__ == "__main__":
    main()
