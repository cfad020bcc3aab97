"""Where the gaming watch fires on the committed runs: docs/results/gaming_watch.{md,json}.

The rule and its defaults (docs/gaming.md, gdpo_trl/core/gaming.py) were committed in ``RULE_COMMIT`` before this
table was first written; the table applies them unchanged (``gdpo gaming``'s code, :func:`gdpo_trl.results.gaming.judge`)
to every training run of the studies named in ``SOURCES`` whose per-step logs are committed, and to the strict
recipe's one run where its training state is committed. It reports what the rule gives, whatever it gives::

    python studies/gaming_validation.py            # writes docs/results/gaming_watch.md and .json
    python studies/gaming_validation.py --check    # exit 1 if the committed files differ from a fresh write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
RULE_COMMIT = "46c4e76"  # docs/gaming.md: the rule and its defaults, fixed before any committed run was judged
# (study, what it trained, the committed log of its runs, relative to the repository root)
SOURCES = [
    ("H2", "GSM8K-style toy task, tiny model", "docs/results/logs/gsm8k_style.json.gz"),
    ("H4", "correctness on a 0..6 scale, tiny model", "docs/results/logs/scale6.json.gz"),
    ("H7", "GD2PO on the GSM8K-style toy task", "docs/results/logs/gd2po_gsm8k_style.json.gz"),
    ("H7", "GD2PO on the tool-calling toy task", "docs/results/logs/gd2po_toolcall.json.gz"),
    ("H8", "SmolLM2-135M on GSM8K", "docs/results/logs/smollm2_gdpo_grpo.json.gz"),
    ("H9", "Qwen2.5-Coder-0.5B-Instruct on GSM8K", "docs/results/logs/qwen_gdpo_grpo.json.gz"),
    ("strict", "the strict recipe's one run (not a study)", "docs/results/qwen_strict/gdpo-strict-seed0"),
]


def _short(name: str) -> str:
    return name.removesuffix("_reward")


def rows() -> list[dict]:
    """One row per run: its study, name, steps judged, the steps where the rule fires, and the first firing's why."""
    from gdpo_trl.results.gaming import judge

    found = []
    for study, what, source in SOURCES:
        if not (ROOT / source).exists():
            continue
        for verdict in judge([ROOT / source]):
            first = next((check for check in verdict.checks if check.fired), None)
            found.append(
                {
                    "study": study,
                    "what": what,
                    "source": source,
                    "run": verdict.name,
                    "judged": verdict.judged,
                    "fired": verdict.fired,
                    "first": None
                    if first is None
                    else {
                        "step": first.step,
                        "risen": [_short(name) for name in first.risen],
                        "hardest": _short(first.hardest),
                        **{key: round(value, 4) for key, value in first.metrics().items()},
                    },
                }
            )
    return found


def table(found: list[dict]) -> str:
    from gdpo_trl.core.gaming import GamingRule

    rule = GamingRule()
    lines = [
        "# Where the gaming watch fires on the committed runs",
        "",
        f"Written by `python studies/gaming_validation.py` from the committed logs. The rule (docs/gaming.md: window "
        f"{rule.window}, rise {rule.rise}, hard_rise {rule.hard_rise}, hard_ceiling {rule.hard_ceiling}, "
        f"length_drop {rule.length_drop}) was committed in {RULE_COMMIT}, before this table was first written, and "
        "is applied here unchanged.",
        "",
        "## By study",
        "",
        "| study | trained | runs | runs where it fires | steps judged | steps where it fires |",
        "|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in found:
        groups.setdefault((row["study"], row["what"]), []).append(row)
    for (study, what), runs in groups.items():
        fired = sum(1 for r in runs if r["fired"])
        judged = sum(r["judged"] for r in runs)
        steps = sum(len(r["fired"]) for r in runs)
        lines.append(f"| {study} | {what} | {len(runs)} | {fired} | {judged} | {steps} |")
    lines += [
        "",
        "## By run",
        "",
        "| study | run | steps judged | fires at step | first firing: rose | hardest | length change |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in found:
        first = row["first"]
        steps = ", ".join(map(str, row["fired"])) or "never"
        rose = ", ".join(first["risen"]) if first else ""
        hardest = first["hardest"] if first else ""
        change = f"{first['gaming/length_change']:+.2f}" if first else ""
        lines.append(f"| {row['study']} | {row['run']} | {row['judged']} | {steps} | {rose} | {hardest} | {change} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder to write into (default: docs/results)")
    args = parser.parse_args(argv)
    found = rows()
    texts = {"gaming_watch.md": table(found), "gaming_watch.json": json.dumps(found, indent=1) + "\n"}
    if args.check:
        stale = [name for name, text in texts.items() if (RESULTS / name).read_text(encoding="utf-8") != text]
        print("up to date" if not stale else f"differ: {', '.join(stale)}")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
