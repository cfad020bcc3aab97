"""Sources of printed output the docs quote whole (tests/helpers/figure_table.py's ``LINE_SOURCES``): each returns
the lines a command printed, rebuilt from its committed log by the code that printed them, and a figure on such a
line passes only when the docs' line is one of them, character for character. A figure checked alone against every
number of a run would pass an edit to a neighbour's value: the demo's last step printed format 0.91 and its last-5
mean 0.919, so "0.92" would pass."""

from __future__ import annotations

import json

from tests.helpers.studies import LOGS


def demo_printout(tmp) -> list[str]:
    """What `make demo` printed at its end (the README's quick start): the last step's line, then the summary of
    `gdpo train` (rewards' and conflict shares' first and last means), from the shipped warm start's committed run
    (docs/results/logs/reproducibility/demo_shipped_warmstart.json)."""
    from gdpo_trl.cli.console import compact_line
    from gdpo_trl.results.runs import conflict_ends, format_ends, reward_ends

    run = json.loads((LOGS / "reproducibility" / "demo_shipped_warmstart.json").read_text())
    history = run["log_history"]
    steps = [e for e in history if "loss" in e]
    names = ["format_reward", "correctness_reward", "integer_reward"]  # recipes/cpu/gdpo's reward_funcs, in order
    last = steps[-1]
    # The log stores keys sorted; the step line printed the rewards in the recipe's order, the rest as logged.
    ordered = {f"rewards/{n}/mean": last[f"rewards/{n}/mean"] for n in names}
    ordered.update({k: v for k, v in last.items() if k not in ordered})
    rows, window = reward_ends(history, names)
    rows += conflict_ends(history, window)
    printed = [
        compact_line(ordered, last["step"], len(steps)),
        f"Training finished after {last['step']} steps on 1 process.",
        *format_ends(rows, window).splitlines(),
    ]
    return [line.strip() for line in printed]
