"""The GSM8K rewards on real text: our rules against the reference code's (``semantics="reference"``, the NVlabs
rules) on every completion of the committed real-model evaluations (docs/results/real_model/eval_*/ and the
prompt probes, probe_*/).

For each reward it counts the completions where the two rules disagree, and lists them (our score, the reference's,
the completion's tail); it also counts the completions neither rule can read (no answer block either rule extracts).
Writes docs/results/real_model/rewards_reference.json with ``--write``; tests/studies/test_real_model.py recomputes it.

    python -m studies.real_model_rewards [--write]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gdpo_trl.rewards.gsm8k import (
    correctness_reward,
    extract_answer,
    format_reward,
    integer_reward,
    reference_answer,
)
from studies.smollm2_study import read_completions

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "docs" / "results" / "real_model"
REWARDS = {"format": format_reward, "correctness": correctness_reward, "integer": integer_reward}


def compare(rows: list[dict]) -> dict:
    """Per reward, the completions whose scores differ between the two rules; and the unreadable ones."""
    texts = [text for row in rows for text in row["completions"]]
    answers = [row["answer"] for row in rows for _ in row["completions"]]
    completions = [[{"role": "assistant", "content": text}] for text in texts]
    found = {"completions": len(texts), "differences": {}, "unreadable": 0}
    for name, reward in REWARDS.items():
        ours = reward(completions, answer=answers)
        theirs = reward(completions, answer=answers, semantics="reference")
        found["differences"][name] = [
            {"completion": i, "ours": a, "reference": b, "tail": texts[i][-80:]}
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            if a != b
        ]
    # The reference reads an answer after the last <answer> even without the tag (the whole text then): count as
    # unreadable what has no <answer> tag at all and no answer block of ours.
    found["unreadable"] = sum(extract_answer(t) is None and "<answer>" not in t for t in texts)
    found["reference_answer_empty"] = sum(not reference_answer(t) for t in texts)
    return found


def report() -> dict:
    folders = sorted([*RESULTS.glob("eval_*"), *RESULTS.glob("probe_*")])
    return {folder.name: compare(read_completions(folder)) for folder in folders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/results/real_model/rewards_reference.json")
    args = parser.parse_args()
    found = report()
    for name, result in found.items():
        counts = ", ".join(f"{reward} {len(diffs)}" for reward, diffs in result["differences"].items())
        print(f"{name}: {result['completions']} completions; differences: {counts}; unreadable {result['unreadable']}")
    if args.write:
        (RESULTS / "rewards_reference.json").write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
